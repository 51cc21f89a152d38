//! Crashes: a panic in a machine's code (its stack or an application)
//! crashes that machine, not the run. The hook records the panic's
//! message for the machine's report instead of printing it.

use std::cell::RefCell;

thread_local! {
    static IN_SIM: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs (once) a panic hook that records panics raised inside a
/// simulation on this thread instead of printing them.
pub fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let captured = IN_SIM.with(|c| {
                let mut c = c.borrow_mut();
                match c.as_mut() {
                    Some(slot) => {
                        let msg = info
                            .payload()
                            .downcast_ref::<&str>()
                            .map(|s| s.to_string())
                            .or_else(|| info.payload().downcast_ref::<String>().cloned())
                            .unwrap_or_else(|| "panic".into());
                        *slot = match info.location() {
                            Some(l) => format!("panicked at {}:{}: {msg}", l.file(), l.line()),
                            None => format!("panicked: {msg}"),
                        };
                        true
                    }
                    None => false,
                }
            });
            if !captured {
                previous(info);
            }
        }));
    });
}

/// Returns the message of the panic last caught on this thread (empty if
/// none), forgetting it.
pub fn take_panic_message() -> String {
    IN_SIM.with(|c| {
        c.borrow_mut()
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    })
}

/// Starts (`true`) or stops recording the panics raised on this thread.
pub fn capture_panics(on: bool) {
    IN_SIM.with(|c| *c.borrow_mut() = on.then(String::new));
}
