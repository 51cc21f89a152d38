//! Parallel runs give the report of a sequential run, byte for byte: on
//! random router trees with random latencies (zero ones among them, which
//! cannot be cut), random loss on some links (which cannot be cut
//! either), TCP transfers, UDP streams and pings.

use elvis_sim::parallel::run_parallel;
use elvis_sim::RunLimits;
use proptest::prelude::*;
use std::fmt::Write as _;

/// One random scenario's shape.
#[derive(Clone, Debug)]
struct Shape {
    /// Router `i + 1` hangs off router `parent[i] % (i + 1)`.
    parent: Vec<usize>,
    /// Per link (router links, then host links): a latency (µs; 0 is a
    /// link that cannot be cut) and whether it loses 1 % of its frames.
    links: Vec<(u64, bool)>,
    /// Per host: its router.
    host_router: Vec<usize>,
    /// Flows: (from host, to host, kind: 0 TCP, 1 UDP, 2 ping, size).
    flows: Vec<(usize, usize, u8, u32)>,
    seed: u64,
}

fn shape() -> impl Strategy<Value = Shape> {
    (2usize..7, 2usize..7).prop_flat_map(|(routers, hosts)| {
        (
            proptest::collection::vec(0usize..100, routers - 1),
            proptest::collection::vec(
                (
                    prop_oneof![Just(0u64), Just(20), Just(100), Just(500)],
                    proptest::bool::weighted(0.15),
                ),
                routers - 1 + hosts,
            ),
            proptest::collection::vec(0usize..100, hosts),
            proptest::collection::vec((0usize..100, 0usize..100, 0u8..3, 20u32..200), 1..6),
            0u64..1000,
        )
            .prop_map(move |(parent, links, host_router, flows, seed)| Shape {
                parent,
                links,
                host_router: host_router.into_iter().map(|r| r % routers).collect(),
                flows: flows
                    .into_iter()
                    .map(|(a, b, k, s)| (a % hosts, b % hosts, k, s))
                    .filter(|(a, b, _, _)| a != b)
                    .collect(),
                seed,
            })
    })
}

/// Returns the scenario's NDL.
fn ndl(s: &Shape) -> String {
    let routers = s.parent.len() + 1;
    let hosts = s.host_router.len();
    let mut t = format!("[Simulation seed='{}' until='60ms']\n[Networks]\n", s.seed);
    for (i, (lat, lossy)) in s.links.iter().enumerate() {
        let loss = if *lossy { " loss='0.01'" } else { "" };
        let _ = writeln!(
            t,
            "\t[Network id='l{i}' type='link' bandwidth='100Mbps' latency='{lat}us'{loss}]\n\t\t[IP subnet='10.{}.{}.0/30']",
            i / 200,
            i % 200
        );
    }
    let addr = |link: usize, end: u8| format!("10.{}.{}.{end}", link / 200, link % 200);
    t.push_str("[Machines]\n");
    for r in 0..routers {
        let _ = writeln!(t, "\t[Machine name='r{r}' forward='yes']\n\t\t[Networks]");
        if r > 0 {
            let _ = writeln!(t, "\t\t\t[Network id='l{}' ip='{}']", r - 1, addr(r - 1, 2));
        }
        for (c, p) in s.parent.iter().enumerate() {
            if p % (c + 1) == r {
                let _ = writeln!(t, "\t\t\t[Network id='l{c}' ip='{}']", addr(c, 1));
            }
        }
        for (h, hr) in s.host_router.iter().enumerate() {
            if *hr == r {
                let l = routers - 1 + h;
                let _ = writeln!(t, "\t\t\t[Network id='l{l}' ip='{}']", addr(l, 1));
            }
        }
    }
    for h in 0..hosts {
        let l = routers - 1 + h;
        let _ = writeln!(
            t,
            "\t[Machine name='h{h}']\n\t\t[Networks]\n\t\t\t[Network id='l{l}' ip='{}']\n\t\t[Protocols]\n\t\t\t[Protocol name='IPv4']\n\t\t\t[Protocol name='ICMP']\n\t\t\t[Protocol name='UDP']\n\t\t\t[Protocol name='TCP']\n\t\t[Applications]",
            addr(l, 2)
        );
        for (i, (from, to, kind, size)) in s.flows.iter().enumerate() {
            let port = 5000 + i;
            if *from == h {
                let app = match kind {
                    0 => format!("name='bulk_send' to='h{to}' port='{port}' bytes='{}KB'", size / 4 + 1),
                    1 => format!(
                        "name='mgen' to='h{to}' port='{port}' pattern='periodic' rate='1000' size='{size}' duration='30ms'"
                    ),
                    _ => format!("name='ping' to='h{to}' count='5' interval='2ms'"),
                };
                let _ = writeln!(t, "\t\t\t[Application {app}]");
            }
            if *to == h {
                match kind {
                    0 => {
                        let _ = writeln!(
                            t,
                            "\t\t\t[Application name='bulk_receive' port='{port}' bytes='{}KB']",
                            size / 4 + 1
                        );
                    }
                    1 => {
                        let _ = writeln!(t, "\t\t\t[Application name='mgen_sink' port='{port}']");
                    }
                    _ => {}
                }
            }
        }
    }
    t
}

