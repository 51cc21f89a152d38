//! Video streaming over HTTP/1.1, after MPEG-DASH (ISO/IEC 23009-1): a
//! video cut into segments of a fixed duration, each encoded at every
//! bitrate of a ladder, a manifest that lists them, and an adaptive client
//! ([`client`]) that picks a bitrate per segment ([`abr`]) and plays a
//! buffer in virtual time ([`playback`]).
//!
//! A `video_server` is a `web_server` that also serves one [`Video`]:
//!
//! | path | what |
//! |---|---|
//! | `/video/manifest` | the manifest, real text ([`Video::manifest`]) |
//! | `/video/<rep>/<index>` | segment `index` (0-based) at rung `rep` (0-based, lowest bitrate first): virtual payload of [`Video::size`] bytes |
//!
//! A segment of rung `r` lasting `d` ns is `bitrate_r × d / 8` bytes
//! (rounded down), times `1 + variation × (2u − 1)` with `u` uniform in
//! [0, 1) drawn from a stream seeded by `(r, index)`, so every server
//! serves the same sizes. The last segment is shorter when the segment
//! duration does not divide the video's.
//!
//! The manifest is this module's own format, not MPD XML, one `key value`
//! line each:
//!
//! ```text
//! ELVIS-VIDEO 1
//! segment_ns 4000000000
//! duration_ns 600000000000
//! segments 150
//! bitrates_kbps 235 375 560 750 1050 1750 2350 3000 4300
//! ```
//!
//! # Gaps
//! - One video per server, no audio adaptation set, no live profile, no
//!   MPD XML; the client estimates sizes from the nominal bitrates (as
//!   dash.js does from `@bandwidth`), not from per-segment indexes.

pub mod abr;
pub mod client;
pub mod playback;

use crate::site::SplitMix;

/// The ladder used when none is given, kbit/s: the first nine rungs of
/// the fixed ladder Netflix encoded every title with before per-title
/// encoding (235 kbit/s at 320x240 up to 4,300 kbit/s at 1080p; "Per-Title
/// Encode Optimization", Netflix Technology Blog, 2015; its tenth rung,
/// 5,800 kbit/s, is left out).
pub const DEFAULT_LADDER_KBPS: [u64; 9] = [235, 375, 560, 750, 1050, 1750, 2350, 3000, 4300];

/// The path of the manifest.
pub const MANIFEST_PATH: &str = "/video/manifest";

/// The longest manifest a client reads.
pub const MAX_MANIFEST: usize = 4096;

/// The most rungs in a ladder.
pub const MAX_RUNGS: usize = 32;

/// A video: its ladder, segment duration and length.
#[derive(Clone, Debug, PartialEq)]
pub struct Video {
    /// Bitrates, kbit/s, strictly increasing.
    pub ladder_kbps: Vec<u64>,
    /// A segment's duration, ns.
    pub segment_ns: u64,
    /// The whole video's duration, ns.
    pub duration_ns: u64,
    /// Per-segment size variation, 0 ≤ v < 1 (0: every segment of a rung
    /// is exactly bitrate × duration).
    pub variation: f64,
}

/// What a `/video/…` path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    Manifest,
    Segment { rep: usize, index: u64 },
}

impl Video {
    /// A video of `duration_ns` in segments of `segment_ns` over
    /// `ladder_kbps`.
    ///
    /// # Errors
    /// An empty, unsorted or oversized ladder, a zero bitrate or duration,
    /// a variation outside [0, 1), a segment longer than the video.
    pub fn new(
        ladder_kbps: Vec<u64>,
        segment_ns: u64,
        duration_ns: u64,
        variation: f64,
    ) -> Result<Video, String> {
        check_ladder(&ladder_kbps)?;
        if segment_ns == 0 || duration_ns == 0 {
            return Err("segment and video durations must be more than 0".into());
        }
        if segment_ns > duration_ns {
            return Err("the segment is longer than the video".into());
        }
        if !(0.0..1.0).contains(&variation) {
            return Err(format!("variation {variation} is not in [0, 1)"));
        }
        Ok(Video {
            ladder_kbps,
            segment_ns,
            duration_ns,
            variation,
        })
    }

    /// Returns the number of segments.
    pub fn segments(&self) -> u64 {
        self.duration_ns.div_ceil(self.segment_ns)
    }

    /// Returns segment `index`'s duration, ns (the last may be shorter).
    pub fn duration_of(&self, index: u64) -> u64 {
        let start = index.saturating_mul(self.segment_ns);
        self.duration_ns.saturating_sub(start).min(self.segment_ns)
    }

