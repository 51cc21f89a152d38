//! `capture`: receive messages on a port until `message_count` arrived.

use crate::Host;
use elvis_sim::{AppError, AppResult, Message};
use std::rc::Rc;

/// Options of `capture`.
#[derive(Clone, Debug)]
pub struct Config {
    pub port: u16,
    /// Messages to wait for (on this machine, or in total with `counter`).
    pub count: u64,
    /// If set, every message must equal it.
    pub expect: Option<Message>,
    /// A run-wide counter shared by several capture machines.
    pub counter: Option<String>,
}

/// Receives until the expected number of messages arrived.
///
/// # Errors
/// When a message differs from the expected content.
pub async fn run(host: Host, cfg: Rc<Config>) -> AppResult {
    let sock = host.udp_bind(cfg.port)?;
    let mut got = 0u64;
    loop {
        if let Some(name) = &cfg.counter {
            if host.counter_add(name, 0) >= cfg.count {
                return Ok(());
            }
        } else if got >= cfg.count {
            return Ok(());
        }
        let msg = match &cfg.counter {
            None => sock.recv().await?,
            Some(name) => {
                // Wait for a message or for the others to reach the total.
                match first_of(&sock, &host, name, cfg.count).await {
                    Some(m) => m?,
                    None => return Ok(()),
                }
            }
        };
        if let Some(expect) = &cfg.expect {
            if &msg != expect {
                return Err(AppError::new(format!(
                    "message {} was {:?}, expected {:?}",
                    got + 1,
                    String::from_utf8_lossy(&msg.to_vec()),
                    String::from_utf8_lossy(&expect.to_vec())
                )));
            }
        }
        got += 1;
        if let Some(name) = &cfg.counter {
            host.counter_add(name, 1);
        }
    }
}

/// Returns the next message, or `None` once the shared counter reached
/// `target` first.
async fn first_of(
    sock: &elvis_sim::UdpSocket,
    host: &Host,
    counter: &str,
    target: u64,
) -> Option<Result<Message, elvis_sim::SocketError>> {
    use std::future::Future;
    use std::pin::pin;
    use std::task::Poll;
    let mut recv = pin!(sock.recv());
    let mut reached = pin!(host.counter_reached(counter, target));
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(r) = recv.as_mut().poll(cx) {
            return Poll::Ready(Some(r));
        }
        if reached.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}
