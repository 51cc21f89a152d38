//! `[Template]` blocks: expansion with overrides, chains, and their
//! errors at the offending text.

use crate::{fails, ok};

const TEMPLATED: &str = "\
[Template name='udp-host' forward='no' gateway='10.0.0.1']
\t[Networks]
\t\t[Network id='lan']
\t[Protocols]
\t\t[Protocol name='IPv4']
\t\t[Protocol name='UDP']
\t\t[Protocol name='TCP' syn_cookies='on']
\t[Applications]
\t\t[Application name='capture' port='0xbeef' message_count='1']
\t\t[Application name='ping' to='10.0.0.1' count='2']
\t\t[Application name='ping' to='10.0.0.1' count='3']
[Networks]
\t[Network id='lan']
\t\t[IP range='10.0.0.1-20']
\t[Network id='wan']
[Machines]
\t[Machine name='r' forward='yes']
\t\t[Networks]
\t\t\t[Network id='lan' ip='10.0.0.1']
\t\t\t[Network id='wan']
\t[Machine name='a' template='udp-host' count='3']
\t[Machine name='b' template='udp-host' gateway='10.0.0.2']
\t\t[Networks]
\t\t\t[Network id='lan' ip='10.0.0.9']
\t\t\t[Network id='wan']
\t\t[Protocols]
\t\t\t[Protocol name='TCP' syn_backlog='16']
\t\t[Applications]
\t\t\t[Application name='ping' to='10.0.0.3']
\t\t\t[Application name='ping' count='7']
\t\t\t[Application name='send_message' to='a-0' port='0xbeef']
";

#[test]
fn a_machine_gets_its_templates_keys_and_sections() {
    let sc = ok(TEMPLATED);
    let a = &sc.machines[1];
    assert_eq!((a.name.as_str(), a.count), ("a", Some(3)));
    let nets: Vec<&str> = a.networks.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(nets, ["lan"]);
    let protos: Vec<&str> = a.protocols.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(protos, ["IPv4", "UDP", "TCP"]);
    let apps: Vec<&str> = a.applications.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(apps, ["capture", "ping", "ping"]);
    // gateway= of the template became a default route via 10.0.0.1,
    // located at the template's line.
    assert_eq!(a.routes.len(), 1);
    assert_eq!(a.routes[0].via.value, "10.0.0.1");
    assert_eq!(a.routes[0].loc.line, 1);
    // Values keep their place in the file: the capture's port is on line 9.
    assert_eq!(a.applications[0].params.get("port").unwrap().loc.line, 9);
}

#[test]
fn a_machines_own_keys_and_entries_override_the_templates() {
    let sc = ok(TEMPLATED);
    let b = &sc.machines[2];
    assert_eq!(b.count, None);
    assert_eq!(b.routes[0].via.value, "10.0.0.2", "gateway= overridden");
    // The machine's `lan` replaces the template's (with its pinned ip=),
    // `wan` is added.
    let nets: Vec<&str> = b.networks.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(nets, ["lan", "wan"]);
    assert_eq!(b.pinned.len(), 1);
    assert_eq!(b.pinned[0].1.value, "10.0.0.9");
    // TCP: the template's syn_cookies and the machine's syn_backlog.
    let tcp = &b.protocols[2];
    assert_eq!(tcp.params.value("syn_cookies"), Some("on"));
    assert_eq!(tcp.params.value("syn_backlog"), Some("16"));
    // The first ping overrides the template's first, the second its
    // second; send_message is added.
    let apps: Vec<&str> = b.applications.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(apps, ["capture", "ping", "ping", "send_message"]);
    let p1 = &b.applications[1].params;
    assert_eq!(
        (p1.value("to"), p1.value("count")),
        (Some("10.0.0.3"), Some("2"))
    );
    let p2 = &b.applications[2].params;
    assert_eq!(
        (p2.value("to"), p2.value("count")),
        (Some("10.0.0.1"), Some("7"))
    );
}