    /// Returns the nominal size, bytes, of segment `index` at rung `rep`:
    /// bitrate × duration / 8.
    pub fn nominal_size(&self, rep: usize, index: u64) -> u64 {
        let kbps = self.ladder_kbps.get(rep).copied().unwrap_or(0);
        nominal(kbps, self.duration_of(index))
    }

    /// Returns the size, bytes, of segment `index` at rung `rep`: the
    /// nominal size with its seeded variation.
    pub fn size(&self, rep: usize, index: u64) -> u64 {
        let n = self.nominal_size(rep, index);
        if self.variation == 0.0 {
            return n;
        }
        let mut r = SplitMix(((rep as u64) << 48) ^ index ^ 0x005E_ED0F_7157);
        let u = (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        ((n as f64) * (1.0 + self.variation * (2.0 * u - 1.0))).round() as u64
    }

    /// Returns the manifest's text.
    pub fn manifest(&self) -> String {
        let rates: Vec<String> = self.ladder_kbps.iter().map(u64::to_string).collect();
        format!(
            "ELVIS-VIDEO 1\nsegment_ns {}\nduration_ns {}\nsegments {}\nbitrates_kbps {}\n",
            self.segment_ns,
            self.duration_ns,
            self.segments(),
            rates.join(" ")
        )
    }

    /// Reads a manifest (the variation is the server's: 0 here).
    ///
    /// # Errors
    /// Not the format above, or values [`Video::new`] refuses.
    pub fn parse_manifest(text: &[u8]) -> Result<Video, String> {
        let text = std::str::from_utf8(text).map_err(|_| "the manifest is not text")?;
        let mut lines = text.lines();
        if lines.next().map(str::trim) != Some("ELVIS-VIDEO 1") {
            return Err("the manifest does not start with 'ELVIS-VIDEO 1'".into());
        }
        let (mut seg, mut dur, mut count, mut ladder) = (None, None, None, None);
        for line in lines.map(str::trim).filter(|l| !l.is_empty()) {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            let num = |v: &str| {
                v.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("manifest: '{line}' is not a number"))
            };
            match key {
                "segment_ns" => seg = Some(num(value)?),
                "duration_ns" => dur = Some(num(value)?),
                "segments" => count = Some(num(value)?),
                "bitrates_kbps" => {
                    ladder = Some(
                        value
                            .split_whitespace()
                            .map(num)
                            .collect::<Result<Vec<u64>, String>>()?,
                    )
                }
                _ => {} // unknown keys are for later versions
            }
        }
        let missing = |k: &str| format!("the manifest has no {k}");
        let v = Video::new(
            ladder.ok_or_else(|| missing("bitrates_kbps"))?,
            seg.ok_or_else(|| missing("segment_ns"))?,
            dur.ok_or_else(|| missing("duration_ns"))?,
            0.0,
        )?;
        if count.is_some_and(|c| c != v.segments()) {
            return Err("the manifest's segment count disagrees with its durations".into());
        }
        Ok(v)
    }

    /// Returns what `path` names in this video, or `None` (a 404).
    pub fn resource(&self, path: &str) -> Option<Resource> {
        let path = path.split(['?', '#']).next().unwrap_or("");
        if path == MANIFEST_PATH {
            return Some(Resource::Manifest);
        }
        let (rep, index) = path.strip_prefix("/video/")?.split_once('/')?;
        let rep: usize = rep.parse().ok()?;
        let index: u64 = index.parse().ok()?;
        (rep < self.ladder_kbps.len() && index < self.segments())
            .then_some(Resource::Segment { rep, index })
    }
}

/// Returns the path of segment `index` at rung `rep`.
pub fn segment_path(rep: usize, index: u64) -> String {
    format!("/video/{rep}/{index}")
}

/// Returns `kbps` × `ns` / 8, bytes (rounded down).
pub fn nominal(kbps: u64, ns: u64) -> u64 {
    (u128::from(kbps) * u128::from(ns) / 8_000_000) as u64
}

fn check_ladder(l: &[u64]) -> Result<(), String> {
    if l.is_empty() || l.len() > MAX_RUNGS {
        return Err(format!("a ladder has 1 to {MAX_RUNGS} bitrates"));
    }
    if l[0] == 0 {
        return Err("a bitrate of 0".into());
    }
    if l.windows(2).any(|w| w[0] >= w[1]) {
        return Err("the bitrates must increase".into());
    }
    if l.iter().any(|&b| b > 1_000_000_000) {
        return Err("a bitrate above 1 Tbit/s".into());
    }
    Ok(())
}

