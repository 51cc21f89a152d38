//! `http_flood`: an HTTP GET flood (a layer-7 DDoS), the attack of tools
//! such as LOIC's HTTP mode and HULK: well-formed GETs for `url`, sent as
//! fast as the server answers them, to hold its workers and fill its
//! queue so that legitimate requests wait.
//!
//! - `parallel = N` (closed loop): N connections, each sending its next
//!   GET as soon as the last response is in.
//! - `rate = R` (open loop): a GET started every `1/R` s whatever the
//!   server does, each on an idle kept connection if there is one, else
//!   on a new one.
//!
//! With `keepalive` (the default) connections persist between requests;
//! without, each GET is its own connection (`Connection: close`). Every
//! response is read to its end (the attacker must, to keep its
//! connection in sync). It ends after `count` requests, after `duration`,
//! or at its `stop`; each request runs in a task of its own
//! (`Host::spawn`), and they all end with the application.
//!
//! Metrics (per group, [`crate::stats`]): `requests` (sent), `responses`
//! (read whole), `non_200`, `errors` (failed connections or responses).

use crate::client::{self, Conn, Origin};
use crate::stats::Recorder;
use elvis_api::executor::{current_task, TaskId};
use elvis_api::{AppResult, Host, Time};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

/// How requests are started.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// This many started per second.
    Rate(f64),
    /// This many connections, each one request at a time.
    Parallel(u32),
}

/// Options of `http_flood`.
#[derive(Clone, Debug)]
pub struct Config {
    pub origin: Origin,
    pub path: String,
    pub mode: Mode,
    /// Persistent connections (`false`: one per request).
    pub keepalive: bool,
    /// Requests to send (`None`: until `duration` or stopped).
    pub count: Option<u64>,
    pub duration: Option<Duration>,
    pub stats: Rc<Recorder>,
}

const COUNTS: [&str; 4] = ["requests", "responses", "non_200", "errors"];

/// What the application's tasks share.
struct Shared {
    host: Host,
    cfg: Rc<Config>,
    /// Whether the application still runs (false once its main task is
    /// dropped, at its `stop`).
    alive: Cell<bool>,
    end: Option<Time>,
    sent: Cell<u64>,
    /// Idle kept connections (rate mode).
    idle: RefCell<Vec<Conn>>,
    /// The request tasks started and not yet ended.
    running: Cell<usize>,
    /// The ids of those that have run, and the main task's.
    tasks: RefCell<Vec<TaskId>>,
    main: Option<TaskId>,
}

impl Shared {
    /// Takes the right to send one more request, if any is left.
    fn take(&self) -> bool {
        let more = self.alive.get()
            && self.cfg.count.is_none_or(|c| self.sent.get() < c)
            && self.end.is_none_or(|e| self.host.now() < e);
        if more {
            self.sent.set(self.sent.get() + 1);
        }
        more
    }

    /// Sends one GET on `conn` (a new connection if `None`).
    async fn get(&self, conn: &mut Option<Conn>) {
        let stats = &self.cfg.stats;
        stats.add("requests", 1);
        let close = !self.cfg.keepalive;
        match client::get(&self.host, &self.cfg.origin, conn, &self.cfg.path, 0, close).await {
            Ok(f) => {
                stats.add("responses", 1);
                if f.status != 200 {
                    stats.add("non_200", 1);
                }
            }
            Err(_) => stats.add("errors", 1),
        }
    }
}

/// Ends the application's request tasks when its main task is dropped.
struct Guard(Rc<Shared>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.alive.set(false);
        for &t in self.0.tasks.borrow().iter() {
            self.0.host.wake(t);
        }
    }
}

/// Runs `job` as a task of its own that ends early, dropping its
/// connection, when the application stops.
fn spawn(sh: &Rc<Shared>, job: impl Future<Output = ()> + 'static) {
    let job = Cancel {
        sh: sh.clone(),
        job: Box::pin(job),
        id: None,
    };
    sh.running.set(sh.running.get() + 1);
    // On failure the job is dropped, which counts it out again.
    if sh.host.spawn(job).is_err() {
        sh.cfg.stats.add("errors", 1);
    }
}

/// A request task: polls its job while the application is alive.
struct Cancel {
    sh: Rc<Shared>,
    job: Pin<Box<dyn Future<Output = ()>>>,
    id: Option<TaskId>,
}

impl Future for Cancel {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.id.is_none() {
            self.id = current_task();
            if let Some(t) = self.id {
                self.sh.tasks.borrow_mut().push(t);
            }
        }
        if !self.sh.alive.get() || self.job.as_mut().poll(cx).is_ready() {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

impl Drop for Cancel {
    fn drop(&mut self) {
        self.sh.running.set(self.sh.running.get() - 1);
        if let Some(t) = self.id {
            self.sh.tasks.borrow_mut().retain(|&x| x != t);
        }
        if let Some(m) = self.sh.main {
            self.sh.host.wake(m);
        }
    }
}

/// Floods until done or stopped.
///
/// # Errors
/// None of its own: failures are counted in `errors`.
pub async fn run(host: Host, cfg: Rc<Config>) -> AppResult {
    cfg.stats.open(&host, &COUNTS, &[]);
    let sh = Rc::new(Shared {
        host,
        end: cfg.duration.map(|d| host.now() + d),
        cfg: cfg.clone(),
        alive: Cell::new(true),
        sent: Cell::new(0),
        idle: RefCell::default(),
        running: Cell::new(0),
        tasks: RefCell::default(),
        main: current_task(),
    });
    let _guard = Guard(sh.clone());
    match cfg.mode {
        Mode::Parallel(n) => {
            for _ in 0..n.max(1) {
                let s = sh.clone();
                spawn(&sh, async move {
                    let mut conn = None;
                    while s.take() {
                        s.get(&mut conn).await;
                    }
                });
            }
        }
        Mode::Rate(rate) => {
            let t0 = host.now();
            let mut i = 0u64;
            while sh.take() {
                let s = sh.clone();
                spawn(&sh, async move {
                    let mut conn = s.idle.borrow_mut().pop();
                    s.get(&mut conn).await;
                    if let Some(c) = conn {
                        s.idle.borrow_mut().push(c);
                    }
                });
                i += 1;
                let at = t0 + Duration::from_nanos(((i as f64) * 1e9 / rate) as u64);
                match sh.end {
                    Some(e) if e <= at => host.sleep_until(e).await,
                    _ => host.sleep_until(at).await,
                }
            }
        }
    }
    // Wait for the requests in flight.
    std::future::poll_fn(|_| {
        if sh.running.get() == 0 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    Ok(())
}
