//! The stub resolver every host has: `resolve(host, "www.example.com")`
//! asks the machine's configured DNS servers (its resolver configuration,
//! from NDL `resolver=` or a DHCP lease) for an address, like glibc's
//! `getaddrinfo` reading `/etc/resolv.conf`.
//!
//! A name without a dot gets the search domain appended. Each server is
//! tried in order with a per-try timeout; the whole list is gone through
//! `attempts` times (resolv.conf(5)'s `timeout` and `attempts`, here 2 s
//! and 2). SERVFAIL or REFUSED moves to the next server; NXDOMAIN and
//! NODATA are final. A truncated answer is asked again over TCP.
//!
//! The stub keeps no state between calls: a million hosts that resolve
//! names cost nothing until they do, and then one ephemeral socket for the
//! length of the lookup.

use crate::message;
use crate::transport::{self, Failure, Reply};
use elvis_api::Host;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RData, Record, RecordType};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};
use std::fmt;
use std::net::Ipv4Addr;
use std::time::Duration;

/// How the stub retries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// How long each try waits for an answer.
    pub timeout: Duration,
    /// How many times the server list is gone through.
    pub attempts: u8,
}

impl Default for Options {
    /// resolv.conf(5) waits 5 s and tries twice; a simulated network has
    /// no reason to wait that long, so 2 s.
    fn default() -> Self {
        Options {
            timeout: Duration::from_secs(2),
            attempts: 2,
        }
    }
}

/// Why a name did not resolve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResolveError {
    /// The machine has no DNS server configured.
    NoResolver,
    /// Not a valid domain name.
    BadName { name: String, why: String },
    /// NXDOMAIN: the name does not exist.
    NotFound { name: String },
    /// The name exists without an address (NODATA).
    NoAddress { name: String },
    /// No server answered usefully (timeouts, SERVFAIL, REFUSED).
    Failed { name: String, why: String },
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveError::NoResolver => write!(f, "no DNS server is configured"),
            ResolveError::BadName { name, why } => {
                write!(f, "'{name}' is not a domain name: {why}")
            }
            ResolveError::NotFound { name } => write!(f, "'{name}' does not exist (NXDOMAIN)"),
            ResolveError::NoAddress { name } => write!(f, "'{name}' has no IPv4 address"),
            ResolveError::Failed { name, why } => write!(f, "'{name}' did not resolve: {why}"),
        }
    }
}

impl std::error::Error for ResolveError {}

/// Resolves `name` to its first IPv4 address through the machine's DNS
/// servers, with the default [`Options`]. A dotted quad is returned as is.
///
/// # Errors
/// [`ResolveError`], naming the name.
pub async fn resolve(host: &Host, name: &str) -> Result<Ipv4Addr, ResolveError> {
    resolve_with(host, name, Options::default()).await
}

/// [`resolve`] with explicit retry options.
///
/// # Errors
/// [`ResolveError`], naming the name.
pub async fn resolve_with(
    host: &Host,
    name: &str,
    opts: Options,
) -> Result<Ipv4Addr, ResolveError> {
    if let Ok(ip) = name.trim().parse::<Ipv4Addr>() {
        return Ok(ip);
    }
    let records = match ask(host, name, RecordType::A, opts, true).await? {
        Found::Address(ip) => return Ok(ip),
        Found::Records(r) => r,
    };
    records
        .iter()
        .find_map(|r| match r.data {
            RData::A(a) => Some(a.0),
            _ => None,
        })
        .ok_or_else(|| ResolveError::NoAddress {
            name: name.to_string(),
        })
}

/// Asks the machine's DNS servers for `name`/`qtype` with recursion
/// desired; returns the answer section (a CNAME chain, then the records).
///
/// # Errors
/// [`ResolveError`], naming the name.
pub async fn lookup(
    host: &Host,
    name: &str,
    qtype: RecordType,
    opts: Options,
) -> Result<Vec<Record>, ResolveError> {
    match ask(host, name, qtype, opts, false).await? {
        Found::Records(r) => Ok(r),
        Found::Address(_) => unreachable!("no address is read without asking"),
    }
}

/// What [`ask`] found.
enum Found {
    /// The answer section.
    Records(Vec<Record>),
    /// The first address of an answer to an A query, read without
    /// decoding the answer (most answers [`resolve`] gets).
    Address(Ipv4Addr),
}

