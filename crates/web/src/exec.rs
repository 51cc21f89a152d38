//! Concurrency inside one application task: [`Jobs`] (a server's
//! connections, a user's parallel connections) and [`Workers`] (the
//! server's `max_workers` limit, with a FIFO of requests waiting).
//!
//! Every elvis socket future parks the *task*, so any event for any job
//! wakes the whole application and [`Jobs::poll`] polls every job, in the
//! order they were added (deterministic). A worker given back may let a
//! job polled earlier in the round go on; the round is then repeated.

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
/// (Apache's `MaxRequestWorkers`; past it, requests queue).
#[derive(Debug)]
pub struct Workers {
    max: u32,
    busy: Cell<u32>,
    queue: RefCell<VecDeque<u64>>,
    next: Cell<u64>,
    kick: Rc<Cell<bool>>,
}

impl Workers {
    /// `max` workers (0: no limit), rounds repeated through `kick`.
    pub fn new(max: u32, kick: Rc<Cell<bool>>) -> Rc<Workers> {
        Rc::new(Workers {
            max,
            busy: Cell::new(0),
            queue: RefCell::new(VecDeque::new()),
            next: Cell::new(0),
            kick,
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
        self.max != 0 && self.busy.get() >= self.max || !self.queue.borrow().is_empty()
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
            w.queue.borrow_mut().push_back(t);
            t
        });
        let free = w.max == 0 || w.busy.get() < w.max;
        if free && w.queue.borrow().front() == Some(&ticket) {
            w.queue.borrow_mut().pop_front();
            self.ticket = None;
            w.busy.set(w.busy.get() + 1);
            // The next in line may fit too.
            w.kick.set(true);
            return Poll::Ready(Permit { w });
        }
        Poll::Pending
    }
}

impl Drop for Acquire {
    fn drop(&mut self) {
        if let Some(t) = self.ticket {
            self.w.queue.borrow_mut().retain(|&x| x != t);
            self.w.kick.set(true);
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
        self.w.kick.set(true);
    }
}
