//! What the stacks count: packets by kind, and drops by reason (the
//! network layer's reasons among them). The report aggregates these.

use std::collections::BTreeMap;
use std::fmt;

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DropReason {
    /// Dropped by the network layer (a loss draw, a full queue, …).
    Net(elvis_net::DropReason),
    /// A checksum failed (protocol named).
    BadChecksum(&'static str),
    /// A header did not parse or its lengths disagree (protocol named).
    Malformed(&'static str),
    /// A protocol, ethertype or message type this machine does not handle.
    Unsupported(&'static str),
    /// Addressed to another machine (no forwarding on hosts).
    NotForUs,
    /// No socket bound to the destination port or ICMP identifier.
    NoSocket,
    /// The receiving socket's buffer was full.
    SocketBufferFull,
    /// The receiving machine had crashed.
    MachineCrashed,
    /// A fragmented datagram did not complete in time.
    ReassemblyTimeout,
    /// A fragment overlapped one already received.
    FragmentOverlap,
    /// Too many datagrams waiting for one ARP resolution.
    ArpQueueFull,
    /// ARP got no answer.
    ArpFailed,
    /// A SYN (or a cookie's ACK) found the listener's accept queue full.
    ListenQueueFull,
    /// A SYN found the listener's SYN backlog full and SYN cookies off
    /// (`tcp::syncookie`).
    SynBacklogFull,
    /// An ACK to a listener carried a SYN cookie that does not check.
    BadSynCookie,
    /// A router got a datagram whose TTL ran out (Time Exceeded sent).
    TtlExceeded,
    /// A router (or host) had no route to the destination.
    NoRoute,
    /// A router had to fragment a datagram with DF set (Frag Needed sent).
    FragNeeded,
    /// A DHCP message its receiver ignores (why named): another client's
    /// reply, a reply in the wrong state, a request no pool can serve.
    Dhcp(&'static str),
    /// AODV found no route (why named): a discovery gave up, a full
    /// queue of datagrams waiting for one, a datagram to forward without
    /// one, a RREP without a reverse route.
    Aodv(&'static str),
}

impl From<elvis_net::DropReason> for DropReason {
    fn from(r: elvis_net::DropReason) -> Self {
        DropReason::Net(r)
    }
}

impl fmt::Display for DropReason {
    /// Formats as the report key: `bad_checksum(udp)`, `loss`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DropReason::Net(r) => r.fmt(f),
            DropReason::BadChecksum(p) => write!(f, "bad_checksum({p})"),
            DropReason::Malformed(p) => write!(f, "malformed({p})"),
            DropReason::Unsupported(p) => write!(f, "unsupported({p})"),
            DropReason::NotForUs => f.write_str("not_for_us"),
            DropReason::NoSocket => f.write_str("no_socket"),
            DropReason::SocketBufferFull => f.write_str("socket_buffer_full"),
            DropReason::MachineCrashed => f.write_str("machine_crashed"),
            DropReason::ReassemblyTimeout => f.write_str("reassembly_timeout"),
            DropReason::FragmentOverlap => f.write_str("fragment_overlap"),
            DropReason::ArpQueueFull => f.write_str("arp_queue_full"),
            DropReason::ArpFailed => f.write_str("arp_failed"),
            DropReason::ListenQueueFull => f.write_str("listen_queue_full"),
            DropReason::SynBacklogFull => f.write_str("syn_backlog_full"),
            DropReason::BadSynCookie => f.write_str("bad_syn_cookie"),
            DropReason::TtlExceeded => f.write_str("ttl_exceeded"),
            DropReason::NoRoute => f.write_str("no_route"),
            DropReason::FragNeeded => f.write_str("frag_needed"),
            DropReason::Dhcp(why) => write!(f, "dhcp({why})"),
            DropReason::Aodv(why) => write!(f, "aodv({why})"),
        }
    }
}

/// Run-wide packet counters.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub frames_delivered: u64,
    pub ip_sent: u64,
    pub ip_delivered: u64,
    pub udp_sent: u64,
    pub udp_delivered: u64,
    pub icmp_echo_replied: u64,
    pub icmp_errors_sent: u64,
    pub icmp_errors_rate_limited: u64,
    pub arp_sent: u64,
    pub tcp_sent: u64,
    pub tcp_received: u64,
    pub gro_merged: u64,
    /// SYN-ACKs carrying a SYN cookie, and cookies that checked
    /// (`tcp::syncookie`).
    pub syn_cookies_sent: u64,
    pub syn_cookies_validated: u64,
    pub drops: BTreeMap<DropReason, u64>,
}

impl Stats {
    /// Adds `other`'s counts to these (the partitions of a parallel run
    /// each count their own machines).
    pub fn merge(&mut self, other: &Stats) {
        self.frames_delivered += other.frames_delivered;
        self.ip_sent += other.ip_sent;
        self.ip_delivered += other.ip_delivered;
        self.udp_sent += other.udp_sent;
        self.udp_delivered += other.udp_delivered;
        self.icmp_echo_replied += other.icmp_echo_replied;
        self.icmp_errors_sent += other.icmp_errors_sent;
        self.icmp_errors_rate_limited += other.icmp_errors_rate_limited;
        self.arp_sent += other.arp_sent;
        self.tcp_sent += other.tcp_sent;
        self.tcp_received += other.tcp_received;
        self.gro_merged += other.gro_merged;
        self.syn_cookies_sent += other.syn_cookies_sent;
        self.syn_cookies_validated += other.syn_cookies_validated;
        for (r, n) in &other.drops {
            *self.drops.entry(*r).or_insert(0) += n;
        }
    }

    /// Counts a drop. Out of line and cold: the map insertion (with
    /// `DropReason`'s derived ordering, which grows with every reason)
    /// stays out of the packet paths that may drop, so that adding a
    /// reason does not change how those paths are inlined.
    #[cold]
    #[inline(never)]
    pub fn drop(&mut self, reason: DropReason) {
        *self.drops.entry(reason).or_insert(0) += 1;
    }
}
