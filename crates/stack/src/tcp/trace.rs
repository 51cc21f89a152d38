//! Per-connection records for the run report, and optional time series of
//! each connection's congestion state (cwnd, ssthresh, smoothed RTT, bytes
//! acknowledged) for CSV export.
//!
//! Every connection gets an id in creation order when its TCB is made.
//! The report and the time series number connections in *opening order*:
//! by the instant the TCB was made, then by machine, then by creation on
//! that machine ([`Record::order_key`]). That order does not depend on
//! how machines interleave within one instant, so a parallel run, whose
//! partitions each create their own connections, numbers them as a
//! sequential run does. A connection whose slot is freed (it closed and
//! the application let go of it) is archived at that moment with its
//! final state and statistics; connections still open are read from the
//! socket tables when the report is made. Only the first [`MAX_LISTED`]
//! connections in opening order are kept (all are counted), so a
//! million-connection run stays bounded.
//!
//! Time series cost nothing when off: the per-call hook is one `Option`
//! test. When on, a sample is taken after the TCB handled an event (a
//! segment, a timer, an application call):
//! - [`Sampling::OnChange`]: whenever cwnd, ssthresh or the smoothed RTT
//!   differs from the previous sample (every ACK in congestion avoidance);
//! - [`Sampling::Every`]: at the first event at or after each multiple of
//!   the interval since the previous sample (no events are added to the run;
//!   an idle connection is not sampled, and its state did not change).
//!
//! Samples are kept in memory (48 bytes each) and written by
//! [`write_csv`]: one file per connection. A connection whose congestion
//! control keeps a model (BBR) also records the model's estimates with
//! each sample ([`Series::model`]), written as four more columns; the
//! files of the other connections have the columns they always had.
//! For those connections a change of the model's state or pacing rate
//! also makes an on-change sample.
//!
//! A machine that crashes ends its connections: they are archived in the
//! state they had.
//!
//! # Gaps
//! Samples are not streamed to disk during the run (a long on-change trace of a fast
//! connection can take tens of megabytes).

use super::tcb::{CcModel, State, Tcb, TcpStats};
use crate::machine::MachineId;
use elvis_kernel::Time;
use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How many connections the report lists.
pub const MAX_LISTED: u64 = 10_000;

/// When time-series samples are taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampling {
    /// Whenever cwnd, ssthresh or the smoothed RTT changes.
    OnChange,
    /// At most once per interval of virtual time.
    Every(Duration),
}

/// One sample of a connection's congestion state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Virtual time, ns.
    pub time_ns: u64,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes (`u64::MAX` before the first loss).
    pub ssthresh: u64,
    /// Smoothed RTT, ns (0 before the first sample).
    pub srtt_ns: u64,
    /// Payload bytes acknowledged so far.
    pub bytes_acked: u64,
    /// Segments retransmitted so far.
    pub retransmitted_segments: u64,
}

/// The time series of one connection.
#[derive(Clone, Debug)]
pub struct Series {
    /// The connection's id (its index in the report's `connections`).
    pub id: u64,
    /// The machine's name.
    pub machine: String,
    pub local: SocketAddrV4,
    pub remote: SocketAddrV4,
    /// Congestion control algorithm.
    pub congestion: &'static str,
    pub samples: Vec<Sample>,
    /// The model's estimates at each sample (BBR), in step with
    /// `samples`; empty for the other algorithms.
    pub model: Vec<CcModel>,
}

/// When a connection was opened and last had data acknowledged.
#[derive(Clone, Copy, Debug)]
pub struct Life {
    pub opened_ns: u64,
    /// 0 until data is first acknowledged.
    pub last_ack_ns: u64,
}

impl Life {
    pub fn new(now: Time) -> Life {
        Life {
            opened_ns: now.as_nanos(),
            last_ack_ns: 0,
        }
    }

    /// Returns the mean rate of acknowledged data from the opening to
    /// the last acknowledgment, bit/s (0 if nothing was acknowledged).
    pub fn throughput_bps(&self, bytes_acked: u64) -> u64 {
        if self.last_ack_ns <= self.opened_ns {
            return 0;
        }
        let bits = u128::from(bytes_acked) * 8 * 1_000_000_000;
        (bits / u128::from(self.last_ack_ns - self.opened_ns)) as u64
    }
}

