//! A toy protocol above IPv4 and a toy application, added the way
//! `docs/architecture.md` describes, without touching the simulator:
//!
//! - **`Heartbeat`** (stack layer, `elvis_sim::stack::custom::Protocol`):
//!   IP protocol 253. A machine that hears `beat <n>` counts it, wakes
//!   the application waiting for beats, and `period` later answers
//!   `beat <n+1>`, up to `last`.
//! - **`watch`** (application layer, plain `async` on a `Host`): sends
//!   the first beat if told to, waits until its machine has heard `want`
//!   beats and publishes when.
//!
//! Two machines on a 10 Mbit/s, 5 ms link, a 100 ms period. Beat k
//! arrives at k × (5 ms + 48 µs) + (k − 1) × 100 ms: each crossing is the
//! latency plus the serialization of a minimum-size frame (60 bytes:
//! Ethernet, IPv4 and a 6-byte payload, padded).
//!
//! `cargo run --release -p elvis-sim --example heartbeat`; `cargo test`
//! runs its test.

use elvis_sim::stack::custom::{Protocol, ProtocolCtx};
use elvis_sim::{AppResult, Host, Message, NetworkConfig, NetworkKind, Simulation};
use std::cell::RefCell;
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::time::Duration;

/// What a machine's protocol and its application share.
#[derive(Default)]
struct Beats {
    heard: u32,
    /// The task waiting for beats.
    waiter: Option<u32>,
}

/// The toy protocol.
struct Heartbeat {
    peer: Ipv4Addr,
    period: Duration,
    last: u32,
    /// The beat to answer with when the timer fires.
    next: u32,
    beats: Rc<RefCell<Beats>>,
}

impl Protocol for Heartbeat {
    fn name(&self) -> &'static str {
        "heartbeat"
    }

    fn ip_protocol(&self) -> u8 {
        253
    }

    fn demux(&mut self, cx: &mut ProtocolCtx<'_>, _src: Ipv4Addr, _dst: Ipv4Addr, msg: Message) {
        let text = String::from_utf8(msg.to_vec()).unwrap_or_default();
        let Some(n) = text
            .strip_prefix("beat ")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            return;
        };
        let mut b = self.beats.borrow_mut();
        b.heard += 1;
        if let Some(task) = b.waiter.take() {
            cx.wake(task);
        }
        if n < self.last {
            self.next = n + 1;
            cx.set_timer(self.period, 0);
        }
    }

    fn on_timer(&mut self, cx: &mut ProtocolCtx<'_>, _token: u64) {
        let beat = format!("beat {}", self.next).into_bytes();
        // A full NIC drops the beat (counted in the report), like any
        // datagram the stack originates.
        let _ = cx.push(self.peer, Message::from_vec(beat));
    }
}

/// The toy application: sends the first beat (`first`), waits for `want`
/// beats, then publishes when.
async fn watch(
    host: Host,
    peer: Option<Ipv4Addr>,
    beats: Rc<RefCell<Beats>>,
    want: u32,
) -> AppResult {
    if let Some(peer) = peer {
        host.send_ip(peer, 253, b"beat 1".to_vec())?;
    }
    std::future::poll_fn(|_| {
        let mut b = beats.borrow_mut();
        if b.heard >= want {
            return std::task::Poll::Ready(());
        }
        b.waiter = host.task_id();
        std::task::Poll::Pending
    })
    .await;
    host.publish("heard_at_ns", host.now().as_nanos() as f64);
    Ok(())
}

/// Builds the two machines, runs, and returns who heard its third beat
/// when (ns), in the order they did.
fn run() -> Vec<(String, f64)> {
    let mut sim = Simulation::new(1);
    let link = sim.add_network(NetworkConfig {
        kind: NetworkKind::Link,
        ..NetworkConfig::ideal("link").with_rate(10_000_000, 5_000_000)
    });
    let ips = [Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2)];
    for (i, ip) in ips.iter().enumerate() {
        let m = sim.add_machine(&format!("m{i}"));
        sim.attach(m, link, *ip).expect("attach");
        let beats = Rc::new(RefCell::new(Beats::default()));
        let hb = Heartbeat {
            peer: ips[1 - i],
            period: Duration::from_millis(100),
            last: 6,
            next: 0,
            beats: beats.clone(),
        };
        sim.add_protocol(m, Box::new(hb)).expect("machine");
        let first = (i == 0).then_some(ips[1]);
        sim.spawn(m, "watch", move |host| watch(host, first, beats, 3));
    }
    let report = sim.run();
    assert!(report.success(), "{:?}", report.problems);
    (report.metrics.iter())
        .map(|m| (m.machine.clone(), m.value))
        .collect()
}

fn main() {
    for (machine, t) in run() {
        println!("{machine} heard its third beat at {:.3} ms", t / 1e6);
    }
}

#[test]
fn beats_arrive_one_crossing_plus_one_period_apart() {
    // m1 hears beats 1, 3, 5 and m0 beats 2, 4, 6: the third ones are
    // beats 5 and 6.
    let crossing = 5_000_000 + 48_000;
    let beat = |k: u64| (k * crossing + (k - 1) * 100_000_000) as f64;
    let want = [("m1".to_string(), beat(5)), ("m0".to_string(), beat(6))];
    assert_eq!(run(), want);
}