/// [`lookup`], returning just the first address of an answer that allows
/// it when `address` is set.
async fn ask(
    host: &Host,
    name: &str,
    qtype: RecordType,
    opts: Options,
    address: bool,
) -> Result<Found, ResolveError> {
    let conf = host.resolver().ok_or(ResolveError::NoResolver)?;
    if conf.servers.is_empty() {
        return Err(ResolveError::NoResolver);
    }
    let qname = qualify(name, conf.domain.as_deref())?;
    let mut why = String::from("no server answered");
    for _ in 0..opts.attempts.max(1) {
        for &server in &conf.servers {
            let id = host.random_u64() as u16;
            let q = message::query(id, qname.clone(), qtype, true);
            match transport::exchange_for(host, server, &q, opts.timeout, address).await {
                Ok(Reply::Address(ip)) => return Ok(Found::Address(ip)),
                Ok(Reply::Message(r, _)) => match r.metadata.response_code {
                    ResponseCode::NoError => {
                        if r.answers.iter().any(|a| a.record_type() == qtype) {
                            return Ok(Found::Records(r.answers));
                        }
                        return Err(ResolveError::NoAddress {
                            name: name.to_string(),
                        });
                    }
                    ResponseCode::NXDomain => {
                        return Err(ResolveError::NotFound {
                            name: name.to_string(),
                        })
                    }
                    rc => why = format!("{server} answered {rc}"),
                },
                Err(Failure::Timeout) => why = format!("{server} did not answer"),
                Err(Failure::Socket(e) | Failure::Malformed(e)) => why = format!("{server}: {e}"),
            }
        }
    }
    Err(ResolveError::Failed {
        name: name.to_string(),
        why,
    })
}

/// Returns `name` as an absolute name, the search `domain` appended when
/// it has no dot (resolv.conf(5) `ndots:1`).
///
/// # Errors
/// Not a valid domain name.
pub fn qualify(name: &str, domain: Option<&str>) -> Result<Name, ResolveError> {
    let bad = |why: String| ResolveError::BadName {
        name: name.to_string(),
        why,
    };
    let full: std::borrow::Cow<'_, str> = match domain {
        Some(d) if !name.contains('.') => format!("{name}.{}", d.trim_end_matches('.')).into(),
        _ => name.into(),
    };
    let mut n = match plain(&full) {
        Some(n) => n,
        None => Name::from_ascii(&full).map_err(|e| bad(e.to_string()))?,
    };
    if n.is_root() || full.is_empty() {
        return Err(bad("it is empty".into()));
    }
    n.set_fqdn(true);
    Ok(n)
}

/// Returns the name `s` when it is plain: host-name characters
/// (letters, digits, `-`, `_`) in labels of 1 to 63 bytes, 253 at most,
/// an optional final dot. Read from its wire form, which costs a fraction
/// of hickory's text parser (escapes, IDNA), which every other name goes
/// through; both give the same name.
fn plain(s: &str) -> Option<Name> {
    let s = s.strip_suffix('.').unwrap_or(s);
    if s.is_empty() || s.len() > 253 {
        return None;
    }
    let mut wire = [0u8; 256];
    let mut at = 0;
    for label in s.split('.') {
        let ok = |c: u8| c.is_ascii_alphanumeric() || c == b'-' || c == b'_';
        if label.is_empty() || label.len() > 63 || !label.bytes().all(ok) {
            return None;
        }
        wire[at] = label.len() as u8;
        wire[at + 1..at + 1 + label.len()].copy_from_slice(label.as_bytes());
        at += 1 + label.len();
    }
    // wire[at] is the root label's zero byte.
    Name::read(&mut BinDecoder::new(&wire[..=at])).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_read_as_hickory_parses_them() {
        for s in [
            "www.example.com",
            "Sender-17.elvis.",
            "a",
            "_dns.x-y.Z9",
            "n0.d0.com.",
        ] {
            let ours = plain(s).unwrap();
            let mut theirs = Name::from_ascii(s).unwrap();
            // `qualify` makes every name fully qualified.
            theirs.set_fqdn(true);
            assert_eq!(ours.to_ascii(), theirs.to_ascii(), "{s}");
            assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{s}");
        }
        for s in ["", ".", "a..b", "we\\.ird", "é.com", "a b", &"x".repeat(64)] {
            assert!(plain(s).is_none(), "{s}");
        }
    }

    #[test]
    fn short_names_take_the_search_domain() {
        assert_eq!(
            qualify("sender-17", Some("elvis")).unwrap().to_ascii(),
            "sender-17.elvis."
        );
        assert_eq!(
            qualify("www.example.com", Some("elvis"))
                .unwrap()
                .to_ascii(),
            "www.example.com."
        );
        assert!(qualify("", None).is_err());
        assert!(qualify("a..b", None).is_err());
    }
}
