//! `capture`: receive messages on a port until `message_count` arrived.
//!
//! Over TCP (`transport='tcp'`) it accepts connections one after another
//! and reads length-prefixed messages (as `send_message` writes them) from
//! each until it closes.

use crate::Host;
use elvis_api::{AppError, AppResult, Message};
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
    pub transport: crate::send_message::Transport,
}

/// Receives until the expected number of messages arrived.
///
/// # Errors
/// When a message differs from the expected content.
pub async fn run(host: Host, cfg: Rc<Config>) -> AppResult {
    if cfg.transport == crate::send_message::Transport::Tcp {
        // Boxed: the TCP futures are large, and a million UDP captures
        // must not carry their state (memory per machine).
        return Box::pin(run_tcp(host, cfg)).await;
    }
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
    sock: &elvis_api::UdpSocket,
    host: &Host,
    counter: &str,
    target: u64,
) -> Option<Result<Message, elvis_api::SocketError>> {
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

/// Checks one received message against the expected content.
fn check(cfg: &Config, got: u64, msg: &Message) -> AppResult {
    if let Some(expect) = &cfg.expect {
        if msg != expect {
            return Err(AppError::new(format!(
                "message {} was {:?}, expected {:?}",
                got + 1,
                String::from_utf8_lossy(&msg.to_vec()),
                String::from_utf8_lossy(&expect.to_vec())
            )));
        }
    }
    Ok(())
}

/// The TCP variant: length-prefixed messages over accepted connections.
async fn run_tcp(host: Host, cfg: Rc<Config>) -> AppResult {
    let listener = host.tcp_listen(cfg.port, 1024)?;
    let mut got = 0u64;
    while got < cfg.count {
        let (stream, _) = listener.accept().await?;
        loop {
            let len = stream.read_exact(4).await?;
            if len.len() < 4 {
                break;
            }
            let mut b = [0u8; 4];
            let _ = len.copy_to_slice(0, &mut b);
            let msg = stream.read_exact(u32::from_be_bytes(b) as usize).await?;
            check(&cfg, got, &msg)?;
            got += 1;
            if let Some(name) = &cfg.counter {
                host.counter_add(name, 1);
            }
        }
    }
    Ok(())
}
