//! `bulk_send` / `bulk_receive`: a bulk TCP transfer in the spirit of
//! iperf. The sender connects and writes `bytes` (a virtual payload by
//! default: zeros with no memory behind them; `payload='real'` sends real
//! bytes), then closes; the receiver accepts one connection and reads until
//! it has all `bytes`. Both publish `goodput_bps` (payload bits per second
//! of virtual time, from connect to the last byte) and the receiver also
//! `transfer_ns` and `steady_goodput_bps`: the goodput over the second
//! half of the bytes (from the read that completed the first half to the
//! last byte), past slow start when the transfer is much larger than the
//! window. `sndbuf` / `rcvbuf` set `SO_SNDBUF` / `SO_RCVBUF` (iperf's
//! `-w`); the receive buffer is the window the receiver advertises.

use crate::Host;
use elvis_api::{AppError, AppResult, Congestion, Message};
use std::net::SocketAddrV4;
use std::rc::Rc;

/// Options of `bulk_send`.
#[derive(Clone, Debug)]
pub struct SendConfig {
    pub to: SocketAddrV4,
    pub bytes: u64,
    /// Real bytes (a repeating pattern) instead of a virtual payload.
    pub real: bool,
    pub congestion: Option<Congestion>,
    /// `SO_SNDBUF`, if given.
    pub sndbuf: Option<usize>,
}

/// Options of `bulk_receive`.
#[derive(Clone, Debug)]
pub struct ReceiveConfig {
    pub port: u16,
    pub bytes: u64,
    /// `SO_RCVBUF` (the advertised window), if given.
    pub rcvbuf: Option<usize>,
    /// The congestion control of the accepted connection (`TCP_CONGESTION`
    /// on the listener): it matters to a receiver when it changes how ECN
    /// is echoed (DCTCP).
    pub congestion: Option<Congestion>,
}

/// Writes in pieces of this size (the send buffer takes what fits).
const PIECE: u64 = 1 << 20;

/// Returns `len` bytes of the pattern used by real payloads: byte `i` of
/// the stream is `i mod 251` (a prime, so pieces never line up).
pub fn pattern(offset: u64, len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| ((offset + i) % 251) as u8)
        .collect()
}

/// Sends the configured bytes.
pub async fn send(host: Host, cfg: Rc<SendConfig>) -> AppResult {
    let start = host.now();
    let mut sock = host.tcp_socket()?;
    if let Some(alg) = cfg.congestion {
        sock.set_congestion(alg);
    }
    if let Some(b) = cfg.sndbuf {
        sock.set_send_buffer_size(b);
    }
    let stream = sock.connect(cfg.to).await?;
    let mut sent = 0u64;
    while sent < cfg.bytes {
        let n = (cfg.bytes - sent).min(PIECE);
        let piece = if cfg.real {
            Message::from_vec(pattern(sent, n as usize))
        } else {
            Message::zeros(n)
        };
        stream.write_all(piece).await?;
        sent += n;
    }
    let stats = stream.stats()?;
    host.publish(
        "retransmitted_segments",
        stats.retransmitted_segments as f64,
    );
    host.publish("timeouts", stats.timeouts as f64);
    host.publish("srtt_ns", stats.srtt_ns as f64);
    drop(stream);
    let _ = start;
    Ok(())
}

/// Receives the configured bytes from one connection.
pub async fn receive(host: Host, cfg: Rc<ReceiveConfig>) -> AppResult {
    let mut sock = host.tcp_socket()?;
    if let Some(b) = cfg.rcvbuf {
        sock.set_recv_buffer_size(b);
    }
    if let Some(alg) = cfg.congestion {
        sock.set_congestion(alg);
    }
    sock.bind(cfg.port)?;
    let listener = sock.listen(16)?;
    let (stream, _peer) = listener.accept().await?;
    let start = host.now();
    let mut got = 0u64;
    // (time, bytes) when the first half of the bytes had been read.
    let mut half: Option<(u64, u64)> = None;
    while got < cfg.bytes {
        let m = stream.recv(1 << 20).await?;
        if m.is_empty() {
            return Err(AppError::new(format!(
                "connection closed after {got} of {} bytes",
                cfg.bytes
            )));
        }
        got += m.len() as u64;
        if half.is_none() && got >= cfg.bytes / 2 {
            half = Some((host.now().as_nanos(), got));
        }
    }
    let end = host.now().as_nanos();
    let ns = (end - start.as_nanos()).max(1);
    host.publish("transfer_ns", ns as f64);
    host.publish("goodput_bps", got as f64 * 8e9 / ns as f64);
    if let Some((t, at)) = half.filter(|&(t, _)| t < end) {
        host.publish(
            "steady_goodput_bps",
            (got - at) as f64 * 8e9 / (end - t) as f64,
        );
    }
    Ok(())
}
