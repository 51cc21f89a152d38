//! `web_server`: an HTTP/1.1 origin server (RFC 9110, RFC 9112).
//!
//! It serves `/obj/<size>` (that many bytes of virtual payload, with
//! `Content-Length`) and the pages of its model's site (`/page/<i>`, `/`:
//! real HTML, chunked; see [`crate::site`]). Other paths get 404,
//! methods other than GET and HEAD 405, bytes that are not HTTP 400 (and
//! the connection closes). Connections persist until the client sends
//! `Connection: close`, closes, or stays idle for `keepalive`.
//!
//! At most `max_workers` requests are served at once (Apache's
//! `MaxRequestWorkers`): a worker is held from the response's start until
//! its last byte is in the send buffer. Requests past that wait in a FIFO;
//! with `max_queue` set, a request that finds that many waiting gets 503.
//! The **server delay** of a request is the time from its head being
//! received to its response's start (the wait for a worker).
//!
//! With `service` set, a worker is held that long before each response
//! starts (the time a dynamic page takes to make: a backend's work).
//!
//! With a [`Video`] (`video_server`), it also serves the video's manifest
//! and segments ([`crate::video`]).
//!
//! With `limit_conn` set (nginx's `limit_conn` per client address), a
//! connection from an address that already has that many open is not
//! served: its first request is answered 503 (`Connection: close`)
//! without a worker, and it is closed; such connections are counted in
//! `limited`.
//!
//! Metrics (per group, [`crate::stats`]): `requests`, `responses_2xx`,
//! `responses_4xx`, `responses_5xx`, `connections`, `bytes_sent` (body
//! bytes), `limited` (only with `limit_conn`) and
//! `server_delay_p50_ns`/`_p90_ns`/`_p99_ns`.

use crate::exec::Workers;
use crate::http::{self, Framing, Reader, Request, Response};
use crate::model::Model;
use crate::site::{self, Resource};
use crate::stats::Recorder;
use crate::video::{self, Video};
use elvis_api::{AppResult, Host, Message, TcpStream};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::time::Duration;

/// Options of `web_server`.
#[derive(Clone, Debug)]
pub struct Config {
    pub port: u16,
    /// Requests served at once (0: no limit).
    pub max_workers: u32,
    /// Requests allowed to wait for a worker before 503 (`None`: any).
    pub max_queue: Option<usize>,
    /// The listen backlog.
    pub backlog: usize,
    /// How long an idle persistent connection is kept.
    pub keepalive: Duration,
    /// `SO_SNDBUF` of its connections (Apache's `SendBufferSize`; `None`:
    /// the stack's default, 4 MiB). A worker is held until its response
    /// is in this buffer, so a smaller one holds workers longer.
    pub sndbuf: Option<usize>,
    /// The congestion control of its connections (`TCP_CONGESTION` on the
    /// listening socket; `None`: the stack's default, CUBIC). Apache on
    /// Linux serves with CUBIC, IIS on Windows with Compound TCP.
    pub congestion: Option<elvis_api::Congestion>,
    /// The site's model and its page count.
    pub model: Rc<Model>,
    pub pages: u64,
    /// How long a worker works on a request before its response starts.
    pub service: Duration,
    /// Connections served at once per client address (`None`: any).
    pub limit_conn: Option<u32>,
    /// The video it serves, if any (`video_server`).
    pub video: Option<Rc<Video>>,
    /// The group's metrics.
    pub stats: Rc<Recorder>,
}

