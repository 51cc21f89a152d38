//! Options of a group's `[Protocol name='TCP' …]` block: its listeners'
//! SYN-flood defences (`elvis_sim::stack::tcp::syncookie`).
//!
//! | option | values | default |
//! |---|---|---|
//! | `syn_cookies` | `on` / `off` | `on` (cookies when a SYN backlog overflows, Linux's `tcp_syncookies=1`) |
//! | `syn_backlog` | 1 to 1,000,000 | none (a cap on every listener's half-open connections below its listen backlog, as Linux's `somaxconn` caps the backlog) |
//! | `congestion` | `newreno`, `cubic`, `compound`, `dctcp`, `bbr` | none (each application's own `congestion=`, else CUBIC); the machine's default, as Linux's `tcp_congestion_control`: every application on the machine that takes `congestion=` (`bulk_send`, `bulk_receive`, `send_message`, `tcp_echo_server`, `tcp_echo_client`, `web_server`, `video_server`, `flowgen`, `flowgen_sink`) and sets none uses it, for the connections it opens and those it accepts |

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
            "congestion" => {
                check_congestion(p)?;
                continue;
            }
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
                    .with_hint("its options are: syn_cookies, syn_backlog, congestion"))
            }
        }
        any = true;
    }
    Ok(any.then_some(d))
}

fn check_congestion(p: &elvis_scenario::Param) -> Result<elvis_sim::Congestion, BuildError> {
    p.value.parse().map_err(|_| {
        err(p.loc, format!("unknown congestion control '{}'", p.value))
            .with_hint("congestion='newreno', 'cubic', 'compound', 'dctcp' or 'bbr'")
    })
}

/// Returns whether application `name` takes a `congestion=` option (its
/// TCP connections, active or accepted, choose their congestion control).
fn takes_congestion(name: &str) -> bool {
    crate::apps::registry::APPS
        .iter()
        .any(|(n, keys)| n.eq_ignore_ascii_case(name) && keys.contains(&"congestion"))
}

/// Returns `app` with the group's TCP `congestion` added when the group
/// sets one and the application takes `congestion=` but has none of its
/// own.
pub(crate) fn with_congestion<'a>(
    g: &MachineGroup,
    app: &'a elvis_scenario::AppSpec,
) -> std::borrow::Cow<'a, elvis_scenario::AppSpec> {
    let default = g
        .protocols
        .iter()
        .filter(|p| p.name.eq_ignore_ascii_case("tcp"))
        .find_map(|p| p.params.get("congestion"));
    match default {
        Some(c) if takes_congestion(&app.name) && app.params.get("congestion").is_none() => {
            let mut a = app.clone();
            a.params.0.push(c.clone());
            std::borrow::Cow::Owned(a)
        }
        _ => std::borrow::Cow::Borrowed(app),
    }
}