/// Totals of one algorithm: senders, bytes acknowledged, and the sum of
/// the senders' mean throughputs.
pub type Totals = BTreeMap<&'static str, (u64, u64, u64)>;

/// A connection's identity and, once it ended, its final record.
#[derive(Clone, Debug)]
pub struct Record {
    pub id: u64,
    pub machine: MachineId,
    pub local: SocketAddrV4,
    pub remote: SocketAddrV4,
    pub congestion: &'static str,
    pub state: State,
    pub stats: TcpStats,
    pub life: Life,
}

/// Series under construction, by connection id.
struct Open {
    id: u64,
    machine: MachineId,
    opened_ns: u64,
    local: SocketAddrV4,
    remote: SocketAddrV4,
    congestion: &'static str,
    samples: Vec<Sample>,
    model: Vec<CcModel>,
}

/// The run's connection log (lives in the world).
#[derive(Default)]
pub struct ConnLog {
    /// Connections created so far (the next id).
    pub created: u64,
    /// Connections that ended: the first [`MAX_LISTED`] in opening order
    /// among them, and up to as many more (see [`keep_first`]).
    pub ended: Vec<Record>,
    /// Time series, when enabled.
    pub trace: Option<Box<Trace>>,
    /// Totals of ended connections, by algorithm.
    pub ended_totals: Totals,
}

/// Time-series state.
pub struct Trace {
    sampling: Sampling,
    /// The first connection id traced.
    base: u64,
    /// Series by connection id − `base` (ids are dense).
    series: Vec<Open>,
}

impl ConnLog {
    /// Returns a new connection id and starts its series if tracing.
    pub fn open(&mut self, m: MachineId, tcb: &Tcb, now: Time) -> u64 {
        let id = self.created;
        self.created += 1;
        if let Some(t) = self.trace.as_mut() {
            t.series.push(Open {
                id,
                machine: m,
                opened_ns: now.as_nanos(),
                local: tcb.local,
                remote: tcb.remote,
                congestion: tcb.cc_name(),
                samples: Vec::new(),
                model: Vec::new(),
            });
        }
        id
    }

    /// Archives a connection whose slot is being freed.
    pub fn end(&mut self, id: u64, m: MachineId, tcb: &mut Tcb, life: Life) {
        add_total(
            &mut self.ended_totals,
            tcb.cc_name(),
            tcb.stats.bytes_acked,
            life,
        );
        self.ended.push(record(id, m, tcb, life));
        if self.ended.len() >= 2 * MAX_LISTED as usize {
            keep_first(&mut self.ended);
        }
    }

    /// Starts recording time series for connections opened from now on.
    pub fn enable_trace(&mut self, sampling: Sampling) {
        self.trace = Some(Box::new(Trace {
            sampling,
            base: self.created,
            series: Vec::new(),
        }));
    }
}

/// Counts a connection's acknowledged bytes in `totals` (if it sent any).
pub fn add_total(totals: &mut Totals, cc: &'static str, bytes_acked: u64, life: Life) {
    if bytes_acked > 0 {
        let t = totals.entry(cc).or_insert((0, 0, 0));
        t.0 += 1;
        t.1 += bytes_acked;
        t.2 += life.throughput_bps(bytes_acked);
    }
}

impl Record {
    /// The opening order: the instant the TCB was made, the machine, and
    /// the creation order on that machine (ids grow with it).
    pub fn order_key(&self) -> (u64, MachineId, u64) {
        (self.life.opened_ns, self.machine, self.id)
    }
}

/// Sorts `records` in opening order and keeps the first [`MAX_LISTED`].
pub fn keep_first(records: &mut Vec<Record>) {
    records.sort_unstable_by_key(Record::order_key);
    records.truncate(MAX_LISTED as usize);
}

/// Returns the record of a connection as it is now.
pub fn record(id: u64, m: MachineId, tcb: &mut Tcb, life: Life) -> Record {
    Record {
        id,
        machine: m,
        local: tcb.local,
        remote: tcb.remote,
        congestion: tcb.cc_name(),
        state: tcb.state,
        stats: tcb.stats(),
        life,
    }
}