impl Config {
    /// The defaults: port 80, 150 workers (Apache's prefork default), no
    /// queue limit, backlog 511 (Apache's), keep-alive 5 s (Apache's
    /// `KeepAliveTimeout`), SURGE with 1,000 pages.
    pub fn new() -> Config {
        Config {
            port: 80,
            max_workers: 150,
            max_queue: None,
            backlog: 511,
            keepalive: Duration::from_secs(5),
            sndbuf: None,
            congestion: None,
            model: Rc::new(Model::surge()),
            pages: 1000,
            service: Duration::ZERO,
            limit_conn: None,
            video: None,
            stats: Rc::default(),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}

const COUNTS: [&str; 6] = [
    "requests",
    "responses_2xx",
    "responses_4xx",
    "responses_5xx",
    "connections",
    "bytes_sent",
];

/// Serves until the run ends.
///
/// # Errors
/// The port is taken, or the machine has no TCP.
pub async fn run(host: Host, cfg: Rc<Config>) -> AppResult {
    let mut sock = host.tcp_socket()?;
    if let Some(b) = cfg.sndbuf {
        sock.set_send_buffer_size(b);
    }
    if let Some(c) = cfg.congestion {
        sock.set_congestion(c);
    }
    sock.bind(cfg.port)?;
    let listener = sock.listen(cfg.backlog)?;
    let mut counts = COUNTS.to_vec();
    if cfg.limit_conn.is_some() {
        counts.push("limited");
    }
    cfg.stats.open(&host, &counts, &["server_delay"]);
    let workers = Workers::new(host, cfg.max_workers);
    let open: Rc<RefCell<BTreeMap<Ipv4Addr, u32>>> = Rc::default();
    loop {
        let (stream, peer) = listener.accept().await?;
        cfg.stats.add("connections", 1);
        let ip = *peer.ip();
        if cfg
            .limit_conn
            .is_some_and(|l| open.borrow().get(&ip).copied().unwrap_or(0) >= l)
        {
            cfg.stats.add("limited", 1);
            host.spawn(refuse(host, stream, cfg.clone()))?;
            continue;
        }
        *open.borrow_mut().entry(ip).or_insert(0) += 1;
        let held = Held {
            open: open.clone(),
            ip,
        };
        // A task per connection, as a threaded server has a thread: it
        // is polled only for its own connection's events.
        let (c, w) = (cfg.clone(), workers.clone());
        host.spawn(async move {
            serve(host, stream, c, w).await;
            drop(held);
        })?;
    }
}

/// A connection counted against its client's `limit_conn`, until dropped.
struct Held {
    open: Rc<RefCell<BTreeMap<Ipv4Addr, u32>>>,
    ip: Ipv4Addr,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut open = self.open.borrow_mut();
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// Answers a connection over its client's `limit_conn`: its first request
/// gets 503 and the connection closes (nginx's `limit_conn` status).
async fn refuse(host: Host, s: TcpStream, cfg: Rc<Config>) {
    let mut reader = Reader::new();
    let deadline = host.now() + cfg.keepalive;
    if let Some(Ok(Some(_))) = host.timeout_at(deadline, reader.request(&s)).await {
        cfg.stats.add("requests", 1);
        let _ = respond(&s, &cfg, 503, true, Message::new(), false).await;
    }
}

/// Serves one connection's requests until it closes.
async fn serve(host: Host, s: TcpStream, cfg: Rc<Config>, workers: Rc<Workers>) {
    let _ = s.set_nodelay(true);
    let mut reader = Reader::new();
    loop {
        let deadline = host.now() + cfg.keepalive;
        let req = match host.timeout_at(deadline, reader.request(&s)).await {
            None | Some(Ok(None)) | Some(Err(http::Error::Closed | http::Error::Socket(_))) => {
                return
            }
            Some(Err(_)) => {
                // Not HTTP: 400, then close (RFC 9112 §2.2).
                cfg.stats.add("requests", 1);
                let _ = respond(&s, &cfg, 400, true, Message::new(), false).await;
                return;
            }
            Some(Ok(Some(r))) => r,
        };
        let received = host.now();
        cfg.stats.add("requests", 1);
        // A request body (none is expected) is read and dropped.
        if !matches!(req.framing, Framing::Length(0))
            && reader.body(&s, req.framing, 0).await.is_err()
        {
            return;
        }
        if cfg
            .max_queue
            .is_some_and(|q| workers.full() && workers.waiting() >= q)
        {
            let _ = respond(&s, &cfg, 503, req.close, Message::new(), false).await;
            if req.close {
                return;
            }
            continue;
        }
        let permit = workers.acquire().await;
        cfg.stats
            .time("server_delay", host.now().as_nanos() - received.as_nanos());
        if !cfg.service.is_zero() {
            host.sleep(cfg.service).await;
        }
        let ok = answer(&s, &cfg, &req).await;
        drop(permit);
        if !ok || req.close {
            // Closing (`Connection: close` sent): the FIN follows the data.
            return;
        }
    }
}

/// Writes the response to `req`; `false` if the connection failed.
async fn answer(s: &TcpStream, cfg: &Config, req: &Request) -> bool {
    let head_only = req.method == "HEAD";
    if req.method != "GET" && !head_only {
        return respond(s, cfg, 405, req.close, Message::new(), false).await;
    }
    if let Some(v) = &cfg.video {
        if req.path.starts_with("/video/") {
            return answer_video(s, cfg, req, v, head_only).await;
        }
    }
    match site::resource(&req.path, cfg.pages) {
        None => {
            let body = Message::from_static(b"<html><body>Not Found</body></html>\n");
            respond(s, cfg, 404, req.close, body, head_only).await
        }
        Some(Resource::Object(n)) => {
            respond(s, cfg, 200, req.close, Message::zeros(n), head_only).await
        }
        Some(Resource::Page(i)) => {
            let page = site::page(&cfg.model, cfg.pages, i);
            let body = site::html(&page, i);
            respond_chunked(s, cfg, req.close, body, head_only).await
        }
    }
}

/// Writes the response to a `/video/…` request.
async fn answer_video(
    s: &TcpStream,
    cfg: &Config,
    req: &Request,
    v: &Video,
    head_only: bool,
) -> bool {
    match v.resource(&req.path) {
        None => {
            let body = Message::from_static(b"<html><body>Not Found</body></html>\n");
            respond(s, cfg, 404, req.close, body, head_only).await
        }
        Some(video::Resource::Manifest) => {
            let body = Message::from_vec(v.manifest().into_bytes());
            respond_as(s, cfg, 200, req.close, body, head_only, "text/plain").await
        }
        Some(video::Resource::Segment { rep, index }) => {
            // Zeros, not MP4: labelled as bytes, so that a dissector does
            // not try to decode them as video.
            let body = Message::zeros(v.size(rep, index));
            respond(s, cfg, 200, req.close, body, head_only).await
        }
    }
}

/// Writes a response with `Content-Length`.
async fn respond(
    s: &TcpStream,
    cfg: &Config,
    status: u16,
    close: bool,
    body: Message,
    head_only: bool,
) -> bool {
    let ty = if status == 200 {
        "application/octet-stream"
    } else {
        "text/html"
    };
    respond_as(s, cfg, status, close, body, head_only, ty).await
}

/// [`respond`] with the media type `ty`.
async fn respond_as(
    s: &TcpStream,
    cfg: &Config,
    status: u16,
    close: bool,
    body: Message,
    head_only: bool,
    ty: &str,
) -> bool {
    let r = Response {
        status,
        close,
        framing: Framing::Length(body.len() as u64),
    };
    let mut m = Message::from_vec(r.emit(ty));
    let n = if head_only { 0 } else { body.len() as u64 };
    if !head_only {
        m.append(body);
    }
    count_status(cfg, status);
    let ok = s.write_all(m).await.is_ok();
    cfg.stats.add("bytes_sent", n);
    ok
}

/// Writes a 200 response of HTML in the chunked coding: the real markup
/// in 4 KiB chunks, past [`site::REAL_FILL`] the rest (the virtual
/// filler) as one chunk.
async fn respond_chunked(
    s: &TcpStream,
    cfg: &Config,
    close: bool,
    mut body: Message,
    head_only: bool,
) -> bool {
    let r = Response {
        status: 200,
        close,
        framing: Framing::Chunked,
    };
    let mut m = Message::from_vec(r.emit("text/html; charset=utf-8"));
    let n = body.len() as u64;
    if !head_only {
        while !body.is_empty() {
            let piece = if n - (body.len() as u64) < site::REAL_FILL as u64 {
                4096
            } else {
                body.len()
            };
            let rest = body.split_off(body.len().min(piece));
            let len = body.len();
            m.append(Message::from_vec(format!("{len:x}\r\n").into_bytes()));
            m.append(std::mem::replace(&mut body, rest));
            m.append(Message::from_static(b"\r\n"));
        }
        m.append(Message::from_static(b"0\r\n\r\n"));
    }
    count_status(cfg, 200);
    let ok = s.write_all(m).await.is_ok();
    cfg.stats.add("bytes_sent", if head_only { 0 } else { n });
    ok
}

fn count_status(cfg: &Config, status: u16) {
    let name = match status {
        200..=299 => "responses_2xx",
        400..=499 => "responses_4xx",
        _ => "responses_5xx",
    };
    cfg.stats.add(name, 1);
}
