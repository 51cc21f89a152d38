//! The constructs of the public Elvis repository's NDL files
//! (`sim/elvis/src/ndl/*.ndl`, `benches/ndl_benchmarks/*.txt`,
//! `tests/generator_tests/**`), written here as our own equivalents: each
//! lowers unchanged, and the options Elvis reads are read, not ignored.

use crate::{fails, ok};

/// Two networks, ranges and single addresses; a `count='1'` group on both
/// networks; a forwarder; a factory of counting captures; ARP with a
/// preconfigured subnet; a template; four-space and tab indentation mixed
/// across lines, as Elvis' `testing.ndl` has.
const ELVIS_STYLE: &str = "\
[Template name='plain']
\t[Protocols]
\t\t[Protocol name='IPv4']
\t\t[Protocol name='UDP']
[Networks]
\t[Network id='5']
\t\t[IP range='123.45.67.89-91']
\t\t[IP range='123.45.67.92-94']
\t\t[IP ip='192.168.1.121']
\t[Network id='1']
\t\t[IP range='12.34.56.89-90']
[Machines]
\t[Machine name='send' count='1']
\t\t[Networks]
\t\t\t[Network id='5']
\t\t\t[Network id='1']
\t\t[Protocols]
\t\t\t[Protocol name='IPv4']
\t\t\t[Protocol name='UDP']
\t\t\t[Protocol name='ARP' local='123.45.67.92' default='123.45.67.93']
\t\t[Applications]
\t\t\t[Application name='send_message' message='A test message' to='123.45.67.90' port='0xbeef']
    [Machine name='fwd' template='plain']
\t\t[Networks]
\t\t\t[Network id='5']
\t\t[Applications]
\t\t\t[Application name='forward' ip='123.45.67.93' to='recv' local_port='0xbeef' remote_port='0xbeef']
\t[Machine name='recv' template='plain']
\t\t[Networks]
\t\t\t[Network id='5']
\t\t[Applications]
\t\t\t[Application name='capture' type='count' ip='123.45.67.90' factory='f1' port='0xbeef' message_count='1']
";

#[test]
fn an_elvis_style_file_lowers_with_its_options_kept() {
    let sc = ok(ELVIS_STYLE);
    let names: Vec<&str> = sc.machines.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["send", "fwd", "recv"]);
    let send = &sc.machines[0];
    // ARP's `default` became the default route, located at its key.
    assert_eq!(send.routes.len(), 1);
    assert_eq!(
        (send.routes[0].len, send.routes[0].via.value.as_str()),
        (0, "123.45.67.93")
    );
    assert_eq!(send.routes[0].loc.line, 20);
    // The capture keeps type= and factory= for the builder.
    let cap = &sc.machines[2].applications[0].params;
    assert_eq!(
        (cap.value("type"), cap.value("factory")),
        (Some("count"), Some("f1"))
    );
    // The template gave fwd and recv their protocols.
    assert_eq!(sc.machines[1].protocols.len(), 2);
    // One warning: ARP's on-link difference, at `local`.
    assert_eq!(sc.warnings.len(), 1, "{:?}", sc.warnings);
    assert_eq!((sc.warnings[0].loc.line, sc.warnings[0].loc.col), (20, 25));
    assert!(sc.warnings[0].message.contains("via '123.45.67.93'"));
}

#[test]
fn arp_default_may_name_a_machine() {
    let src = "[Networks]\n\t[Network id='1']\n[Machines]\n\t[Machine name='a']\n\t\t[Networks]\n\t\t\t[Network id='1']\n\t\t[Protocols]\n\t\t\t[Protocol name='ARP' local='10.0.0.1' default='router']\n";
    let sc = ok(src);
    assert_eq!(sc.machines[0].routes[0].via.value, "router");
    assert_eq!(sc.machines[0].routes[0].via.key, "default");
}

fn with_protocol(p: &str) -> String {
    format!("[Networks]\n\t[Network id='1']\n[Machines]\n\t[Machine name='a']\n\t\t[Networks]\n\t\t\t[Network id='1']\n\t\t[Protocols]\n\t\t\t{p}\n")
}

#[test]
fn protocol_options_are_checked_where_they_are_written() {
    assert_eq!(
        fails(&with_protocol("[Protocol name='ARP' locl='10.0.0.1']")),
        "t.ndl:8:25: error: unknown key `locl` in `[Protocol]` (hint: did you mean `local`?)"
    );
    assert_eq!(
        fails(&with_protocol("[Protocol name='ARP' local='10.0.0.1']")),
        "t.ndl:8:25: error: ARP's `local` needs a `default` (the gateway) \
         (hint: add default='…': the gateway's address or machine name)"
    );
    assert!(
        fails(&with_protocol("[Protocol name='ARP' default='10.0.0.1']"))
            .starts_with("t.ndl:8:25: error: ARP's `default` is read only with `local`")
    );
    assert!(fails(&with_protocol(
        "[Protocol name='ARP' local='ten' default='10.0.0.1']"
    ))
    .starts_with("t.ndl:8:32: error: bad local 'ten': not an IPv4 address"));
    assert_eq!(
        fails(&with_protocol("[Protocol name='UDP' checksum='off']")),
        "t.ndl:8:25: error: `[Protocol name='UDP']` takes no options, found `checksum` \
         (hint: options are read on ARP, TCP and DHCP only)"
    );
}

#[test]
fn arp_default_and_gateway_together_are_an_error() {
    let src = "[Networks]\n\t[Network id='1']\n[Machines]\n\t[Machine name='a' gateway='10.0.0.1']\n\t\t[Networks]\n\t\t\t[Network id='1']\n\t\t[Protocols]\n\t\t\t[Protocol name='ARP' local='10.0.0.2' default='10.0.0.1']\n";
    let e = fails(src);
    assert!(
        e.starts_with("t.ndl:8:42: error: ARP's `default` and the machine's gateway= both set the default route"),
        "{e}"
    );
}