/// Parses a ladder `'235,375,560'` (kbit/s, increasing).
///
/// # Errors
/// Not numbers, or a ladder [`Video::new`] refuses.
pub fn parse_ladder(s: &str) -> Result<Vec<u64>, String> {
    let l = s
        .split(',')
        .map(|b| {
            b.trim()
                .parse::<u64>()
                .map_err(|_| format!("'{}' is not a bitrate in kbit/s", b.trim()))
        })
        .collect::<Result<Vec<u64>, String>>()?;
    check_ladder(&l)?;
    Ok(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn video() -> Video {
        Video::new(
            DEFAULT_LADDER_KBPS.to_vec(),
            4_000_000_000,
            10_000_000_000,
            0.0,
        )
        .unwrap()
    }

    #[test]
    fn sizes_are_bitrate_times_duration_and_the_last_segment_is_shorter() {
        let v = video();
        assert_eq!(v.segments(), 3);
        // 235 kbit/s x 4 s = 940,000 bits = 117,500 bytes.
        assert_eq!(v.size(0, 0), 117_500);
        // 4,300 kbit/s x 4 s / 8 = 2,150,000 bytes.
        assert_eq!(v.size(8, 1), 2_150_000);
        // The third lasts 2 s: 4,300 x 2 / 8 kB.
        assert_eq!(v.duration_of(2), 2_000_000_000);
        assert_eq!(v.size(8, 2), 1_075_000);
    }

    #[test]
    fn the_manifest_reads_back_as_the_video() {
        let v = video();
        let text = v.manifest();
        assert_eq!(
            text,
            "ELVIS-VIDEO 1\nsegment_ns 4000000000\nduration_ns 10000000000\nsegments 3\n\
             bitrates_kbps 235 375 560 750 1050 1750 2350 3000 4300\n"
        );
        assert_eq!(Video::parse_manifest(text.as_bytes()), Ok(v));
    }

    #[test]
    fn bad_manifests_are_errors_not_panics() {
        for bad in [
            &b""[..],
            b"ELVIS-VIDEO 2\n",
            b"ELVIS-VIDEO 1\nsegment_ns 4\n",
            b"ELVIS-VIDEO 1\nsegment_ns x\nduration_ns 8\nbitrates_kbps 1\n",
            b"ELVIS-VIDEO 1\nsegment_ns 4\nduration_ns 8\nbitrates_kbps 2 1\n",
            b"ELVIS-VIDEO 1\nsegment_ns 0\nduration_ns 8\nbitrates_kbps 1\n",
            b"ELVIS-VIDEO 1\nsegment_ns 4\nduration_ns 8\nsegments 3\nbitrates_kbps 1\n",
            b"\xff\xfe",
        ] {
            assert!(Video::parse_manifest(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn paths_name_the_manifest_and_segments_in_range_only() {
        let v = video();
        assert_eq!(v.resource("/video/manifest"), Some(Resource::Manifest));
        assert_eq!(
            v.resource("/video/8/2"),
            Some(Resource::Segment { rep: 8, index: 2 })
        );
        assert_eq!(
            v.resource(&segment_path(3, 1)),
            Some(Resource::Segment { rep: 3, index: 1 })
        );
        for p in [
            "/video/9/0",
            "/video/0/3",
            "/video/x/1",
            "/video/1",
            "/video/",
        ] {
            assert_eq!(v.resource(p), None, "{p}");
        }
    }

    #[test]
    fn variation_stays_within_its_band_and_is_the_same_each_time() {
        let mut v = video();
        v.variation = 0.2;
        let mut differ = false;
        for i in 0..3 {
            let (n, s) = (v.nominal_size(4, i), v.size(4, i));
            assert!(s as f64 >= n as f64 * 0.8 && s as f64 <= n as f64 * 1.2);
            assert_eq!(s, v.size(4, i));
            differ |= s != n;
        }
        assert!(differ);
    }

    #[test]
    fn ladders_parse_and_bad_ones_are_refused() {
        assert_eq!(parse_ladder("235, 375,560"), Ok(vec![235, 375, 560]));
        for bad in ["", "235,,375", "375,235", "0,1", "a"] {
            assert!(parse_ladder(bad).is_err(), "{bad}");
        }
    }
}
