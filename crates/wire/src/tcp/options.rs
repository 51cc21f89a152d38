//! TCP options (RFC 9293 §3.1): [`TcpOption`], one option read from or
//! written to the options region, and how a [`Repr`] lays its options out
//! (as Linux does when that fits in 40 bytes, packed otherwise).

use super::{be16, be32, field, Repr, MAX_OPTIONS_LEN, MAX_SACK_BLOCKS};
use crate::{Error, Result};
use std::fmt;

/// One TCP option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TcpOption<'a> {
    /// End of option list (kind 0): the rest of the region is padding.
    EndOfList,
    /// No-operation (kind 1), used for alignment.
    NoOperation,
    /// Maximum segment size (kind 2, RFC 9293 §3.7.1).
    MaxSegmentSize(u16),
    /// Window scale shift count (kind 3, RFC 7323 §2), as sent.
    WindowScale(u8),
    /// SACK permitted (kind 4, RFC 2018 §2).
    SackPermitted,
    /// SACK blocks (kind 5, RFC 2018 §3): (left edge, right edge), the
    /// leading entries `Some`.
    SackRange([Option<(u32, u32)>; MAX_SACK_BLOCKS]),
    /// Timestamps (kind 8, RFC 7323 §3).
    Timestamp {
        /// TSval: the sender's clock.
        tsval: u32,
        /// TSecr: the echoed TSval.
        tsecr: u32,
    },
    /// Any other kind, with its data (after kind and length).
    Unknown {
        /// The option kind.
        kind: u8,
        /// The option data.
        data: &'a [u8],
    },
}

impl<'a> TcpOption<'a> {
    /// Reads the option at the start of `buffer` (which must not be
    /// empty); returns the bytes after it and the option.
    ///
    /// # Errors
    /// [`Error::Truncated`] for an empty buffer; [`Error::Malformed`] for
    /// an option cut short, a length below 2, or a known kind with a wrong
    /// length.
    pub fn parse(buffer: &'a [u8]) -> Result<(&'a [u8], TcpOption<'a>)> {
        let (&kind, rest) = buffer.split_first().ok_or(Error::Truncated)?;
        match kind {
            field::OPT_EOL => return Ok((rest, TcpOption::EndOfList)),
            field::OPT_NOP => return Ok((rest, TcpOption::NoOperation)),
            _ => {}
        }
        let len = usize::from(*rest.first().ok_or(Error::Malformed)?);
        if len < 2 || len > buffer.len() {
            return Err(Error::Malformed);
        }
        let (data, rest) = (&buffer[2..len], &buffer[len..]);
        let opt = match (kind, len) {
            (field::OPT_MSS, 4) => TcpOption::MaxSegmentSize(be16(data)),
            (field::OPT_WS, 3) => TcpOption::WindowScale(data[0]),
            (field::OPT_SACK_PERM, 2) => TcpOption::SackPermitted,
            (field::OPT_SACK, 10 | 18 | 26 | 34) => {
                let mut blocks = [None; MAX_SACK_BLOCKS];
                for (b, d) in blocks.iter_mut().zip(data.chunks_exact(8)) {
                    *b = Some((be32(&d[..4]), be32(&d[4..])));
                }
                TcpOption::SackRange(blocks)
            }
            (field::OPT_TS, 10) => TcpOption::Timestamp {
                tsval: be32(&data[..4]),
                tsecr: be32(&data[4..]),
            },
            (field::OPT_MSS | field::OPT_WS | field::OPT_SACK_PERM, _)
            | (field::OPT_SACK | field::OPT_TS, _) => return Err(Error::Malformed),
            _ => TcpOption::Unknown { kind, data },
        };
        Ok((rest, opt))
    }

    /// Returns the option's length in bytes.
    pub fn buffer_len(&self) -> usize {
        match self {
            TcpOption::EndOfList | TcpOption::NoOperation => 1,
            TcpOption::MaxSegmentSize(_) => 4,
            TcpOption::WindowScale(_) => 3,
            TcpOption::SackPermitted => 2,
            TcpOption::SackRange(r) => 2 + 8 * r.iter().flatten().count(),
            TcpOption::Timestamp { .. } => 10,
            TcpOption::Unknown { data, .. } => 2 + data.len(),
        }
    }

    /// Writes the option at the start of `buffer` and returns the bytes
    /// after it. `None` SACK blocks are skipped.
    ///
    /// # Panics
    /// Panics if `buffer` is shorter than [`TcpOption::buffer_len`], or an
    /// unknown option's data exceeds 253 bytes.
    pub fn emit<'b>(&self, buffer: &'b mut [u8]) -> &'b mut [u8] {
        let len = self.buffer_len();
        let (out, rest) = buffer.split_at_mut(len);
        out[0] = match self {
            TcpOption::EndOfList => field::OPT_EOL,
            TcpOption::NoOperation => field::OPT_NOP,
            TcpOption::MaxSegmentSize(_) => field::OPT_MSS,
            TcpOption::WindowScale(_) => field::OPT_WS,
            TcpOption::SackPermitted => field::OPT_SACK_PERM,
            TcpOption::SackRange(_) => field::OPT_SACK,
            TcpOption::Timestamp { .. } => field::OPT_TS,
            TcpOption::Unknown { kind, .. } => *kind,
        };
        if len > 1 {
            out[1] = u8::try_from(len).expect("TCP option too long");
        }
        let data = &mut out[usize::min(2, len)..];
        match self {
            TcpOption::EndOfList | TcpOption::NoOperation | TcpOption::SackPermitted => {}
            TcpOption::MaxSegmentSize(v) => data.copy_from_slice(&v.to_be_bytes()),
            TcpOption::WindowScale(v) => data[0] = *v,
            TcpOption::SackRange(blocks) => {
                for ((left, right), d) in blocks.iter().flatten().zip(data.chunks_exact_mut(8)) {
                    d[..4].copy_from_slice(&left.to_be_bytes());
                    d[4..].copy_from_slice(&right.to_be_bytes());
                }
            }
            TcpOption::Timestamp { tsval, tsecr } => {
                data[..4].copy_from_slice(&tsval.to_be_bytes());
                data[4..].copy_from_slice(&tsecr.to_be_bytes());
            }
            TcpOption::Unknown { data: d, .. } => data.copy_from_slice(d),
        }
        rest
    }
}

