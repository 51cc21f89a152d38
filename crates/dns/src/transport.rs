//! One DNS exchange with one server: over UDP, then over TCP when the
//! answer comes back truncated (RFC 1035 §4.2, RFC 7766 §5), each with a
//! deadline; and the wait of a server's loop for the next datagram or
//! connection.

use crate::message::{self, PORT};
use elvis_api::{Host, Message as Payload, Time};
use hickory_proto::op::Message;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::pin::pin;
use std::task::{Context, Poll};

/// Why an exchange got no usable answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// No answer before the deadline.
    Timeout,
    /// A socket error (no route, connection refused…).
    Socket(String),
    /// The answer did not decode.
    Malformed(String),
}

/// Asks `server` with `q` (already given its id), over UDP and then TCP if
/// the UDP answer is truncated. Returns the answer and whether TCP carried
/// it. Answers that do not match `q` (id, question) are ignored.
///
/// # Errors
/// [`Failure`] when the deadline `timeout` after the start passes, or a
/// socket fails.
pub async fn exchange(
    host: &Host,
    server: Ipv4Addr,
    q: &Message,
    timeout: std::time::Duration,
) -> Result<(Message, bool), Failure> {
    match exchange_for(host, server, q, timeout, false).await? {
        Reply::Message(r, tcp) => Ok((r, tcp)),
        Reply::Address(_) => unreachable!("no address is read without asking"),
    }
}

/// What [`exchange_for`] got back.
pub enum Reply {
    /// The answer, and whether TCP carried it.
    Message(Message, bool),
    /// The first address of an answer to an A query, read without
    /// decoding it ([`message::first_address`]).
    Address(Ipv4Addr),
}

/// [`exchange`], reading just the first address of the answers that
/// allow it when `address` is set (`q` an A query).
///
/// # Errors
/// As [`exchange`].
pub async fn exchange_for(
    host: &Host,
    server: Ipv4Addr,
    q: &Message,
    timeout: std::time::Duration,
    address: bool,
) -> Result<Reply, Failure> {
    let deadline = host.now() + timeout;
    let r = match udp(host, server, q, message::encode(q), deadline, address).await? {
        Reply::Message(r, _) => r,
        a @ Reply::Address(_) => return Ok(a),
    };
    if !r.metadata.truncation {
        return Ok(Reply::Message(r, false));
    }
    // Boxed: the TCP exchange is rare, and its future would otherwise
    // make every exchange's (and every resolver task's) larger.
    let bytes = message::encode(q);
    let r = Box::pin(tcp(host, server, q, &bytes, host.now() + timeout)).await?;
    Ok(Reply::Message(r, true))
}

async fn udp(
    host: &Host,
    server: Ipv4Addr,
    q: &Message,
    bytes: Vec<u8>,
    deadline: Time,
    address: bool,
) -> Result<Reply, Failure> {
    let sock = host.udp_bind(0).map_err(sock_err)?;
    let to = SocketAddrV4::new(server, PORT);
    sock.send_to(Payload::from_vec(bytes), to)
        .await
        .map_err(sock_err)?;
    loop {
        match host.timeout_at(deadline, sock.recv_from()).await {
            None => return Err(Failure::Timeout),
            Some(Err(e)) => return Err(sock_err(e)),
            Some(Ok((mut m, from))) if from == to => {
                let b = bytes_of(&mut m);
                if address {
                    if let Some(ip) = message::first_address(q, b) {
                        return Ok(Reply::Address(ip));
                    }
                }
                if let Ok(r) = message::decode(b) {
                    if message::answers(q, &r) {
                        return Ok(Reply::Message(r, false));
                    }
                }
            }
            Some(Ok(_)) => {}
        }
    }
}

async fn tcp(
    host: &Host,
    server: Ipv4Addr,
    q: &Message,
    bytes: &[u8],
    deadline: Time,
) -> Result<Message, Failure> {
    let work = async {
        let s = host
            .tcp_connect(SocketAddrV4::new(server, PORT))
            .await
            .map_err(sock_err)?;
        s.set_nodelay(true).map_err(sock_err)?;
        s.write_all(Payload::from_vec(framed(bytes)))
            .await
            .map_err(sock_err)?;
        let r = read_framed(&s).await?;
        drop(s);
        let r = message::decode(&r).map_err(|e| Failure::Malformed(e.0))?;
        if message::answers(q, &r) {
            Ok(r)
        } else {
            Err(Failure::Malformed(
                "the TCP answer does not match the query".into(),
            ))
        }
    };
    host.timeout_at(deadline, work)
        .await
        .unwrap_or(Err(Failure::Timeout))
}

/// Returns a datagram's bytes as one slice: in place when they are
/// contiguous (a datagram that arrived whole), else gathered once.
pub fn bytes_of(m: &mut Payload) -> &[u8] {
    let n = m.len();
    m.front(n).unwrap_or(&[])
}

/// Returns `bytes` with the two-byte length prefix of DNS over TCP.
pub fn framed(bytes: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(bytes.len() + 2);
    v.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
    v.extend_from_slice(bytes);
    v
}

/// Reads one length-prefixed message from a TCP stream.
///
/// # Errors
/// The connection closed (`read_exact` then returns fewer bytes) or
/// failed first.
pub async fn read_framed(s: &elvis_api::TcpStream) -> Result<Vec<u8>, Failure> {
    let closed = || Failure::Socket("the connection closed".into());
    let len = s.read_exact(2).await.map_err(sock_err)?.to_vec();
    let [a, b] = len[..] else {
        return Err(closed());
    };
    let len = usize::from(u16::from_be_bytes([a, b]));
    let body = s.read_exact(len).await.map_err(sock_err)?.to_vec();
    if body.len() != len {
        return Err(closed());
    }
    Ok(body)
}

fn sock_err(e: elvis_api::SocketError) -> Failure {
    Failure::Socket(e.to_string())
}

/// A datagram, or a TCP connection, that reached a server's port 53.
pub type Arrival = Result<
    Result<(Payload, SocketAddrV4), elvis_api::SocketError>,
    Result<(elvis_api::TcpStream, SocketAddrV4), elvis_api::SocketError>,
>;

/// Listens for TCP on port 53 with room for 64 pending connections;
/// `None` on a machine without TCP (the server then answers over UDP
/// only).
///
/// # Errors
/// Any other socket error.
pub fn listen(host: &Host) -> Result<Option<elvis_api::TcpListener>, elvis_api::SocketError> {
    match host.tcp_listen(PORT, 64) {
        Ok(l) => Ok(Some(l)),
        Err(elvis_api::SocketError::ProtocolNotAvailable(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Waits until a datagram reaches `udp` (`Ok`) or a connection reaches
/// `tcp` (`Err`): the one wait of a server's or resolver's loop. (What
/// the loop cannot answer at once it hands to a task of its own,
/// `Host::spawn`.)
pub async fn next_arrival(
    udp: &elvis_api::UdpSocket,
    tcp: Option<&elvis_api::TcpListener>,
) -> Arrival {
    std::future::poll_fn(|cx| {
        if let Poll::Ready(r) = poll_once(udp.recv_from(), cx) {
            return Poll::Ready(Ok(r));
        }
        if let Some(tcp) = tcp {
            if let Poll::Ready(r) = poll_once(tcp.accept(), cx) {
                return Poll::Ready(Err(r));
            }
        }
        Poll::Pending
    })
    .await
}

/// Polls a fresh, stateless future once (a socket's `recv_from`,
/// `accept`).
pub fn poll_once<F: Future>(f: F, cx: &mut Context<'_>) -> Poll<F::Output> {
    pin!(f).poll(cx)
}
