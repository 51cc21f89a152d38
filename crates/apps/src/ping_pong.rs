//! `ping_pong`: two machines bounce a one-byte counter until it reaches 0.
//!
//! The starter sends `count` (default 255, as Elvis' TTL); whoever receives
//! `n > 0` replies `n − 1`; whoever sends or receives 0 is done.

use crate::Host;
use elvis_api::{AppError, AppResult, Message};
use std::net::SocketAddrV4;
use std::rc::Rc;

/// Options of `ping_pong`.
#[derive(Clone, Debug)]
pub struct Config {
    pub starter: bool,
    pub local_port: u16,
    pub remote: SocketAddrV4,
    pub count: u8,
}

/// Plays one side of the game.
pub async fn run(host: Host, cfg: Rc<Config>) -> AppResult {
    let sock = host.udp_bind(cfg.local_port)?;
    if cfg.starter {
        sock.send_to(vec![cfg.count], cfg.remote).await?;
        if cfg.count == 0 {
            return Ok(());
        }
    }
    loop {
        let msg: Message = sock.recv().await?;
        let Some(n) = msg.byte_at(0) else {
            return Err(AppError::new("empty ping_pong message"));
        };
        if n == 0 {
            return Ok(());
        }
        sock.send_to(vec![n - 1], cfg.remote).await?;
        if n == 1 {
            return Ok(());
        }
    }
}
