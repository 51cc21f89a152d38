//! Broadcast, multicast and ARP.

use crate::common::*;
use elvis_sim::{Host, MachineId, NetworkConfig, Protocols, Simulation};
use std::net::Ipv4Addr;
use std::time::Duration;

const GROUP: Ipv4Addr = Ipv4Addr::new(239, 1, 2, 3);

/// Six machines on `cfg`; machine 0 sends to `to`; machines in `joined`
/// join [`GROUP`] first. Returns who received the datagram.
fn fan_out(cfg: NetworkConfig, to: Ipv4Addr, joined: &[u32]) -> Vec<u32> {
    let mut sim = Simulation::new(8);
    let lan = sim.add_network(cfg);
    let first = sim.add_group("m", Some(6), Protocols::UDP).unwrap();
    let got = log::<u32>();
    for i in 0..6 {
        sim.attach(first + i, lan, nth_ip(i)).unwrap();
        let rx = got.clone();
        let join = joined.contains(&i);
        sim.spawn_daemon(first + i, "listen", move |host: Host| async move {
            if join {
                host.join_multicast(GROUP)?;
            }
            let sock = host.udp_bind(9)?;
            let (msg, from) = sock.recv_from().await?;
            assert_eq!(msg.to_vec(), b"to many");
            assert_eq!(*from.ip(), nth_ip(0));
            rx.borrow_mut().push(i);
            Ok(())
        });
    }
    sim.spawn(first, "send", move |host: Host| async move {
        let sock = host.udp_bind(0)?;
        host.sleep(Duration::from_micros(1)).await;
        sock.send_to(b"to many".to_vec(), sa(to, 9)).await?;
        Ok(())
    });
    let report = sim.run();
    assert_success(&report);
    let mut got = got.borrow().clone();
    got.sort_unstable();
    got
}

fn lans() -> [NetworkConfig; 2] {
    [
        switch("ideal", None, 1_000),
        switch("rated", Some(100_000_000), 1_000),
    ]
}

#[test]
fn a_broadcast_datagram_reaches_every_other_machine() {
    for cfg in lans() {
        let name = cfg.name.clone();
        assert_eq!(
            fan_out(cfg, Ipv4Addr::BROADCAST, &[2]),
            vec![1, 2, 3, 4, 5],
            "{name}"
        );
    }
}

#[test]
fn a_multicast_datagram_reaches_only_the_members_of_its_group() {
    for cfg in lans() {
        let name = cfg.name.clone();
        assert_eq!(fan_out(cfg.clone(), GROUP, &[1, 4]), vec![1, 4], "{name}");
        assert_eq!(fan_out(cfg.clone(), GROUP, &[]), Vec::<u32>::new());
        // Another group does not reach them.
        let other = Ipv4Addr::new(239, 9, 9, 9);
        assert_eq!(fan_out(cfg, other, &[1, 4]), Vec::<u32>::new(), "{name}");
    }
}

const ARP: Protocols = Protocols {
    arp: true,
    udp: true,
    tcp: false,
};

/// Spawns an exchange: `from` sends one datagram to `to` (listening on
/// port 7), which sends it back.
fn exchange(sim: &mut Simulation, from: MachineId, to: MachineId, to_ip: Ipv4Addr) {
    sim.spawn(to, "echo", |host: Host| async move {
        let sock = host.udp_bind(7)?;
        let (msg, peer) = sock.recv_from().await?;
        sock.send_to(msg, peer).await?;
        Ok(())
    });
    sim.spawn(from, "ask", move |host: Host| async move {
        let sock = host.udp_bind(0)?;
        sock.send_to(b"who".to_vec(), sa(to_ip, 7)).await?;
        assert_eq!(sock.recv().await?.to_vec(), b"who");
        Ok(())
    });
}

#[test]
fn machines_running_arp_resolve_each_other_with_one_request_and_one_reply() {
    let mut sim = Simulation::new(1);
    let lan = sim.add_network(switch("lan", Some(10_000_000), 1_000));
    let m = sim.add_group("arp", Some(2), ARP).unwrap();
    sim.attach(m, lan, nth_ip(0)).unwrap();
    sim.attach(m + 1, lan, nth_ip(1)).unwrap();
    exchange(&mut sim, m, m + 1, nth_ip(1));
    let report = sim.run();
    assert_success(&report);
    // RFC 826: the target learns the asker from the request itself, so the
    // answer needs no second resolution.
    assert_eq!(report.packets.arp_sent, 2);
    assert_eq!(report.networks[0].stats.frames_sent, 4);
}

#[test]
fn a_machine_with_arp_talks_to_a_machine_without() {
    let mut sim = Simulation::new(1);
    let lan = sim.add_network(switch("lan", None, 1_000));
    let with = sim.add_group("with", None, ARP).unwrap();
    let without = sim.add_machine("without");
    sim.attach(with, lan, nth_ip(0)).unwrap();
    sim.attach(without, lan, nth_ip(1)).unwrap();
    exchange(&mut sim, with, without, nth_ip(1));
    let report = sim.run();
    assert_success(&report);
    // The ARP machine asks, the plain one answers; the plain one's reply
    // needs no ARP (static table).
    assert_eq!(report.packets.arp_sent, 2);

    // The other way round: the ARP machine must resolve the plain one to
    // answer it.
    let mut sim = Simulation::new(1);
    let lan = sim.add_network(switch("lan", None, 1_000));
    let with = sim.add_group("with", None, ARP).unwrap();
    let without = sim.add_machine("without");
    sim.attach(with, lan, nth_ip(0)).unwrap();
    sim.attach(without, lan, nth_ip(1)).unwrap();
    exchange(&mut sim, without, with, nth_ip(0));
    let report = sim.run();
    assert_success(&report);
    assert_eq!(report.packets.arp_sent, 2);
}

#[test]
fn arp_gives_up_after_three_unanswered_requests() {
    // A link that loses every frame: the peer exists in the neighbour
    // table but never answers.
    let mut cfg = link("void", None, 1_000);
    cfg.loss = 1.0;
    let mut sim = Simulation::new(1);
    let lan = sim.add_network(cfg);
    let asker = sim.add_group("asker", None, ARP).unwrap();
    let peer = sim.add_machine("peer");
    sim.attach(asker, lan, nth_ip(0)).unwrap();
    sim.attach(peer, lan, nth_ip(1)).unwrap();
    sim.spawn(asker, "send", |host: Host| async move {
        let sock = host.udp_bind(0)?;
        // Five datagrams wait for one resolution: three are held (Linux
        // keeps a few), two are dropped at once.
        for _ in 0..5 {
            sock.send_to(b"anyone?".to_vec(), sa(nth_ip(1), 7)).await?;
        }
        Ok(())
    });
    let report = sim.run();
    assert_success(&report);
    assert_eq!(report.packets.arp_sent, 3, "three requests");
    assert_eq!(dropped(&report, "loss"), 3, "all three lost");
    assert_eq!(dropped(&report, "arp_queue_full"), 2);
    assert_eq!(dropped(&report, "arp_failed"), 3);
    // Requests at 0, 1 s and 2 s; the give-up at 3 s ends the run.
    assert_eq!(report.sim_time_ns, 3_000_000_000);
}
