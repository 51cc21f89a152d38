//! Options of a group's `[Protocol name='TCP' …]` block: its listeners'
//! SYN-flood defences (`elvis_sim::stack::tcp::syncookie`).
//!
//! | option | values | default |
//! |---|---|---|
//! | `syn_cookies` | `on` / `off` | `on` (cookies when a SYN backlog overflows, Linux's `tcp_syncookies=1`) |
//! | `syn_backlog` | 1 to 1,000,000 | none (a cap on every listener's half-open connections below its listen backlog, as Linux's `somaxconn` caps the backlog) |

use super::{err, BuildError};
use elvis_scenario::MachineGroup;
use elvis_sim::stack::tcp::syncookie::SynDefence;

/// Returns the SYN-flood defences a group's TCP block sets, if any.
///
/// # Errors
/// An unknown option or a bad value, located.
pub(crate) fn syn_defence(g: &MachineGroup) -> Result<Option<SynDefence>, BuildError> {
    let Some(spec) = g
        .protocols
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case("tcp"))
    else {
        return Ok(None);
    };
    let mut d = SynDefence::default();
    let mut any = false;
    for p in spec.params.iter() {
        match p.key.as_str() {
            "name" => continue,
            "syn_cookies" => {
                d.cookies = match p.value.trim().to_ascii_lowercase().as_str() {
                    "on" | "true" | "yes" | "1" => true,
                    "off" | "false" | "no" | "0" => false,
                    _ => {
                        return Err(err(
                            p.loc,
                            format!("syn_cookies '{}' is neither on nor off", p.value),
                        )
                        .with_hint("syn_cookies='on' or syn_cookies='off'"))
                    }
                }
            }
            "syn_backlog" => {
                d.max_syn_backlog = p
                    .value
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=1_000_000).contains(n))
                    .ok_or_else(|| {
                        err(
                            p.loc,
                            format!(
                                "syn_backlog '{}' is not a whole number from 1 to 1000000",
                                p.value
                            ),
                        )
                        .with_hint("syn_backlog='128'")
                    })?
            }
            other => {
                return Err(err(p.loc, format!("protocol TCP has no option '{other}'"))
                    .with_hint("its options are: syn_cookies, syn_backlog"))
            }
        }
        any = true;
    }
    Ok(any.then_some(d))
}
