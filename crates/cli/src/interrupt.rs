//! SIGINT and SIGTERM: the first ends the run cleanly, the second at once.
//!
//! The first signal sets the flag that the run loop reads between events
//! ([`elvis_sim::Simulation::set_interrupt_flag`]): the run stops at the
//! current event, the captures are closed at a frame boundary, and the
//! summary and a complete report (`"end": "interrupted"`) are written as
//! after any run. A second signal, when the flag is already set, exits at
//! once with the shell's status for it (128 + the signal number).
//!
//! The handlers are `signal-hook`'s: they only store to an atomic flag or
//! call `_exit`, both safe in a signal handler.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Installs the handlers and returns the flag the first signal sets.
///
/// # Errors
/// If a handler cannot be installed.
pub fn install() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    #[cfg(unix)]
    {
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // Handlers run in the order registered: the exit only fires
            // when an earlier signal already set the flag.
            signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, flag.clone())?;
            signal_hook::flag::register(sig, flag.clone())?;
        }
    }
    Ok(flag)
}
