//! `tcp_echo_server` / `tcp_echo_client`: the classic echo pair over TCP.
//! The server (a daemon) echoes every byte back on every connection it
//! accepts, one connection at a time; the client sends `message`
//! `message_count` times and checks each echo. The client publishes
//! `connect_ns` (from its start to the end of the handshake) and
//! `completion_ns` (from its start to the last echo).

use crate::Host;
use elvis_api::{AppError, AppResult, Congestion, Message};
use std::net::SocketAddrV4;
use std::rc::Rc;

/// Options of `tcp_echo_client`.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub to: SocketAddrV4,
    pub message: Message,
    pub count: u64,
    /// The connection's congestion control (`TCP_CONGESTION`); `None`
    /// keeps the simulation's default.
    pub congestion: Option<Congestion>,
}

/// Echoes forever; the connections it accepts use `congestion` (`None`:
/// the simulation's default).
pub async fn server(host: Host, port: u16, congestion: Option<Congestion>) -> AppResult {
    let mut sock = host.tcp_socket()?;
    if let Some(alg) = congestion {
        sock.set_congestion(alg);
    }
    sock.bind(port)?;
    let listener = sock.listen(128)?;
    loop {
        let (stream, _) = listener.accept().await?;
        loop {
            let m = stream.recv(1 << 16).await?;
            if m.is_empty() {
                break;
            }
            stream.write_all(m).await?;
        }
    }
}

/// Sends and checks the echoes.
pub async fn client(host: Host, cfg: Rc<ClientConfig>) -> AppResult {
    let start = host.now();
    let mut sock = host.tcp_socket()?;
    if let Some(alg) = cfg.congestion {
        sock.set_congestion(alg);
    }
    let stream = sock.connect(cfg.to).await?;
    host.publish("connect_ns", (host.now() - start).as_nanos() as f64);
    stream.set_nodelay(true)?;
    for i in 0..cfg.count {
        stream.write_all(cfg.message.clone()).await?;
        let back = stream.read_exact(cfg.message.len()).await?;
        if back != cfg.message {
            return Err(AppError::new(format!(
                "echo {} differs from what was sent",
                i + 1
            )));
        }
    }
    host.publish("completion_ns", (host.now() - start).as_nanos() as f64);
    Ok(())
}