/// Runs `text` on `threads` threads; returns the report as JSON without
/// its `performance` section, and the partitions run.
fn run(text: &str, threads: usize) -> (serde_json::Value, u64) {
    let sc = elvis_ndl::parse(text, "random.ndl").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let make = || elvis_build::build(&sc, None).expect("builds").sim;
    let mut built =
        elvis_build::build(&sc, None).unwrap_or_else(|e| panic!("{}\n{text}", e.message));
    let limits = RunLimits { until: built.until };
    let report = run_parallel(threads, &mut built.sim, make, limits, &mut |_| {});
    let parts = report
        .performance
        .parallel
        .as_ref()
        .map_or(1, |p| p.partitions);
    let mut v = serde_json::to_value(&report).expect("serializes");
    v.as_object_mut().expect("an object").remove("performance");
    (v, parts)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]
    #[test]
    fn a_parallel_run_reports_what_a_sequential_one_does(s in shape()) {
        let text = ndl(&s);
        let (one, _) = run(&text, 1);
        for threads in [2, 3, 4] {
            let (many, _) = run(&text, threads);
            prop_assert!(one == many, "{threads} threads differ on\n{text}");
        }
    }
}

#[test]
fn a_tree_with_latency_is_split_and_reports_as_one_thread() {
    let s = Shape {
        parent: vec![0, 0, 1, 2],
        links: vec![(100, false); 4 + 4],
        host_router: vec![3, 4, 3, 4],
        flows: vec![(0, 1, 0, 150), (2, 3, 0, 150), (1, 2, 1, 100), (3, 0, 2, 0)],
        seed: 3,
    };
    let text = ndl(&s);
    let (one, parts) = run(&text, 1);
    assert_eq!(parts, 1);
    let (two, parts) = run(&text, 2);
    assert_eq!(parts, 2, "two partitions");
    assert_eq!(one, two);
    assert_eq!(
        one["problems"],
        serde_json::json!([]),
        "every application ends"
    );
    // A world that ran as the first of several partitions holds the
    // other partitions' machines in their first state: it refuses to run
    // on.
    let sc = elvis_ndl::parse(&text, "tree.ndl").expect("parses");
    let make = || elvis_build::build(&sc, None).expect("builds").sim;
    let mut built = elvis_build::build(&sc, None).expect("builds");
    let limits = RunLimits { until: built.until };
    let _ = run_parallel(2, &mut built.sim, make, limits, &mut |_| {});
    let again = built.sim.run();
    assert!(
        again
            .problems
            .iter()
            .any(|p| p.message.contains("several threads")),
        "{:?}",
        again.problems
    );
}

/// Every example of `examples/ndl` (but the million-machine one) that can
/// be split gives the report of one thread on 2, 3, 4 and 8; the others
/// say why they stay on one.
#[test]
fn every_example_reports_the_same_on_1_2_3_4_and_8_threads() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/ndl");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples/ndl")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "ndl"))
        .filter(|p| !p.to_string_lossy().contains("1000000"))
        .collect();
    files.sort();
    let mut split = 0;
    for path in &files {
        let sc = elvis_ndl::parse_file(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let probe = elvis_build::build(&sc, None).expect("builds").sim;
        let verdict = elvis_sim::parallel::split(&probe, 8);
        drop(probe);
        if let elvis_sim::parallel::Verdict::Sequential(why) = verdict {
            assert!(!why.is_empty());
            continue;
        }
        split += 1;
        let run = |threads: usize| {
            let make = || elvis_build::build(&sc, None).expect("builds").sim;
            let mut built = elvis_build::build(&sc, None).expect("builds");
            // The first 200 ms: a report cut by a time limit must agree too.
            let cap = elvis_sim::Time::from_millis(200);
            let limits = RunLimits {
                until: Some(built.until.map_or(cap, |u| u.min(cap))),
            };
            let r = run_parallel(threads, &mut built.sim, make, limits, &mut |_| {});
            let mut v = serde_json::to_value(&r).expect("serializes");
            v.as_object_mut().expect("an object").remove("performance");
            v
        };
        let one = run(1);
        for threads in [2, 3, 4, 8] {
            assert!(
                one == run(threads),
                "{}: {threads} threads differ",
                path.display()
            );
        }
    }
    assert!(split >= 6, "only {split} examples could be split");
}
