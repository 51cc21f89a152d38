//! `[Protocol]` blocks: which options each protocol takes, and ARP's.
//!
//! | protocol | options | read by |
//! |---|---|---|
//! | `ARP` | `local`, `default` (Elvis: ARP's preconfigured subnet) | here: `default` becomes a default route |
//! | `TCP` | `syn_cookies`, `syn_backlog`, `congestion` | the builder (`elvis-build`, `tcp.rs`) |
//! | `DHCP` | `start` | the builder (`dhcp.rs`) |
//! | `AODV` | `hello`, `gratuitous`, `rrep_ack`, `local_repair` | the builder (`aodv.rs`) |
//! | `IPv4`, `UDP`, `ICMP`, `Ethernet` | none | — |
//!
//! In Elvis, `[Protocol name='ARP' local='A' default='G']` gives ARP the
//! subnet `A/32` with default gateway `G` (an address or a machine name):
//! every destination is then off-subnet, so ARP resolves `G` and every
//! frame goes to `G`. Here `default` becomes a route to `0.0.0.0/0` via
//! `G`, as `gateway=` does, and `local` is checked to be an address; a
//! destination on one of the machine's own networks is reached directly,
//! not through `G`, which a located warning says.

use super::Lower;
use crate::error::ErrorKind;
use crate::parser::Block;
use elvis_scenario as sc;
use elvis_scenario::MachineGroup;
use std::net::Ipv4Addr;

/// Protocols whose options the builder reads and checks.
const READ_BY_BUILDER: &[&str] = &["tcp", "dhcp", "aodv"];
/// Protocols that take no options.
const NO_OPTIONS: &[&str] = &["ipv4", "udp", "icmp", "ethernet"];

impl Lower<'_> {
    /// Checks the options of protocol block `p` named `name` and
    /// applies ARP's.
    pub(super) fn protocol_options(&mut self, p: &Block, name: &str, g: &mut MachineGroup) {
        let lname = name.to_ascii_lowercase();
        if READ_BY_BUILDER.contains(&lname.as_str()) {
            return;
        }
        if lname == "arp" {
            return self.arp(p, g);
        }
        if NO_OPTIONS.contains(&lname.as_str()) {
            for q in p
                .params
                .iter()
                .filter(|q| !q.key.node.eq_ignore_ascii_case("name"))
            {
                let msg = format!(
                    "`[Protocol name='{name}']` takes no options, found `{}`",
                    q.key.node
                );
                let hint = Some("options are read on ARP, TCP and DHCP only".to_string());
                self.error(ErrorKind::UnknownKey, q.key.span, msg, hint);
            }
        }
        // Another name is an unknown protocol, which the builder reports.
    }

    /// Reads ARP's `local` and `default` (see the module docs).
    fn arp(&mut self, p: &Block, g: &mut MachineGroup) {
        const KEYS: &[&str] = &["name", "local", "default"];
        self.keys(p, KEYS);
        let local = p.param("local");
        let default = p.param("default");
        if let Some(l) = local {
            let v = l.value.node.trim();
            if !v.contains('{') && v.parse::<Ipv4Addr>().is_err() {
                let msg = format!(
                    "bad local '{}': not an IPv4 address (a.b.c.d)",
                    l.value.node
                );
                let hint = Some("local is the machine's own address: local='10.0.0.2'".into());
                self.error(ErrorKind::BadValue, l.value.span, msg, hint);
            }
        }
        match (local, default) {
            (Some(l), None) => {
                let hint = Some("add default='…': the gateway's address or machine name".into());
                self.error(
                    ErrorKind::MissingKey,
                    l.key.span,
                    "ARP's `local` needs a `default` (the gateway)",
                    hint,
                );
            }
            (None, Some(d)) => {
                let hint = Some(
                    "add local='…' (the machine's own address), or use gateway= on the machine"
                        .into(),
                );
                self.error(
                    ErrorKind::MissingKey,
                    d.key.span,
                    "ARP's `default` is read only with `local`",
                    hint,
                );
            }
            (Some(l), Some(d)) => {
                let v = d.value.node.trim();
                if v.is_empty() {
                    let hint = Some("default='10.0.0.1' or default='router'".into());
                    return self.error(ErrorKind::BadValue, d.value.span, "default is empty", hint);
                }
                if let Some(r) = g.routes.iter().find(|r| r.len == 0 && r.from.is_none()) {
                    let msg =
                        "ARP's `default` and the machine's gateway= both set the default route";
                    let hint = Some(format!("the other is at {}; keep one", super::at(r.loc)));
                    return self.error(ErrorKind::Duplicate, d.key.span, msg, hint);
                }
                let loc = self.loc(d.key.span);
                g.routes.push(sc::RouteSpec {
                    prefix: Ipv4Addr::UNSPECIFIED,
                    len: 0,
                    via: sc::Param {
                        key: "default".into(),
                        value: v.to_string(),
                        loc: self.loc(d.value.span),
                    },
                    from: None,
                    port: None,
                    loc,
                });
                self.sc.warnings.push(sc::Warning {
                    message: format!(
                        "ARP local/default: destinations off this machine's networks go via '{v}' \
                         (a default route); unlike Elvis' {}/32 ARP subnet, destinations on its own \
                         networks are reached directly",
                        l.value.node
                    ),
                    loc: self.loc(l.key.span),
                });
            }
            (None, None) => {}
        }
    }
}
