//! HTTP/1.1 messages (RFC 9110 semantics, RFC 9112 syntax): request and
//! response heads as real header bytes, bodies framed by `Content-Length`
//! or the chunked transfer coding, persistent connections and
//! `Connection: close`.
//!
//! The pure half parses and emits bytes ([`parse_request`],
//! [`parse_response`], [`Request::emit`], [`Response::emit`],
//! [`chunked`], [`decode_chunked`]); heads are parsed with `httparse`.
//! The async half, [`Reader`], reads heads and bodies from an elvis
//! [`TcpStream`]. A body of virtual payload (`Message::zeros`) is counted
//! and dropped without ever being materialized; only heads, chunk-size
//! lines and bodies asked for as bytes (HTML) are copied.
//!
//! # Gaps
//! - No pipelining (a client waits for each response before the next
//!   request), no `Expect: 100-continue`, no request bodies (GET and HEAD
//!   only), no trailers beyond skipping them, no obs-fold.

use elvis_api::{Message, SocketError, TcpStream};
use std::fmt;

/// The longest head (request or status line plus header fields) accepted.
pub const MAX_HEAD: usize = 16 * 1024;
/// The most header fields in a head.
pub const MAX_HEADERS: usize = 32;
/// The longest chunk-size line (size and extensions).
pub const MAX_CHUNK_LINE: usize = 1024;

/// Why a message could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The bytes are not HTTP/1.1 (with what httparse or the framing said).
    Malformed(String),
    /// The head is longer than [`MAX_HEAD`].
    HeadTooLong,
    /// The connection ended inside a message.
    Closed,
    /// The socket failed.
    Socket(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Malformed(why) => write!(f, "malformed HTTP message: {why}"),
            Error::HeadTooLong => write!(f, "HTTP head longer than {MAX_HEAD} bytes"),
            Error::Closed => write!(f, "the connection closed inside an HTTP message"),
            Error::Socket(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<SocketError> for Error {
    fn from(e: SocketError) -> Self {
        Error::Socket(e.to_string())
    }
}

/// How a message's body is delimited (RFC 9112 §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length: n` (or no body: 0).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// A response without either: the body runs to the end of the
    /// connection.
    UntilClose,
}

/// A parsed request head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// The `Host` field, if any.
    pub host: Option<String>,
    /// Whether the client asked to close after this exchange
    /// (`Connection: close`, or HTTP/1.0 without keep-alive).
    pub close: bool,
    /// The request's own body (GET and HEAD carry none; a length is
    /// still honoured so that the connection stays in sync).
    pub framing: Framing,
}

/// A parsed response head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub close: bool,
    pub framing: Framing,
}

/// Returns the reason phrase of `status`.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

impl Request {
    /// A `GET path` request for `host`.
    pub fn get(host: &str, path: &str, close: bool) -> Request {
        Request {
            method: "GET".into(),
            path: path.into(),
            host: Some(host.into()),
            close,
            framing: Framing::Length(0),
        }
    }

    /// Returns the request head's bytes (no body).
    pub fn emit(&self) -> Vec<u8> {
        let mut s = format!("{} {} HTTP/1.1\r\n", self.method, self.path);
        if let Some(h) = &self.host {
            s.push_str(&format!("Host: {h}\r\n"));
        }
        s.push_str("User-Agent: elvis-web/0.1\r\nAccept: */*\r\n");
        if self.close {
            s.push_str("Connection: close\r\n");
        }
        s.push_str("\r\n");
        s.into_bytes()
    }
}

impl Response {
    /// Returns the response head's bytes for a body of `framing`, of
    /// media type `content_type`.
    pub fn emit(&self, content_type: &str) -> Vec<u8> {
        let mut s = format!(
            "HTTP/1.1 {} {}\r\nServer: elvis-web/0.1\r\n",
            self.status,
            reason(self.status)
        );
        match self.framing {
            Framing::Length(n) => s.push_str(&format!("Content-Length: {n}\r\n")),
            Framing::Chunked => s.push_str("Transfer-Encoding: chunked\r\n"),
            Framing::UntilClose => {}
        }
        s.push_str(&format!("Content-Type: {content_type}\r\n"));
        if self.close {
            s.push_str("Connection: close\r\n");
        }
        s.push_str("\r\n");
        s.into_bytes()
    }
}

/// What the header fields say about framing and persistence.
struct Fields {
    framing: Option<Framing>,
    close: Option<bool>,
    host: Option<String>,
}

