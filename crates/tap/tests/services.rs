//! Linux's own clients against elvis's servers: glibc's resolver
//! (`getent hosts`) asks an elvis DNS server for a name, and `curl`
//! fetches an object from an elvis web server by that name. The scenario
//! is NDL (`tap=`, `netns=`), built by elvis-build. Needs root,
//! `/dev/net/tun`, `ip`, `getent` and `curl`; says so and passes without.
#![forbid(unsafe_code)]

mod common;

use std::process::Command;

#[test]
fn linux_resolves_a_name_from_elvis_dns_and_fetches_from_elvis_web() {
    if let Some(why) = common::missing(&["getent", "curl"]) {
        eprintln!("skipped: {why}");
        return;
    }
    let id = std::process::id();
    let ns = format!("elvis-svc-{id}");
    let src = format!(
        "[Simulation seed='5' until='60s']
[Networks]
\t[Network id='lan' bandwidth='100Mbps' latency='1ms']
\t\t[IP subnet='10.79.0.0/24']
[Machines]
\t[Machine name='linux' tap='esvc{}' netns='{ns}']
\t\t[Networks]
\t\t\t[Network id='lan' ip='10.79.0.2']
\t[Machine name='www']
\t\t[Networks]
\t\t\t[Network id='lan' ip='10.79.0.3']
\t\t[Protocols]
\t\t\t[Protocol name='TCP']
\t\t[Applications]
\t\t\t[Application name='web_server']
\t[Machine name='ns']
\t\t[Networks]
\t\t\t[Network id='lan' ip='10.79.0.4']
\t\t[Protocols]
\t\t\t[Protocol name='UDP']
\t\t\t[Protocol name='TCP']
\t\t[Applications]
\t\t\t[Application name='dns_server' zone='example.com']
\t\t\t\t[Record name='www' type='A' value='10.79.0.3']
",
        id % 100_000
    );
    let Some(mut built) = common::build_or_skip(&src, "services.ndl") else {
        return;
    };
    // `ip netns exec` puts /etc/netns/NAME/resolv.conf over /etc/resolv.conf.
    let etc = std::path::PathBuf::from(format!("/etc/netns/{ns}"));
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::write(etc.join("resolv.conf"), "nameserver 10.79.0.4\n").unwrap();
    let script = "getent hosts www.example.com && \
                  curl -sS -o /dev/null -w 'status %{http_code} bytes %{size_download}\\n' \
                  http://www.example.com/obj/100KB";
    let (report, out) = common::run_with_client(
        &mut built,
        Command::new("ip").args(["netns", "exec", &ns, "sh", "-c", script]),
    );
    let _ = std::fs::remove_dir_all(&etc);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    eprintln!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        text.contains("10.79.0.3") && text.contains("www.example.com"),
        "{text}"
    );
    assert!(text.contains("status 200 bytes 100000"), "{text}");
    let served = report
        .metrics
        .iter()
        .filter(|m| m.application == "web_server" && m.name == "requests")
        .map(|m| m.value)
        .sum::<f64>();
    assert_eq!(served, 1.0);
}
