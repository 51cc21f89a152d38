//! The client side shared by `web_user` and `http_load`: persistent
//! connections, one request at a time on each, and `http://` URLs.

use crate::http::{self, Reader, Request};
use elvis_api::{Host, Message, TcpStream};
use std::cell::Cell;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::rc::Rc;

/// A URL `http://host[:port]/path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    pub host: String,
    pub port: u16,
    pub path: String,
}

/// Parses an `http://` URL.
///
/// # Errors
/// Another scheme, an empty host, a bad port.
pub fn parse_url(s: &str) -> Result<Url, String> {
    let rest = s
        .trim()
        .strip_prefix("http://")
        .ok_or_else(|| format!("'{s}' is not an http:// URL"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| format!("'{p}' is not a port in '{s}'"))?,
        ),
        None => (authority, 80),
    };
    if host.is_empty() {
        return Err(format!("'{s}' has no host"));
    }
    Ok(Url {
        host: host.to_string(),
        port,
        path: path.to_string(),
    })
}

/// One persistent connection and what it has read ahead.
pub struct Conn {
    pub stream: TcpStream,
    pub reader: Reader,
}

/// A response as the client saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    pub status: u16,
    /// The body's length, bytes.
    pub bytes: u64,
    /// The body's first bytes (as many as asked).
    pub body: Vec<u8>,
}

/// Where requests go.
#[derive(Clone, Debug)]
pub struct Origin {
    pub addr: SocketAddrV4,
    /// The `Host` field.
    pub name: String,
    /// The next local port to try (0: not drawn yet); shared by clones.
    next_port: Rc<Cell<u16>>,
}

impl Origin {
    /// An origin at `ip`:`port` named `name`.
    pub fn new(ip: Ipv4Addr, port: u16, name: &str) -> Origin {
        Origin {
            addr: SocketAddrV4::new(ip, port),
            name: name.to_string(),
            next_port: Rc::default(),
        }
    }
}

/// The local ports the web clients connect from: Linux's default
/// `ip_local_port_range` below the stack's own ephemeral ports (49152 up).
const PORTS: std::ops::RangeInclusive<u16> = 32768..=49151;

/// Returns the next local port to try for `o`, walking [`PORTS`] from a
/// random start.
///
/// Why not the stack's ephemeral port: it gives the lowest free one, so a
/// client making connection after connection to one server reuses the
/// port of the connection just closed, whose server side is still in
/// TIME-WAIT (the server closed first): the new SYN is answered by the
/// old connection's ACK and waits a retransmission (1 s). Linux walks its
/// range instead (`__inet_hash_connect`), and so does this.
fn next_port(host: &Host, o: &Origin) -> u16 {
    let span = u32::from(PORTS.end() - PORTS.start()) + 1;
    let cur = match o.next_port.get() {
        0 => PORTS.start() + (host.random_u64() % u64::from(span)) as u16,
        p => p,
    };
    let next = PORTS.start() + ((u32::from(cur - PORTS.start()) + 1) % span) as u16;
    o.next_port.set(next);
    cur
}

/// Opens a connection to `o` from the next free port of `PORTS`.
///
/// # Errors
/// The connection failed, or no port was free.
pub async fn connect(host: &Host, o: &Origin) -> Result<Conn, http::Error> {
    let mut tries = 0;
    let sock = loop {
        let mut sock = host.tcp_socket()?;
        match sock.bind(next_port(host, o)) {
            Ok(()) => break sock,
            Err(elvis_api::SocketError::AddrInUse(_)) if tries < 64 => tries += 1,
            Err(e) => return Err(e.into()),
        }
    };
    let stream = sock.connect(o.addr).await?;
    stream.set_nodelay(true)?;
    Ok(Conn {
        stream,
        reader: Reader::new(),
    })
}

/// GETs `path` on `conn` (opening one if `None`), keeping the first
/// `keep` body bytes; with `close`, asks the server to close after it.
/// The connection is left in `conn` if it may be used again. A kept
/// connection the server has closed is replaced; one that fails on reuse
/// (the server's close crossing the request) is replaced once, as
/// browsers do.
///
/// # Errors
/// The connection failed or the response was not HTTP.
pub async fn get(
    host: &Host,
    o: &Origin,
    conn: &mut Option<Conn>,
    path: &str,
    keep: usize,
    close: bool,
) -> Result<Fetched, http::Error> {
    // A connection the server closed while idle (its FIN arrived: its
    // keep-alive timeout) is not reused, as browsers check before reusing.
    let open = conn
        .as_ref()
        .is_some_and(|c| c.stream.state() == Ok(elvis_api::stack::tcp::tcb::State::Established));
    if !open {
        *conn = None;
    }
    let reused = conn.is_some();
    match get_once(host, o, conn, path, keep, close).await {
        Err(http::Error::Closed | http::Error::Socket(_)) if reused => {
            *conn = None;
            get_once(host, o, conn, path, keep, close).await
        }
        r => r,
    }
}

async fn get_once(
    host: &Host,
    o: &Origin,
    slot: &mut Option<Conn>,
    path: &str,
    keep: usize,
    close: bool,
) -> Result<Fetched, http::Error> {
    let mut c = match slot.take() {
        Some(c) => c,
        None => connect(host, o).await?,
    };
    let req = Request::get(&o.name, path, close);
    c.stream.write_all(Message::from_vec(req.emit())).await?;
    let res = c.reader.response(&c.stream, "GET").await?;
    let (bytes, body) = c.reader.body(&c.stream, res.framing, keep).await?;
    if !(res.close || close) {
        *slot = Some(c);
    }
    Ok(Fetched {
        status: res.status,
        bytes,
        body,
    })
}