impl fmt::Display for TcpOption<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TcpOption::EndOfList => f.write_str("eol"),
            TcpOption::NoOperation => f.write_str("nop"),
            TcpOption::MaxSegmentSize(v) => write!(f, "mss {v}"),
            TcpOption::WindowScale(v) => write!(f, "wscale {v}"),
            TcpOption::SackPermitted => f.write_str("sackOK"),
            TcpOption::SackRange(r) => {
                write!(f, "sack {}", r.iter().flatten().count())?;
                for (l, r) in r.iter().flatten() {
                    write!(f, " {{{l}:{r}}}")?;
                }
                Ok(())
            }
            TcpOption::Timestamp { tsval, tsecr } => write!(f, "TS val {tsval} ecr {tsecr}"),
            TcpOption::Unknown { kind, data } => write!(f, "opt-{kind}:{}", data.len()),
        }
    }
}

/// How the options are laid out.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Layout {
    /// As Linux: each option aligned to 4 bytes with NOPs.
    Linux,
    /// Packed, then padded with EOL and zeros.
    Packed,
}

impl Repr {
    pub(super) fn sack_blocks(&self) -> usize {
        self.sack_ranges.iter().take_while(|r| r.is_some()).count()
    }

    /// Returns the SACK option: the leading `Some` blocks.
    pub(super) fn sack_option(&self) -> TcpOption<'static> {
        let mut blocks = [None; MAX_SACK_BLOCKS];
        let n = self.sack_blocks();
        blocks[..n].copy_from_slice(&self.sack_ranges[..n]);
        TcpOption::SackRange(blocks)
    }

    /// Returns the option bytes in a layout, before padding.
    pub(super) fn options_len(&self, layout: Layout) -> usize {
        let linux = layout == Layout::Linux;
        let mut len = 0;
        if self.max_seg_size.is_some() {
            len += 4;
        }
        if self.window_scale.is_some() {
            len += if linux { 4 } else { 3 };
        }
        if self.timestamp.is_some() {
            // Linux puts SACK-permitted in the timestamps' two NOPs.
            len += if linux { 12 } else { 10 };
            if self.sack_permitted && !linux {
                len += 2;
            }
        } else if self.sack_permitted {
            len += if linux { 4 } else { 2 };
        }
        match self.sack_blocks() {
            0 => {}
            n => len += if linux { 4 } else { 2 } + 8 * n,
        }
        len
    }

    pub(super) fn layout(&self) -> Layout {
        if self.options_len(Layout::Linux) <= MAX_OPTIONS_LEN {
            Layout::Linux
        } else {
            Layout::Packed
        }
    }

    /// Writes the options into `buf` (exactly the padded options region).
    pub(super) fn emit_options(&self, buf: &mut [u8]) {
        use TcpOption as O;
        if let (Some((tsval, tsecr)), None, None, false, None) = (
            self.timestamp,
            self.max_seg_size,
            self.window_scale,
            self.sack_permitted,
            self.sack_ranges[0],
        ) {
            // Fast path: timestamps alone (NOP, NOP, TS), as the general
            // code below would lay them out.
            if buf.len() == 12 {
                buf[..4].copy_from_slice(&[field::OPT_NOP, field::OPT_NOP, field::OPT_TS, 10]);
                buf[4..8].copy_from_slice(&tsval.to_be_bytes());
                buf[8..].copy_from_slice(&tsecr.to_be_bytes());
                return;
            }
        }
        let linux = self.layout() == Layout::Linux;
        let mut at = 0;
        let mut put = |buf: &mut [u8], o: TcpOption| {
            o.emit(&mut buf[at..]);
            at += o.buffer_len();
        };
        if let Some(mss) = self.max_seg_size {
            put(buf, O::MaxSegmentSize(mss));
        }
        if let Some((tsval, tsecr)) = self.timestamp {
            if self.sack_permitted {
                put(buf, O::SackPermitted);
            } else if linux {
                put(buf, O::NoOperation);
                put(buf, O::NoOperation);
            }
            put(buf, O::Timestamp { tsval, tsecr });
        } else if self.sack_permitted {
            if linux {
                put(buf, O::NoOperation);
                put(buf, O::NoOperation);
            }
            put(buf, O::SackPermitted);
        }
        if let Some(ws) = self.window_scale {
            if linux {
                put(buf, O::NoOperation);
            }
            put(buf, O::WindowScale(ws));
        }
        if self.sack_blocks() > 0 {
            if linux {
                put(buf, O::NoOperation);
                put(buf, O::NoOperation);
            }
            put(buf, self.sack_option());
        }
        // End of list, then zeros (RFC 9293 §3.1).
        buf[at..].fill(field::OPT_EOL);
    }
}
