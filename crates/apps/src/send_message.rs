//! `send_message`: send one message (or `message_count` copies) to a
//! machine by name or address.

use crate::Host;
use elvis_sim::{AppResult, Message};
use std::net::SocketAddrV4;
use std::rc::Rc;

/// Options of `send_message`.
#[derive(Clone, Debug)]
pub struct Config {
    /// The payload; shared by every copy sent (zero-copy).
    pub message: Message,
    /// Destination.
    pub to: SocketAddrV4,
    /// How many copies to send.
    pub count: u64,
    /// Local port (0 = ephemeral).
    pub local_port: u16,
    /// Pause between two messages (none by default: back to back).
    pub interval: Option<std::time::Duration>,
}

/// Sends the configured messages, waiting whenever the NIC is full.
pub async fn run(host: Host, cfg: Rc<Config>) -> AppResult {
    let sock = host.udp_bind(cfg.local_port)?;
    for i in 0..cfg.count {
        if i > 0 {
            if let Some(d) = cfg.interval {
                host.sleep(d).await;
            }
        }
        sock.send_to(cfg.message.clone(), cfg.to).await?;
    }
    Ok(())
}
