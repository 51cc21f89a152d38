//! A uniform grid of the stations' positions, so that finding who hears
//! a frame costs in proportion to the stations near the sender, not to
//! every station of the network.
//!
//! # Design
//! Moving stations' positions are computed lazily ([`super::mobility`]),
//! so the grid does not follow them continuously. It holds every
//! station's cell as of one instant `built_at` and is rebuilt when it is
//! older than `margin / vmax` (`vmax`: the fastest speed of the network's
//! mobility model, `margin`: a quarter of the reach). A station has
//! moved at most `vmax × (now − built_at) ≤ margin` since, so every
//! station that can hear the sender now was, at `built_at`, within
//! `reach + vmax × (now − built_at)` of the sender's current position:
//! a query visits the cells that square of that half-width overlaps
//! (at most 3 × 3, the cell side being `reach + margin`). Static
//! stations never need a rebuild; a new station or a moved one marks the
//! grid stale.
//!
//! # Why results do not change
//! The grid only proposes candidates, a superset of the hearers. Each
//! candidate then gets exactly the test of the full scan (its position
//! now, the distance, the power against the floor), and the candidates
//! are taken in port order, so the hearers, their powers and their order
//! are those of the full scan. `reach` is the distance beyond which no
//! station gets the floor power (the carrier-sense range of the unit
//! disk, the larger of the two ranges under the path-loss models, whose
//! power falls monotonically with distance), plus a slack far above
//! floating-point rounding. A model whose power falls too slowly for that
//! slack to be safe (a path-loss exponent below ½) is not indexed. Each
//! moving station draws its legs from its own stream, so the legs drawn
//! for a station do not depend on when, or whether, anyone asks where it
//! is.

/// A grid of stations' cells as of one instant.
#[derive(Debug, Default)]
pub(crate) struct Grid {
    /// The hearing reach plus slack, m.
    reach: f64,
    /// How far stations may move before a rebuild, m.
    margin: f64,
    /// Side of a cell, m.
    cell: f64,
    /// The fastest a station moves, m/s.
    vmax: f64,
    /// When the cells were taken (`None`: stale).
    pub built_at: Option<u64>,
    origin: [f64; 2],
    cols: usize,
    rows: usize,
    /// Cell `c`'s stations are `ports[start[c]..start[c + 1]]`, in port
    /// order.
    start: Vec<u32>,
    ports: Vec<u32>,
    /// Scratch: each station's cell at the last build.
    cell_of: Vec<u32>,
}

impl Grid {
    /// A stale grid for hearers within `reach` metres of a sender, for
    /// stations moving at most `vmax` m/s.
    pub fn new(reach: f64, vmax: f64) -> Grid {
        let reach = reach + reach * 1e-6 + 1e-3;
        let margin = reach / 4.0;
        Grid {
            reach,
            margin,
            cell: reach + margin,
            vmax,
            ..Grid::default()
        }
    }

    /// Returns whether the grid must be rebuilt before a query at `now`.
    pub fn stale(&self, now: u64) -> bool {
        match self.built_at {
            None => true,
            Some(t) => self.vmax > 0.0 && (now - t) as f64 / 1e9 * self.vmax > self.margin,
        }
    }

    /// Takes the cells of `pos` (each station's position at `now`).
    pub fn build(&mut self, pos: &[[f64; 2]], now: u64) {
        let (mut lo, mut hi) = ([f64::MAX; 2], [f64::MIN; 2]);
        for p in pos {
            for k in 0..2 {
                lo[k] = lo[k].min(p[k]);
                hi[k] = hi[k].max(p[k]);
            }
        }
        if pos.is_empty() {
            (lo, hi) = ([0.0; 2], [0.0; 2]);
        }
        // Few cells per station: stations far apart (static positions can
        // be anywhere) get coarser cells, which only adds candidates.
        let mut cell = self.cell;
        let span = |c: f64, k: usize| ((hi[k] - lo[k]) / c).floor() as usize + 1;
        while span(cell, 0).saturating_mul(span(cell, 1)) > 4 * pos.len() + 64 {
            cell *= 2.0;
        }
        self.cell = cell;
        self.origin = lo;
        (self.cols, self.rows) = (span(cell, 0), span(cell, 1));
        let cells = self.cols * self.rows;
        self.start.clear();
        self.start.resize(cells + 1, 0);
        self.cell_of.clear();
        for p in pos {
            let c = self.cell_index(*p);
            self.cell_of.push(c as u32);
            self.start[c + 1] += 1;
        }
        for c in 0..cells {
            self.start[c + 1] += self.start[c];
        }
        self.ports.clear();
        self.ports.resize(pos.len(), 0);
        let mut fill = self.start.clone();
        for (port, &c) in self.cell_of.iter().enumerate() {
            self.ports[fill[c as usize] as usize] = port as u32;
            fill[c as usize] += 1;
        }
        self.built_at = Some(now);
    }

    fn axis(&self, v: f64, k: usize, n: usize) -> usize {
        let i = ((v - self.origin[k]) / self.cell).floor();
        if i < 0.0 {
            0
        } else {
            (i as usize).min(n - 1)
        }
    }

    fn cell_index(&self, p: [f64; 2]) -> usize {
        self.axis(p[1], 1, self.rows) * self.cols + self.axis(p[0], 0, self.cols)
    }

    /// Appends to `out`, in port order, the stations that may hear a
    /// sender at `at` at `now` (a superset of those within the reach).
    pub fn candidates(&self, at: [f64; 2], now: u64, out: &mut Vec<u32>) {
        let since = now.saturating_sub(self.built_at.unwrap_or(now));
        let r = self.reach + self.vmax * since as f64 / 1e9;
        let (x0, x1) = (
            self.axis(at[0] - r, 0, self.cols),
            self.axis(at[0] + r, 0, self.cols),
        );
        let (y0, y1) = (
            self.axis(at[1] - r, 1, self.rows),
            self.axis(at[1] + r, 1, self.rows),
        );
        for y in y0..=y1 {
            let row = y * self.cols;
            let (a, b) = (self.start[row + x0], self.start[row + x1 + 1]);
            out.extend_from_slice(&self.ports[a as usize..b as usize]);
        }
        out.sort_unstable();
    }
}
