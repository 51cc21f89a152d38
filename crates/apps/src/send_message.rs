//! `send_message`: send one message (or `message_count` copies) to a
//! machine by name or address, over UDP (default) or TCP.
//!
//! Over TCP (`transport='tcp'`) the sender opens one connection, writes
//! each message behind a 4-byte big-endian length (so the receiving
//! `capture` can find message boundaries in the byte stream), and closes.

use crate::Host;
use elvis_api::{AppResult, Congestion, Message};
use std::net::SocketAddrV4;
use std::rc::Rc;

/// Which transport carries the messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    #[default]
    Udp,
    Tcp,
}

/// Options of `send_message`.
#[derive(Clone, Debug)]
pub struct Config {
    /// The payload; shared by every copy sent (zero-copy).
    pub message: Message,
    /// Destination.
    pub to: SocketAddrV4,
    /// How many copies to send.
    pub count: u64,
    /// Local port (0 = ephemeral; UDP only).
    pub local_port: u16,
    /// Pause between two messages (none by default: back to back).
    pub interval: Option<std::time::Duration>,
    pub transport: Transport,
    /// TCP congestion control (`None` = the machine's default).
    pub congestion: Option<Congestion>,
}

/// Sends the configured messages, waiting whenever the NIC (UDP) or the
/// send buffer (TCP) is full.
pub async fn run(host: Host, cfg: Rc<Config>) -> AppResult {
    match cfg.transport {
        Transport::Udp => {
            let sock = host.udp_bind(cfg.local_port)?;
            for i in 0..cfg.count {
                if i > 0 {
                    if let Some(d) = cfg.interval {
                        host.sleep(d).await;
                    }
                }
                sock.send_to(cfg.message.clone(), cfg.to).await?;
            }
        }
        // Boxed: the TCP futures are large, and a million UDP senders must
        // not carry their state (memory per machine).
        Transport::Tcp => Box::pin(run_tcp(host, cfg)).await?,
    }
    Ok(())
}

/// The TCP variant: one connection, each message framed by its length.
async fn run_tcp(host: Host, cfg: Rc<Config>) -> AppResult {
    let stream = match cfg.congestion {
        Some(alg) => host.tcp_connect_with(cfg.to, alg).await?,
        None => host.tcp_connect(cfg.to).await?,
    };
    for i in 0..cfg.count {
        if i > 0 {
            if let Some(d) = cfg.interval {
                host.sleep(d).await;
            }
        }
        let mut framed = cfg.message.clone();
        framed.push_front_slice(&(cfg.message.len() as u32).to_be_bytes());
        stream.write_all(framed).await?;
    }
    Ok(())
}