impl Trace {
    /// Samples connection `id` after an event at `now`, if due.
    pub fn observe(&mut self, id: u64, now: Time, tcb: &mut Tcb) {
        let Some(open) = id
            .checked_sub(self.base)
            .and_then(|i| self.series.get_mut(i as usize))
        else {
            return;
        };
        let st = tcb.stats();
        let s = Sample {
            time_ns: now.as_nanos(),
            cwnd: st.cwnd,
            ssthresh: st.ssthresh,
            srtt_ns: st.srtt_ns,
            bytes_acked: st.bytes_acked,
            retransmitted_segments: st.retransmitted_segments,
        };
        let model = st.model;
        let due = match (self.sampling, open.samples.last()) {
            (_, None) => true,
            (Sampling::OnChange, Some(p)) => {
                (p.cwnd, p.ssthresh, p.srtt_ns) != (s.cwnd, s.ssthresh, s.srtt_ns)
                    || model.is_some_and(|m| {
                        open.model.last().is_none_or(|q| {
                            (q.state, q.pacing_rate_bps) != (m.state, m.pacing_rate_bps)
                        })
                    })
            }
            (Sampling::Every(d), Some(p)) => {
                let every = (d.as_nanos() as u64).max(1);
                s.time_ns / every > p.time_ns / every
            }
        };
        if due {
            open.samples.push(s);
            if let Some(m) = model {
                open.model.push(m);
            }
        }
    }

    /// Returns the series in opening order, numbered in that order from
    /// the first connection traced, with machine names.
    pub fn series(&self, name: impl Fn(MachineId) -> String) -> Vec<Series> {
        let mut order: Vec<&Open> = self.series.iter().collect();
        order.sort_unstable_by_key(|o| (o.opened_ns, o.machine, o.id));
        order
            .into_iter()
            .enumerate()
            .map(|(rank, o)| Series {
                id: self.base + rank as u64,
                machine: name(o.machine),
                local: o.local,
                remote: o.remote,
                congestion: o.congestion,
                samples: o.samples.clone(),
                model: o.model.clone(),
            })
            .collect()
    }
}

/// Writes one CSV per series into `dir` (created if missing), named
/// `tcp-<id>-<machine>-<local port>.csv`; returns the paths.
///
/// Columns: `time_ns, cwnd, ssthresh, srtt_ns, bytes_acked,
/// retransmitted_segments, throughput_bps` (the last: bytes acknowledged
/// since the previous sample × 8 / elapsed time; empty on the first row).
/// `ssthresh` is empty while it is still infinite. A connection with a
/// model (BBR) has four more: `pacing_rate_bps, bw_bps, min_rtt_ns,
/// bbr_state`.
///
/// # Errors
/// If the directory or a file cannot be written.
pub fn write_csv(dir: &Path, series: &[Series]) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut paths = Vec::with_capacity(series.len());
    for s in series {
        let name = format!("tcp-{}-{}-{}.csv", s.id, s.machine, s.local.port());
        let path = dir.join(name);
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
        let with_model = !s.model.is_empty() && s.model.len() == s.samples.len();
        write!(
            f,
            "time_ns,cwnd,ssthresh,srtt_ns,bytes_acked,retransmitted_segments,throughput_bps"
        )?;
        writeln!(
            f,
            "{}",
            if with_model {
                ",pacing_rate_bps,bw_bps,min_rtt_ns,bbr_state"
            } else {
                ""
            }
        )?;
        let mut prev: Option<&Sample> = None;
        for (i, x) in s.samples.iter().enumerate() {
            let ssthresh = if x.ssthresh >= u64::MAX / 2 {
                String::new()
            } else {
                x.ssthresh.to_string()
            };
            let tput = match prev {
                Some(p) if x.time_ns > p.time_ns => {
                    let bits = u128::from(x.bytes_acked - p.bytes_acked) * 8 * 1_000_000_000;
                    (bits / u128::from(x.time_ns - p.time_ns)).to_string()
                }
                _ => String::new(),
            };
            write!(
                f,
                "{},{},{},{},{},{},{}",
                x.time_ns,
                x.cwnd,
                ssthresh,
                x.srtt_ns,
                x.bytes_acked,
                x.retransmitted_segments,
                tput
            )?;
            match s.model.get(i).filter(|_| with_model) {
                Some(m) => writeln!(
                    f,
                    ",{},{},{},{}",
                    m.pacing_rate_bps, m.bw_bps, m.min_rtt_ns, m.state
                )?,
                None => writeln!(f)?,
            }
            prev = Some(x);
        }
        f.flush()?;
        paths.push(path);
    }
    Ok(paths)
}