fn fields(headers: &[httparse::Header<'_>]) -> Result<Fields, Error> {
    let mut f = Fields {
        framing: None,
        close: None,
        host: None,
    };
    let bad = |why: &str| Error::Malformed(why.to_string());
    for h in headers {
        let value = std::str::from_utf8(h.value).map_err(|_| bad("a field value is not text"))?;
        let value = value.trim();
        if h.name.eq_ignore_ascii_case("content-length") {
            let n: u64 = value
                .parse()
                .map_err(|_| bad("Content-Length is not a number"))?;
            // RFC 9112 §6.3: differing lengths are an error.
            if matches!(f.framing, Some(Framing::Length(m)) if m != n) {
                return Err(bad("two different Content-Length fields"));
            }
            if f.framing != Some(Framing::Chunked) {
                f.framing = Some(Framing::Length(n));
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            // RFC 9112 §6.3: chunked must be the final coding; it
            // overrides Content-Length.
            let last = value.rsplit(',').next().unwrap_or("").trim();
            if !last.eq_ignore_ascii_case("chunked") {
                return Err(bad("a transfer coding other than chunked"));
            }
            f.framing = Some(Framing::Chunked);
        } else if h.name.eq_ignore_ascii_case("connection") {
            for t in value.split(',').map(str::trim) {
                if t.eq_ignore_ascii_case("close") {
                    f.close = Some(true);
                } else if t.eq_ignore_ascii_case("keep-alive") && f.close.is_none() {
                    f.close = Some(false);
                }
            }
        } else if h.name.eq_ignore_ascii_case("host") {
            f.host = Some(value.to_string());
        }
    }
    Ok(f)
}

/// Parses a request head at the start of `buf`: `Ok(None)` while it is
/// incomplete, else the request and the head's length.
///
/// # Errors
/// [`Error::Malformed`] (httparse's reason, or the framing's), or
/// [`Error::HeadTooLong`] for an incomplete head past [`MAX_HEAD`].
pub fn parse_request(buf: &[u8]) -> Result<Option<(Request, usize)>, Error> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => {
            let f = fields(req.headers)?;
            let version = req.version.unwrap_or(1);
            let request = Request {
                method: req.method.unwrap_or("").to_string(),
                path: req.path.unwrap_or("").to_string(),
                host: f.host,
                close: f.close.unwrap_or(version == 0),
                framing: f.framing.unwrap_or(Framing::Length(0)),
            };
            Ok(Some((request, n)))
        }
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => Err(Error::HeadTooLong),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(e) => Err(Error::Malformed(e.to_string())),
    }
}

/// Parses a response head at the start of `buf` to a request of method
/// `method` (a response to HEAD has no body): `Ok(None)` while
/// incomplete, else the response and the head's length.
///
/// # Errors
/// As [`parse_request`].
pub fn parse_response(buf: &[u8], method: &str) -> Result<Option<(Response, usize)>, Error> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut res = httparse::Response::new(&mut headers);
    match res.parse(buf) {
        Ok(httparse::Status::Complete(n)) => {
            let f = fields(res.headers)?;
            let status = res.code.unwrap_or(0);
            // RFC 9112 §6.3: 1xx, 204, 304 and answers to HEAD have no body.
            let bodiless = method == "HEAD" || status < 200 || status == 204 || status == 304;
            let framing = if bodiless {
                Framing::Length(0)
            } else {
                f.framing.unwrap_or(Framing::UntilClose)
            };
            let close = f.close.unwrap_or(res.version == Some(0)) || framing == Framing::UntilClose;
            Ok(Some((
                Response {
                    status,
                    close,
                    framing,
                },
                n,
            )))
        }
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => Err(Error::HeadTooLong),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(e) => Err(Error::Malformed(e.to_string())),
    }
}

