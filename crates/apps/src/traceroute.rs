//! `traceroute`: the routers on the path to a machine, hop by hop, like
//! `traceroute -I` (ICMP echo probes).
//!
//! For TTL 1, 2, … up to `max_hops`, sends `queries` echo requests of
//! `size` data bytes with that TTL and waits up to `timeout` for each
//! answer: a router where the TTL runs out answers with Time Exceeded (its
//! address is the hop), the destination with an echo reply (the trace is
//! done). Each answer is published in the run report as
//! `hop<TTL> <address> rtt_ns` with the round-trip time; an unanswered
//! probe as `hop<TTL> * timeout`. `hops` is the number of hops to the
//! destination. It fails when the destination was not reached, or a router
//! reported it unreachable (`!N`, `!H`, `!F` in traceroute(8)).
//!
//! # Gaps
//! UDP probes to ports 33434+ (traceroute's default) are not offered: our
//! UDP sockets do not receive ICMP errors other than Port Unreachable.

use crate::Host;
use elvis_api::{AppError, AppResult, EchoOptions, Message, Time};
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::time::Duration;

/// Options of `traceroute`.
#[derive(Clone, Debug)]
pub struct Config {
    pub to: Ipv4Addr,
    pub max_hops: u8,
    pub queries: u8,
    pub timeout: Duration,
    pub size: usize,
}

/// One probe's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    pub ttl: u8,
    /// Who answered (`None`: no answer within the timeout).
    pub from: Option<Ipv4Addr>,
    pub rtt_ns: u64,
}

/// Traces the path and publishes every hop.
pub async fn run(host: Host, cfg: Rc<Config>) -> AppResult {
    let ident = 0x8000 | (host.id() & 0x7fff) as u16;
    let sock = host.icmp_socket_from(ident)?;
    let payload = Message::zeros(cfg.size as u64);
    let mut seq: u16 = 0;
    for ttl in 1..=cfg.max_hops {
        let mut reached = false;
        for _ in 0..cfg.queries {
            seq = seq.wrapping_add(1);
            let sent_at = host.now();
            sock.send_echo_with(cfg.to, seq, EchoOptions::ttl(ttl), payload.clone())?;
            let hop = answer(&host, &sock, seq, sent_at + cfg.timeout).await?;
            let Some((from, error)) = hop else {
                host.publish(&format!("hop{ttl} * timeout"), 0.0);
                continue;
            };
            let rtt = host.now().as_nanos() - sent_at.as_nanos();
            host.publish(&format!("hop{ttl} {from} rtt_ns"), rtt as f64);
            match error {
                None => reached = true,
                Some(e) if e.is_time_exceeded() => {}
                Some(e) => {
                    return Err(AppError::new(format!(
                        "{from} reports {} unreachable (ICMP type {} code {}) at hop {ttl}",
                        cfg.to, e.kind, e.code
                    )))
                }
            }
        }
        if reached {
            host.publish("hops", f64::from(ttl));
            return Ok(());
        }
    }
    Err(AppError::new(format!(
        "{} not reached in {} hops",
        cfg.to, cfg.max_hops
    )))
}

/// Waits for the answer to probe `seq` until `deadline`.
async fn answer(
    host: &Host,
    sock: &elvis_api::IcmpSocket,
    seq: u16,
    deadline: Time,
) -> Result<Option<(Ipv4Addr, Option<elvis_api::IcmpError>)>, AppError> {
    loop {
        match host.timeout_at(deadline, sock.recv_echo()).await {
            Some(Ok(r)) if r.seq == seq => return Ok(Some((r.from, r.error))),
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(e.into()),
            None => return Ok(None),
        }
    }
}
