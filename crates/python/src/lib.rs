//! The native half of the `elvis` Python package (`python/elvis/`): NDL
//! text or a file in, the run's report out as JSON text, which the Python
//! half turns into dicts, lists and (with pandas) DataFrames.
//!
//! ```text
//!   elvis.run(ndl, seed=…, until=…)            python/elvis/__init__.py
//!        │  run_text / run_file
//!        ▼
//!   elvis_ndl::parse  →  elvis_build::build_owned  →  Simulation::run_with
//!        │                                               │
//!        └── NdlError (file, line, col, message, hint) ◄─┘ report as JSON
//! ```
//!
//! Errors become `elvis.NdlError` (a `ValueError`) whose `args` are
//! `(text, file, line, col, message, hint)`: `text` is the one line the
//! command line prints (`file:line:col: error: … (hint: …)`). A scenario
//! problem found by the builder is located the same way.
//!
//! Unlike the rest of the workspace this crate does not forbid `unsafe`:
//! pyo3's macros (`#[pymodule]`, `#[pyfunction]`, `create_exception!`)
//! expand to `unsafe` FFI code inside this crate. There is no `unsafe`
//! written by hand here.
//!
//! # Gaps
//! - The run holds the GIL (the simulation is single-threaded and not
//!   `Send`), and Ctrl-C is seen only when the run returns.
//! - No traces, pcaps or plots: the command line writes those.
#![deny(clippy::unwrap_used)]

use elvis_scenario::Scenario;
use elvis_sim::{RunLimits, Time};
use pyo3::prelude::*;

pyo3::create_exception!(
    _native,
    NdlError,
    pyo3::exceptions::PyValueError,
    "A scenario that does not parse or build, located: args are (text, file, line, col, message, hint)."
);

/// Returns a located error as `NdlError`.
fn located(file: &str, line: u32, col: u32, message: &str, hint: Option<&str>) -> PyErr {
    let mut text = if line > 0 {
        format!("{file}:{line}:{col}: error: {message}")
    } else {
        format!("{file}: error: {message}")
    };
    if let Some(h) = hint {
        text.push_str(&format!(" (hint: {h})"));
    }
    NdlError::new_err((
        text,
        file.to_string(),
        line,
        col,
        message.to_string(),
        hint.map(str::to_string),
    ))
}

fn ndl_error(e: &elvis_ndl::NdlError) -> PyErr {
    located(
        &e.file,
        e.loc.line,
        e.loc.col,
        &e.message,
        e.hint.as_deref(),
    )
}

/// Parses `until` (`'10s'`, `'250ms'`).
fn parse_until(until: Option<&str>) -> PyResult<Option<Time>> {
    match until {
        None => Ok(None),
        Some(u) => elvis_ndl::parse_duration_ns(u)
            .map(|ns| Some(Time::from_nanos(ns)))
            .map_err(|e| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "until='{u}': {e} (hint: write e.g. until='10s')"
                ))
            }),
    }
}

/// A run's report as JSON text, and the scenario's warnings.
type Outcome = (String, Vec<Warning>);
/// `(file, line, col, message)`.
type Warning = (String, u32, u32, String);

fn warnings(scenario: &Scenario, file: &str) -> Vec<Warning> {
    (scenario.warnings.iter())
        .map(|w| (file.to_string(), w.loc.line, w.loc.col, w.message.clone()))
        .collect()
}

/// Builds and runs `scenario` read from `file`.
fn run(
    scenario: Scenario,
    file: &str,
    seed: Option<u64>,
    until: Option<&str>,
) -> PyResult<Outcome> {
    let until = parse_until(until)?;
    let warned = warnings(&scenario, file);
    let mut built = elvis_build::build_owned(scenario, seed)
        .map_err(|e| located(file, e.loc.line, e.loc.col, &e.message, e.hint.as_deref()))?;
    let limits = RunLimits {
        until: until.or(built.until),
    };
    let report = built.sim.run_with(limits, &mut |_| {});
    let json = serde_json::to_string(&report)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(format!("report: {e}")))?;
    Ok((json, warned))
}

/// Runs the NDL text `ndl` (named `name` in errors; relative file names in
/// it are read from `base_dir`); returns the report as JSON text and the
/// warnings.
#[pyfunction]
#[pyo3(signature = (ndl, name="<string>", seed=None, until=None, base_dir=None))]
fn run_text(
    ndl: &str,
    name: &str,
    seed: Option<u64>,
    until: Option<&str>,
    base_dir: Option<String>,
) -> PyResult<Outcome> {
    let mut scenario = elvis_ndl::parse(ndl, name).map_err(|e| ndl_error(&e))?;
    if base_dir.is_some() {
        scenario.base_dir = base_dir;
    }
    run(scenario, name, seed, until)
}

/// Runs the NDL file at `path`; returns the report as JSON text and the
/// warnings.
#[pyfunction]
#[pyo3(signature = (path, seed=None, until=None))]
fn run_file(path: &str, seed: Option<u64>, until: Option<&str>) -> PyResult<Outcome> {
    let scenario = elvis_ndl::parse_file(path).map_err(|e| ndl_error(&e))?;
    run(scenario, path, seed, until)
}

/// Parses the NDL text `ndl` without running it; returns its warnings as
/// `(file, line, col, message)` tuples.
#[pyfunction]
#[pyo3(signature = (ndl, name="<string>"))]
fn check_text(ndl: &str, name: &str) -> PyResult<Vec<Warning>> {
    let scenario = elvis_ndl::parse(ndl, name).map_err(|e| ndl_error(&e))?;
    Ok(warnings(&scenario, name))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_text, m)?)?;
    m.add_function(wrap_pyfunction!(run_file, m)?)?;
    m.add_function(wrap_pyfunction!(check_text, m)?)?;
    m.add("NdlError", m.py().get_type::<NdlError>())?;
    Ok(())
}