/// Returns `data` in the chunked transfer coding (RFC 9112 §7.1) in
/// chunks of at most `chunk` bytes, ending with the last chunk and an
/// empty trailer section.
pub fn chunked(data: &[u8], chunk: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / chunk.max(1) * 8 + 8);
    for piece in data.chunks(chunk.max(1)) {
        out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        out.extend_from_slice(piece);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// Parses a chunk-size line at the start of `buf`: `Ok(None)` while
/// incomplete, else the chunk's size and the line's length.
///
/// # Errors
/// [`Error::Malformed`] for a line that is not a hex size (extensions are
/// allowed and ignored).
pub fn chunk_size(buf: &[u8]) -> Result<Option<(u64, usize)>, Error> {
    match httparse::parse_chunk_size(buf) {
        Ok(httparse::Status::Complete((n, size))) => Ok(Some((size, n))),
        Ok(httparse::Status::Partial) if buf.len() >= MAX_CHUNK_LINE => {
            Err(Error::Malformed("chunk-size line too long".into()))
        }
        Ok(httparse::Status::Partial) => Ok(None),
        Err(_) => Err(Error::Malformed("bad chunk size".into())),
    }
}

/// Parses the trailer section after the last chunk: `Ok(None)` while
/// incomplete, else its length (through the final empty line).
///
/// # Errors
/// [`Error::Malformed`] for trailer fields that do not parse.
pub fn trailers(buf: &[u8]) -> Result<Option<usize>, Error> {
    if buf.starts_with(b"\r\n") {
        return Ok(Some(2));
    }
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    match httparse::parse_headers(buf, &mut headers) {
        Ok(httparse::Status::Complete((n, _))) => Ok(Some(n)),
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => Err(Error::HeadTooLong),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(e) => Err(Error::Malformed(format!("trailer: {e}"))),
    }
}

/// Decodes a whole chunked body at the start of `buf`: `Ok(None)` while
/// incomplete, else the data and the coded length. `Reader::chunked`
/// does the same from a socket.
///
/// # Errors
/// [`Error::Malformed`] for a bad size line, a chunk not followed by
/// CRLF, or bad trailers.
pub fn decode_chunked(buf: &[u8]) -> Result<Option<(Vec<u8>, usize)>, Error> {
    let mut at = 0usize;
    let mut data = Vec::new();
    loop {
        let Some((size, n)) = chunk_size(&buf[at..])? else {
            return Ok(None);
        };
        at += n;
        if size == 0 {
            return Ok(trailers(&buf[at..])?.map(|t| (data, at + t)));
        }
        let Some(end) = usize::try_from(size).ok().and_then(|s| at.checked_add(s)) else {
            return Err(Error::Malformed("chunk larger than memory".into()));
        };
        if buf.len() < end + 2 {
            return Ok(None);
        }
        data.extend_from_slice(&buf[at..end]);
        if &buf[end..end + 2] != b"\r\n" {
            return Err(Error::Malformed("chunk data not followed by CRLF".into()));
        }
        at = end + 2;
    }
}

/// Reads HTTP messages from one connection, keeping what arrived past
/// the current message (the next response, or a body's start) for later.
#[derive(Default)]
pub struct Reader {
    buf: Message,
}

/// How much one `recv` asks for.
const RECV: usize = 256 * 1024;

impl Reader {
    /// Returns a reader with nothing buffered.
    pub fn new() -> Reader {
        Reader::default()
    }

    /// Reads more into the buffer; `false` at end of stream.
    async fn fill(&mut self, s: &TcpStream) -> Result<bool, Error> {
        let m = s.recv(RECV).await?;
        if m.is_empty() {
            return Ok(false);
        }
        self.buf.append(m);
        Ok(true)
    }

    /// Returns the buffered bytes' first `limit` (copied: a head may span
    /// chunks of the rope).
    fn prefix(&self, limit: usize) -> Vec<u8> {
        let mut v = vec![0; self.buf.len().min(limit)];
        let _ = self.buf.copy_to_slice(0, &mut v);
        v
    }

    /// Reads until `parse` finds a complete item (at most `limit` bytes)
    /// at the start of the buffer, and consumes it. `Ok(None)`: the
    /// stream ended cleanly before any byte of it (allowed only when
    /// `at_boundary`).
    async fn item<T>(
        &mut self,
        s: &TcpStream,
        at_boundary: bool,
        limit: usize,
        parse: impl Fn(&[u8]) -> Result<Option<(T, usize)>, Error>,
    ) -> Result<Option<T>, Error> {
        loop {
            if !self.buf.is_empty() {
                // Most items are short: a small prefix first, the whole
                // limit only when that is not enough.
                let short = self.prefix(limit.min(512));
                let found = match parse(&short)? {
                    None if self.buf.len() > short.len() => parse(&self.prefix(limit))?,
                    r => r,
                };
                if let Some((t, n)) = found {
                    let _ = self.buf.pop_front(n);
                    return Ok(Some(t));
                }
            }
            if !self.fill(s).await? {
                return if at_boundary && self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(Error::Closed)
                };
            }
        }
    }

    /// Reads the next request head; `Ok(None)` when the client closed the
    /// connection between requests.
    ///
    /// # Errors
    /// [`Error`]: malformed, too long, closed inside the head, socket.
    pub async fn request(&mut self, s: &TcpStream) -> Result<Option<Request>, Error> {
        self.item(s, true, MAX_HEAD, parse_request).await
    }

    /// Reads the next response head (to a request of `method`).
    ///
    /// # Errors
    /// As [`Reader::request`]; a close before the head is
    /// [`Error::Closed`].
    pub async fn response(&mut self, s: &TcpStream, method: &str) -> Result<Response, Error> {
        self.item(s, false, MAX_HEAD, |b| parse_response(b, method))
            .await?
            .ok_or(Error::Closed)
    }

    /// Reads `n` body bytes, appending the first of them to `out` while it
    /// holds fewer than `keep`; the rest are dropped without being copied
    /// (virtual payload stays virtual).
    async fn take(
        &mut self,
        s: &TcpStream,
        n: u64,
        out: &mut Vec<u8>,
        keep: usize,
    ) -> Result<(), Error> {
        let mut left = n;
        loop {
            let have = (self.buf.len() as u64).min(left) as usize;
            let copy = have.min(keep.saturating_sub(out.len()));
            if copy > 0 {
                let at = out.len();
                out.resize(at + copy, 0);
                let _ = self.buf.copy_to_slice(0, &mut out[at..]);
            }
            let _ = self.buf.pop_front(have);
            left -= have as u64;
            if left == 0 {
                return Ok(());
            }
            if !self.fill(s).await? {
                return Err(Error::Closed);
            }
        }
    }

    /// Reads a body framed by `framing`; returns its length and its first
    /// `keep` bytes (0: none are copied).
    ///
    /// # Errors
    /// As [`Reader::request`].
    pub async fn body(
        &mut self,
        s: &TcpStream,
        framing: Framing,
        keep: usize,
    ) -> Result<(u64, Vec<u8>), Error> {
        let mut out = Vec::new();
        match framing {
            Framing::Length(n) => {
                self.take(s, n, &mut out, keep).await?;
                Ok((n, out))
            }
            Framing::Chunked => {
                let n = self.chunked(s, &mut out, keep).await?;
                Ok((n, out))
            }
            Framing::UntilClose => {
                let mut n = 0;
                loop {
                    let have = self.buf.len() as u64;
                    self.take(s, have, &mut out, keep).await?;
                    n += have;
                    if !self.fill(s).await? {
                        return Ok((n, out));
                    }
                }
            }
        }
    }

    /// Reads a chunked body (RFC 9112 §7.1.3's decoding); returns its
    /// length.
    async fn chunked(
        &mut self,
        s: &TcpStream,
        out: &mut Vec<u8>,
        keep: usize,
    ) -> Result<u64, Error> {
        let mut total = 0u64;
        loop {
            let size = self
                .item(s, false, MAX_CHUNK_LINE, chunk_size)
                .await?
                .ok_or(Error::Closed)?;
            if size == 0 {
                self.item(s, false, MAX_HEAD, |b| Ok(trailers(b)?.map(|n| ((), n))))
                    .await?;
                return Ok(total);
            }
            self.take(s, size, out, keep).await?;
            total += size;
            let mut crlf = Vec::new();
            self.take(s, 2, &mut crlf, 2).await?;
            if crlf != b"\r\n" {
                return Err(Error::Malformed("chunk data not followed by CRLF".into()));
            }
        }
    }
}

