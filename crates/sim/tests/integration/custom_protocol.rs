use elvis_sim::stack::custom::*;
use elvis_sim::{Host, Message, NetworkConfig, Simulation, Time};
use std::cell::RefCell;
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::time::Duration;

/// Echoes datagrams back; counts what it answered.
struct Echo {
    answered: Rc<RefCell<u32>>,
}
impl Protocol for Echo {
    fn name(&self) -> &'static str {
        "echo"
    }
    fn ip_protocol(&self) -> u8 {
        253
    }
    fn demux(&mut self, cx: &mut ProtocolCtx<'_>, src: Ipv4Addr, _dst: Ipv4Addr, msg: Message) {
        *self.answered.borrow_mut() += 1;
        cx.push(src, msg).unwrap();
    }
}

/// Collects replies and wakes the waiting task; also ticks a timer.
struct Collect {
    got: Rc<RefCell<Vec<Vec<u8>>>>,
    waiter: Rc<RefCell<Option<u32>>>,
    ticks: Rc<RefCell<Vec<Time>>>,
}
impl Protocol for Collect {
    fn name(&self) -> &'static str {
        "collect"
    }
    fn ip_protocol(&self) -> u8 {
        253
    }
    fn demux(&mut self, cx: &mut ProtocolCtx<'_>, _src: Ipv4Addr, _dst: Ipv4Addr, msg: Message) {
        self.got.borrow_mut().push(msg.to_vec());
        if self.got.borrow().len() == 1 {
            cx.set_timer(Duration::from_millis(5), 7);
        }
        if let Some(t) = *self.waiter.borrow() {
            cx.wake(t);
        }
    }
    fn on_timer(&mut self, cx: &mut ProtocolCtx<'_>, token: u64) {
        assert_eq!(token, 7);
        self.ticks.borrow_mut().push(cx.now());
    }
}

#[test]
fn a_user_protocol_receives_its_datagrams_sends_and_sets_timers() {
    let mut sim = Simulation::new(1);
    let lan = sim.add_network(NetworkConfig::ideal("lan").with_rate(1_000_000_000, 1_000));
    let a = sim.add_machine("a");
    let b = sim.add_machine("b");
    sim.attach(a, lan, Ipv4Addr::new(10, 0, 0, 1)).unwrap();
    sim.attach(b, lan, Ipv4Addr::new(10, 0, 0, 2)).unwrap();
    let answered = Rc::new(RefCell::new(0));
    let got = Rc::new(RefCell::new(Vec::new()));
    let waiter = Rc::new(RefCell::new(None));
    let ticks = Rc::new(RefCell::new(Vec::new()));
    sim.add_protocol(
        b,
        Box::new(Echo {
            answered: answered.clone(),
        }),
    )
    .unwrap();
    sim.add_protocol(
        a,
        Box::new(Collect {
            got: got.clone(),
            waiter: waiter.clone(),
            ticks: ticks.clone(),
        }),
    )
    .unwrap();
    let (got2, waiter2) = (got.clone(), waiter.clone());
    sim.spawn(a, "client", move |h: Host| async move {
        *waiter2.borrow_mut() = h.task_id();
        for i in 0..3u8 {
            h.send_ip(Ipv4Addr::new(10, 0, 0, 2), 253, vec![i; 100])?;
        }
        // Waits on the protocol's state; only its wake-ups re-poll us.
        std::future::poll_fn(|_| {
            if got2.borrow().len() < 3 {
                std::task::Poll::Pending
            } else {
                std::task::Poll::Ready(())
            }
        })
        .await;
        Ok(())
    });
    let report = sim.run();
    assert!(report.success(), "{:?}", report.problems);
    assert_eq!(*answered.borrow(), 3);
    assert_eq!(
        *got.borrow(),
        vec![vec![0u8; 100], vec![1u8; 100], vec![2u8; 100]]
    );
    assert_eq!(ticks.borrow().len(), 1);
    // The timer fired 5 ms after the first reply arrived.
    assert_eq!(report.sim_time_ns, ticks.borrow()[0].as_nanos());
    assert!(
        report.sim_time_ns > 5_000_000 && report.sim_time_ns < 6_000_000,
        "{}",
        report.sim_time_ns
    );
}
