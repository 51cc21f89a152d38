//! Micro benchmarks of the packet path: headers pushed and popped around a
//! shared payload, and the clone a network hop costs.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use elvis_message::Message;

fn udp_ip_eth(c: &mut Criterion) {
    let payload = Message::from_static(b"Hello!");
    c.bench_function("push 8+20+14 then pop 14+20+8", |b| {
        let mut m = payload.clone();
        b.iter(|| {
            let m = black_box(&mut m);
            m.push_front(8)[0] = 1;
            m.push_front(20)[0] = 0x45;
            m.push_front(14)[12] = 8;
            black_box(&*m);
            m.pop_front(14).unwrap();
            m.pop_front(20).unwrap();
            m.pop_front(8).unwrap();
        })
    });
    c.bench_function("send and receive a padded frame (clone per hop)", |b| {
        b.iter(|| {
            let mut m = black_box(&payload).clone();
            m.push_front(8)[0] = 1;
            m.push_front(20)[0] = 0x45;
            m.push_front(14)[12] = 8;
            m.pad_to(60);
            let mut rx = m.clone();
            drop(m);
            let ip = rx.front(34).unwrap()[14];
            rx.truncate(48);
            rx.pop_front(42).unwrap();
            black_box((ip, rx))
        })
    });
    let big = Message::from_vec(vec![7; 1460]);
    c.bench_function("clone of a one-chunk message", |b| {
        b.iter(|| black_box(black_box(&big).clone()))
    });
}

criterion_group!(benches, udp_ip_eth);
criterion_main!(benches);