/// Returns the `href` and `src` attribute values of an HTML page: the
/// links (`<a href>`) and the embedded images (`<img src>`), in order.
/// A small scanner over the bytes, enough for the pages `web_server`
/// writes and for ordinary markup; it does not decode entities.
pub fn links(html: &[u8]) -> (Vec<String>, Vec<String>) {
    let mut hrefs = Vec::new();
    let mut srcs = Vec::new();
    let mut at = 0;
    while let Some(open) = html[at..].iter().position(|&b| b == b'<') {
        let start = at + open + 1;
        let Some(close) = html[start..].iter().position(|&b| b == b'>') else {
            break;
        };
        let tag = &html[start..start + close];
        at = start + close;
        let starts = |p: &[u8]| tag.len() > p.len() && tag[..p.len()].eq_ignore_ascii_case(p);
        let (list, attr): (&mut Vec<String>, &[u8]) = if starts(b"a ") {
            (&mut hrefs, b"href=")
        } else if starts(b"img ") {
            (&mut srcs, b"src=")
        } else {
            continue;
        };
        let Some(i) = tag
            .windows(attr.len())
            .position(|w| w.eq_ignore_ascii_case(attr))
        else {
            continue;
        };
        let v = &tag[i + attr.len()..];
        let v = match v.first() {
            Some(&q @ (b'"' | b'\'')) => {
                let v = &v[1..];
                &v[..v.iter().position(|&b| b == q).unwrap_or(v.len())]
            }
            _ => {
                &v[..v
                    .iter()
                    .position(u8::is_ascii_whitespace)
                    .unwrap_or(v.len())]
            }
        };
        if !v.is_empty() {
            list.push(String::from_utf8_lossy(v).into_owned());
        }
    }
    (hrefs, srcs)
}

#[cfg(test)]
mod tests;
