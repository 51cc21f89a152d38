//! The paper's numbers, typed from its text (Loukili et al., seed 004).
//!
//! Tables 2–4 are given in full. The figures (2–14) are images whose bar
//! values the text does not list; what the text says about them (orders,
//! ratios, a few values in seconds) is kept as [`Claim`]s, each checked
//! against the runs in `tables.rs`.

/// Table 2, shared bandwidth percentage (same server type): per scenario
/// C1, C2, C3: ST IIS, BT IIS, ST Apache, BT Apache.
pub const TABLE2: [(&str, [f64; 4]); 3] = [
    ("C1", [84.1, 87.0, 84.4, 93.9]),
    ("C2", [88.5, 89.9, 95.7, 87.0]),
    ("C3", [83.6, 88.3, 85.7, 95.9]),
];

/// Table 3, shared bandwidth percentage (different servers): per
/// scenario: ST IIS, BT Apache (Server IIS, BT Server Apache), then ST
/// Apache, BT IIS (Server Apache, BT Server IIS).
pub const TABLE3: [(&str, [f64; 4]); 3] = [
    ("C1", [90.7, 84.3, 83.5, 96.8]),
    ("C2", [97.1, 86.4, 87.4, 90.0]),
    ("C3", [85.7, 85.8, 85.2, 98.0]),
];

/// Table 4, client throughput (competing servers, 504 KB) as a share of
/// the allowed rate: C1 Stress, C2 Stress, Cbt. The rows are the cases
/// (S1, S2, BTS) = (Apache, Apache, IIS), (IIS, IIS, Apache), (IIS,
/// Apache, Apache).
pub const TABLE4: [(&str, [f64; 3]); 3] = [
    ("S1, S2 Apache, BTS IIS", [87.3, 88.1, 84.5]),
    ("S1, S2 IIS, BTS Apache", [86.8, 88.1, 85.6]),
    ("S1 IIS, S2 Apache, BTS Apache", [88.0, 86.9, 85.7]),
];

/// Fig. 12 (§4.3 text): the browsers' server delays, s, per case: S1, S2
/// ("35 and 40 second delays", "equal delays of about 20 seconds",
/// "Apache … 50 seconds, whereas IIS maintains its 20 second delay").
pub const FIG12: [(&str, [f64; 2]); 3] = [
    ("S1, S2 Apache, BTS IIS", [35.0, 40.0]),
    ("S1, S2 IIS, BTS Apache", [20.0, 20.0]),
    ("S1 IIS, S2 Apache, BTS Apache", [20.0, 50.0]),
];

/// A relation the text states between measured quantities.
pub struct Claim {
    /// Where: `Fig. 2`, …
    pub figure: &'static str,
    /// The relation as the paper writes it.
    pub text: &'static str,
    /// A chain of terms, each a (server kind, scenario) delay, compared
    /// left to right: `>` (larger by more than 5 %), `≈` (within 15 %),
    /// `<`.
    pub chain: &'static [(&'static str, &'static str)],
    pub ops: &'static [&'static str],
    /// The browser's object, KB.
    pub size_kb: u32,
}

/// The orders of the same-type delays (§4.1, Figs. 2–4).
pub const DELAY_CLAIMS: [Claim; 3] = [
    Claim {
        figure: "Fig. 2",
        text: "t_IIS(C3) > t_IIS(C1) ≈ t_IIS(C2) ≈ t_Apache(C2) > t_Apache(C3) > t_Apache(C1)",
        chain: &[
            ("IIS", "C3"),
            ("IIS", "C1"),
            ("IIS", "C2"),
            ("Apache", "C2"),
            ("Apache", "C3"),
            ("Apache", "C1"),
        ],
        ops: &[">", "≈", "≈", ">", ">"],
        size_kb: 504,
    },
    Claim {
        figure: "Fig. 3",
        text: "t_IIS(C3) ≈ t_IIS(C1) > t_IIS(C2) > t_Apache(C3) ≈ t_Apache(C1) > t_Apache(C2)",
        chain: &[
            ("IIS", "C3"),
            ("IIS", "C1"),
            ("IIS", "C2"),
            ("Apache", "C3"),
            ("Apache", "C1"),
            ("Apache", "C2"),
        ],
        ops: &["≈", ">", ">", "≈", ">"],
        size_kb: 320,
    },
    Claim {
        figure: "Fig. 4",
        text: "t_IIS(C1) < t_Apache(C1) ≈ t_IIS(C3) < t_IIS(C2) < t_Apache(C2) < t_Apache(C3)",
        chain: &[
            ("IIS", "C1"),
            ("Apache", "C1"),
            ("IIS", "C3"),
            ("IIS", "C2"),
            ("Apache", "C2"),
            ("Apache", "C3"),
        ],
        ops: &["<", "≈", "<", "<", "<"],
        size_kb: 160,
    },
];

/// Checks `a op b` for delays: `>` larger by more than 5 %, `<` smaller
/// by more than 5 %, `≈` within 15 % of each other.
pub fn holds(a: f64, op: &str, b: f64) -> bool {
    let (lo, hi) = (a.min(b), a.max(b));
    match op {
        ">" => a > b * 1.05,
        "<" => a * 1.05 < b,
        _ => hi <= lo * 1.15,
    }
}
