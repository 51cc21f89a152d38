//! Error rendering: `file:line:col: error: message` and a caret line.

use elvis_scenario::Loc;

/// Widest part of a source line shown under an error, in characters.
const MAX_SHOWN: usize = 120;

/// Renders an error located in `source` like rustc does. Long quoted
/// values in the message are shortened, and a long source line is shown
/// as a window around the column.
pub fn located(file: &str, source: &str, loc: Loc, message: &str, hint: Option<&str>) -> String {
    let message = elvis_ndl::shorten_message(message);
    let message: &str = &message;
    let hint = hint.map(elvis_ndl::shorten_message);
    let hint = hint.as_deref();
    let mut out = String::new();
    if !loc.is_known() {
        out.push_str(&format!("{file}: error: {message}"));
        if let Some(h) = hint {
            out.push_str(&format!(" (hint: {h})"));
        }
        out.push('\n');
        return out;
    }
    out.push_str(&format!(
        "{file}:{}:{}: error: {message}",
        loc.line, loc.col
    ));
    if let Some(h) = hint {
        out.push_str(&format!(" (hint: {h})"));
    }
    out.push('\n');
    if let Some(line) = source.lines().nth(loc.line as usize - 1) {
        let gutter = loc.line.to_string().len();
        // A line that fits is shown whole; a longer one as a window
        // around the column.
        let skip = if line.chars().nth(MAX_SHOWN).is_none() {
            0
        } else {
            (loc.col.saturating_sub(1) as usize).saturating_sub(MAX_SHOWN / 2)
        };
        let shown: String = line.chars().skip(skip).take(MAX_SHOWN).collect();
        let text = shown.replace('\t', "    ");
        let col = line
            .chars()
            .skip(skip)
            .take((loc.col.saturating_sub(1) as usize).saturating_sub(skip))
            .map(|c| if c == '\t' { 4 } else { 1 })
            .sum::<usize>();
        let width = (loc.len as usize)
            .max(1)
            .min(text.len().saturating_sub(col).max(1));
        out.push_str(&format!(
            "{:gutter$} |\n{} | {text}\n{:gutter$} | {}{}\n",
            "",
            loc.line,
            "",
            " ".repeat(col),
            "^".repeat(width)
        ));
    }
    out
}

/// Renders an NDL parse error.
pub fn ndl_error(e: &elvis_ndl::NdlError, source: &str) -> String {
    located(&e.file, source, e.loc, &e.message, e.hint.as_deref())
}
