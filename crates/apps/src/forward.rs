//! `forward`: relay every datagram received on `local_port` to a fixed
//! destination (a daemon: it never finishes by itself).

use crate::Host;
use elvis_api::AppResult;
use std::net::SocketAddrV4;
use std::rc::Rc;

/// Options of `forward`.
#[derive(Clone, Debug)]
pub struct Config {
    pub local_port: u16,
    pub to: SocketAddrV4,
}

/// Relays datagrams forever.
pub async fn run(host: Host, cfg: Rc<Config>) -> AppResult {
    let sock = host.udp_bind(cfg.local_port)?;
    loop {
        let msg = sock.recv().await?;
        sock.send_to(msg, cfg.to).await?;
    }
}
