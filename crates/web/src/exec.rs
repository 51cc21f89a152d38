//! Concurrency for the web applications: [`Jobs`] (an `http_load`'s
//! fetches in flight, inside its one task) and [`Workers`] (the server's
//! `max_workers` limit across its connection tasks, with a FIFO of
//! requests waiting).
//!
//! Every elvis socket future parks the *task*, so any event for any job
//! wakes the whole application and [`Jobs::poll`] polls every job, in the
//! order they were added (deterministic); a job may ask for another round
//! through the kick. A server instead starts a task per connection
//! (`Host::spawn`), polled only for its own events.

use elvis_api::executor::{current_task, TaskId};
use elvis_api::Host;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

/// Jobs polled together.
#[derive(Default)]
pub struct Jobs {
    jobs: Vec<Pin<Box<dyn Future<Output = ()>>>>,
    kick: Rc<Cell<bool>>,
}

impl Jobs {
    /// Returns an empty set whose rounds repeat while `kick` is set.
    pub fn new(kick: Rc<Cell<bool>>) -> Jobs {
        Jobs {
            jobs: Vec::new(),
            kick,
        }
    }

    /// Adds a job; it first runs at the next [`Jobs::poll`].
    pub fn push(&mut self, job: impl Future<Output = ()> + 'static) {
        self.jobs.push(Box::pin(job));
    }

    /// Returns how many jobs are unfinished.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Returns whether every job finished.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Polls every job, again while one of them set the kick, and drops
    /// those that finished.
    pub fn poll(&mut self, cx: &mut Context<'_>) {
        loop {
            self.kick.set(false);
            self.jobs.retain_mut(|j| j.as_mut().poll(cx).is_pending());
            if !self.kick.get() {
                return;
            }
        }
    }
}

/// A limit on requests served at once, with a FIFO of those waiting
/// (Apache's `MaxRequestWorkers`; past it, requests queue). Each waiter
/// is a task (a server's connection); a worker given back wakes the
/// first in line.
#[derive(Debug)]
pub struct Workers {
    host: Host,
    max: u32,
    busy: Cell<u32>,
    /// (ticket, task) of each request waiting, in arrival order.
    queue: RefCell<VecDeque<(u64, Option<TaskId>)>>,
    next: Cell<u64>,
}

impl Workers {
    /// `max` workers on `host` (0: no limit).
    pub fn new(host: Host, max: u32) -> Rc<Workers> {
        Rc::new(Workers {
            host,
            max,
            busy: Cell::new(0),
            queue: RefCell::new(VecDeque::new()),
            next: Cell::new(0),
        })
    }

    /// Returns how many requests wait for a worker.
    pub fn waiting(&self) -> usize {
        self.queue.borrow().len()
    }

    /// Returns how many workers are busy.
    pub fn busy(&self) -> u32 {
        self.busy.get()
    }

    /// Returns whether a new request would have to wait.
    pub fn full(&self) -> bool {
        !self.free() || !self.queue.borrow().is_empty()
    }

    fn free(&self) -> bool {
        self.max == 0 || self.busy.get() < self.max
    }

    /// Wakes the first in line if a worker is free for it.
    fn wake_next(&self) {
        if self.free() {
            if let Some(&(_, Some(t))) = self.queue.borrow().front() {
                self.host.wake(t);
            }
        }
    }

    /// Waits for a free worker, in arrival order.
    pub fn acquire(self: &Rc<Self>) -> Acquire {
        Acquire {
            w: self.clone(),
            ticket: None,
        }
    }
}

/// The future of [`Workers::acquire`].
pub struct Acquire {
    w: Rc<Workers>,
    ticket: Option<u64>,
}

impl Future for Acquire {
    type Output = Permit;
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Permit> {
        let w = self.w.clone();
        let ticket = *self.ticket.get_or_insert_with(|| {
            let t = w.next.get();
            w.next.set(t + 1);
            w.queue.borrow_mut().push_back((t, current_task()));
            t
        });
        if w.free() && w.queue.borrow().front().map(|e| e.0) == Some(ticket) {
            w.queue.borrow_mut().pop_front();
            self.ticket = None;
            w.busy.set(w.busy.get() + 1);
            // The next in line may fit too.
            w.wake_next();
            return Poll::Ready(Permit { w });
        }
        Poll::Pending
    }
}

impl Drop for Acquire {
    fn drop(&mut self) {
        if let Some(t) = self.ticket {
            self.w.queue.borrow_mut().retain(|e| e.0 != t);
            self.w.wake_next();
        }
    }
}

/// A worker, given back when dropped.
#[derive(Debug)]
pub struct Permit {
    w: Rc<Workers>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.w.busy.set(self.w.busy.get() - 1);
        self.w.wake_next();
    }
}
