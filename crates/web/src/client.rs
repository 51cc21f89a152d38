//! The client side shared by `web_user` and `http_load`: persistent
//! connections, one request at a time on each, and `http://` URLs.

use crate::http::{self, Reader, Request};
use elvis_api::{Host, Message, TcpStream};
use std::net::{Ipv4Addr, SocketAddrV4};

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
}

impl Origin {
    /// An origin at `ip`:`port` named `name`.
    pub fn new(ip: Ipv4Addr, port: u16, name: &str) -> Origin {
        Origin {
            addr: SocketAddrV4::new(ip, port),
            name: name.to_string(),
        }
    }
}

/// Opens a connection to `o`.
///
/// # Errors
/// The connection failed.
pub async fn connect(host: &Host, o: &Origin) -> Result<Conn, http::Error> {
    let stream = host.tcp_connect(o.addr).await?;
    stream.set_nodelay(true)?;
    Ok(Conn {
        stream,
        reader: Reader::new(),
    })
}

/// GETs `path` on `conn` (opening one if `None`), keeping the first
/// `keep` body bytes; with `close`, asks the server to close after it.
/// The connection is left in `conn` if it may be used again. A reused
/// connection the server closed while idle (its keep-alive timeout) is
/// replaced once, as browsers do.
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
