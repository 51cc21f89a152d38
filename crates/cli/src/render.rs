//! Error rendering: `file:line:col: error: message` and a caret line.

use elvis_scenario::Loc;

/// Renders an error located in `source` like rustc does.
pub fn located(file: &str, source: &str, loc: Loc, message: &str, hint: Option<&str>) -> String {
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
    if let Some(text) = source.lines().nth(loc.line as usize - 1) {
        let gutter = loc.line.to_string().len();
        let text = text.replace('\t', "    ");
        let col = source.lines().nth(loc.line as usize - 1).map_or(0, |l| {
            l.chars()
                .take(loc.col.saturating_sub(1) as usize)
                .map(|c| if c == '\t' { 4 } else { 1 })
                .sum::<usize>()
        });
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