#[test]
fn a_template_builds_on_an_earlier_one_and_may_hold_entries_directly() {
    let src = "\
[Template name='base']
\t[Protocol name='UDP']
\t[Application name='capture' port='7' message_count='2']
[Templates]
\t[Template name='counted' template='base' count='4']
\t\t[Applications]
\t\t\t[Application name='capture' message_count='5']
[Networks]
\t[Network id='1']
[Machines]
\t[Machine name='m' template='counted']
\t\t[Networks]
\t\t\t[Network id='1']
";
    let sc = ok(src);
    let m = &sc.machines[0];
    assert_eq!(m.count, Some(4));
    assert_eq!(m.protocols[0].name, "UDP");
    let cap = &m.applications[0].params;
    assert_eq!(
        (cap.value("port"), cap.value("message_count")),
        (Some("7"), Some("5"))
    );
}

#[test]
fn templates_expand_the_same_on_every_parse() {
    let a = ok(TEMPLATED);
    let b = ok(TEMPLATED);
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
}

const NET: &str = "[Networks]\n\t[Network id='1']\n";

#[test]
fn an_unknown_template_is_located_with_a_suggestion() {
    let src = format!("[Template name='udp-host']\n\t[Protocol name='UDP']\n{NET}[Machines]\n\t[Machine name='a' template='udp-hots']\n");
    assert_eq!(
        fails(&src),
        "t.ndl:6:30: error: unknown template 'udp-hots' (hint: did you mean 'udp-host'?)"
    );
    let src = format!("{NET}[Machines]\n\t[Machine name='a' template='nothing']\n");
    assert_eq!(
        fails(&src),
        "t.ndl:4:30: error: unknown template 'nothing' (hint: declare it above: [Template name='nothing'])"
    );
}

#[test]
fn a_template_used_before_its_declaration_is_an_error_naming_both_places() {
    let src =
        format!("{NET}[Machines]\n\t[Machine name='a' template='late']\n[Template name='late']\n");
    assert_eq!(
        fails(&src),
        "t.ndl:4:30: error: template 'late' is used before it is declared (at line 5, column 17) \
         (hint: move the `[Template]` block above the blocks that use it)"
    );
    let src = "[Template name='b' template='a']\n[Template name='a']\n";
    assert!(fails(src).starts_with("t.ndl:1:30: error: template 'a' is used before it is declared"));
}

#[test]
fn template_declarations_are_checked() {
    let twice = "[Template name='t']\n[Template name='t']\n";
    assert_eq!(
        fails(twice),
        "t.ndl:2:17: error: template 't' is declared twice (hint: the first is at line 1, column 17)"
    );
    assert_eq!(
        fails("[Template name='t' cuont='3']\n"),
        "t.ndl:1:20: error: unknown key `cuont` in `[Template]` (hint: did you mean `count`?)"
    );
    assert_eq!(
        fails("[Template name='t']\n\t[Machine name='x']\n"),
        "t.ndl:2:2: error: `[Machine]` cannot appear inside `[Template]` \
         (hint: expected [Networks], [Protocols], [Applications], [Routes], [Route])"
    );
    assert!(fails("[Template]\n").contains("`[Template]` needs a `name`"));
    assert!(fails(&format!(
        "{NET}[Machines]\n\t[Machine name='a' tempalte='x']\n"
    ))
    .contains("did you mean `template`?"));
}

#[test]
fn a_mistake_in_a_template_is_reported_once_at_the_template() {
    let src = format!(
        "[Template name='t' count='lots']\n{NET}[Machines]\n\
         \t[Machine name='a' template='t']\n\t[Machine name='b' template='t']\n"
    );
    let errors = elvis_ndl::parse_all(&src, "t.ndl").unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0]
            .to_string()
            .starts_with("t.ndl:1:27: error: bad count 'lots'"),
        "{}",
        errors[0]
    );
}

#[test]
fn a_block_a_template_cannot_hold_is_reported_once() {
    let src = format!(
        "[Template name='t']\n\t[Machine name='x']\n{NET}[Machines]\n\
         \t[Machine name='a' template='t']\n\t[Machine name='b' template='t']\n"
    );
    let errors = elvis_ndl::parse_all(&src, "t.ndl").unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
}
