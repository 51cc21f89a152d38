//! `elvis`: run and check Network Description Language scenarios.
//!
//! ```text
//! elvis run [FILE] [--seed N] [--until 10s] [--wall-limit 300s] [--report out.json|-]
//!           [--pcap DIR] [--tcp-trace DIR [--tcp-trace-every 10ms|change]]
//!           [--queue-trace DIR] [--flows-csv FILE] [--max-memory 8GiB]
//! elvis check FILE [--max-memory 8GiB]
//! elvis example [NAME] [--list] [--write DIR]
//! elvis plot --report FILE [--tcp-trace DIR] [--queue-trace DIR] --out DIR
//! elvis completions SHELL
//! ```
//! Without a FILE, `run` runs the embedded default scenario
//! (`examples/ndl/default.ndl`).
//!
//! Exit status: 0 every application finished as expected; 1 an application
//! failed or its machine crashed; 2 bad input (nothing is written); 3 an
//! application was still waiting when the run ended (time ran out or
//! nothing was left to happen); 4 an application never yielded (watchdog);
//! 5 an output file could not be written (every output path is checked
//! before the run starts).
//!
//! The first SIGINT or SIGTERM ends a run at the current event, like
//! `--wall-limit`: the summary and a complete report (`"end":
//! "interrupted"`) are written, captures end at a frame boundary; a second
//! signal exits at once.
#![forbid(unsafe_code)]

mod examples;
mod interrupt;
mod json;
mod memory;
mod output;
mod plot;
mod render;
mod summary;

use clap::{CommandFactory, Parser, Subcommand};
use elvis_sim::{Progress, RunLimits, Time};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// mimalloc, not the system allocator: building a scenario makes millions
/// of small allocations, and with glibc's malloc those cost about a quarter
/// of a large star's build (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The scenario `elvis run` runs when given no file.
const DEFAULT_SCENARIO: &str = include_str!("../../../examples/ndl/default.ndl");

const RUN_EXAMPLES: &str = "Examples:
  elvis run                                   the embedded default scenario
  elvis run dumbbell.ndl --report out.json    a file, and the JSON report
  elvis run f.ndl --pcap caps/ --seed 7       one pcap per network, another seed
  elvis run f.ndl --tcp-trace tr/ --tcp-trace-every change
  elvis run f.ndl --until 10s --wall-limit 60s
  elvis example dumbbell > d.ndl && elvis run d.ndl";

const CHECK_EXAMPLES: &str = "Examples:
  elvis check star.ndl                        parse, build, estimate memory
  elvis check star.ndl --max-memory 8GiB";

const PLOT_EXAMPLES: &str = "Examples:
  elvis run f.ndl --plot figs/                 run, then draw everything into figs/
  elvis plot --report r.json --tcp-trace tr/ --queue-trace q/ --out figs/ --format svg";

const EXAMPLE_EXAMPLES: &str = "Examples:
  elvis example --list                        the shipped scenarios
  elvis example dumbbell                      print one
  elvis example topology-zoo --write zoo/     write it and the files it reads";

#[derive(Parser)]
#[command(
    name = "elvis",
    version,
    about = "A deterministic virtual Internet on one machine"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs a scenario (the embedded default one when FILE is omitted).
    #[command(after_help = RUN_EXAMPLES)]
    Run(RunArgs),
    /// Checks a scenario without running it.
    #[command(after_help = CHECK_EXAMPLES)]
    Check {
        /// The NDL file.
        file: PathBuf,
        /// Refuse scenarios estimated above this much memory, e.g. `8GiB`
        /// (default: the memory available).
        #[arg(long, value_name = "SIZE")]
        max_memory: Option<String>,
    },
    /// Prints a shipped example scenario (the embedded default one when
    /// NAME is omitted), lists them, or writes one into a directory.
    #[command(after_help = EXAMPLE_EXAMPLES)]
    Example {
        /// The example's name, as `--list` shows it.
        name: Option<String>,
        /// List the examples, a line each.
        #[arg(long, conflicts_with = "name")]
        list: bool,
        /// Write the example, and the files it reads, into this directory
        /// instead of printing it.
        #[arg(long, value_name = "DIR")]
        write: Option<PathBuf>,
    },
    /// Draws figures (SVG and PNG) from a run's report and time series:
    /// cwnd and RTT per connection, queue occupancy, throughput shares,
    /// flow completion times, ping RTTs.
    #[command(after_help = PLOT_EXAMPLES)]
    Plot {
        /// The run's report (`elvis run … --report FILE`).
        #[arg(long)]
        report: PathBuf,
        /// The run's TCP time series (`--tcp-trace DIR`).
        #[arg(long, value_name = "DIR")]
        tcp_trace: Option<PathBuf>,
        /// The run's queue time series (`--queue-trace DIR`).
        #[arg(long, value_name = "DIR")]
        queue_trace: Option<PathBuf>,
        /// Where the figures go.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// png, svg or both.
        #[arg(long, value_enum, default_value = "both")]
        format: plot::Format,
    },
    /// Prints a completion script for a shell (`elvis completions bash >
    /// /etc/bash_completion.d/elvis`).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// The NDL file.
    file: Option<PathBuf>,
    /// Seed of every random stream (overrides the file's `[Simulation]` seed).
    #[arg(long)]
    seed: Option<u64>,
    /// Stop at this virtual time, e.g. `10s`, `250ms` (overrides the file).
    #[arg(long)]
    until: Option<String>,
    /// Write the run report as JSON to this file (`-`: standard output,
    /// and the summary goes to standard error).
    #[arg(long)]
    report: Option<PathBuf>,
    /// Write one pcap per network into this directory.
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Write a time series (cwnd, ssthresh, srtt, bytes acked, throughput)
    /// of every TCP connection as one CSV per connection into this
    /// directory.
    #[arg(long, value_name = "DIR")]
    tcp_trace: Option<PathBuf>,
    /// Sampling of --tcp-trace: a virtual-time interval (`10ms`, `1s`) or
    /// `change` (whenever cwnd, ssthresh or srtt changes).
    #[arg(long, default_value = "10ms", value_name = "INTERVAL")]
    tcp_trace_every: String,
    /// Write the occupancy (frames and bytes waiting, a row per change)
    /// of every egress queue that saw traffic as one CSV per queue into
    /// this directory.
    #[arg(long, value_name = "DIR")]
    queue_trace: Option<PathBuf>,
    /// Write one CSV row per flow of a workload (`flowgen`): source,
    /// destination, bytes, start, FCT, ideal FCT, slowdown.
    #[arg(long, value_name = "FILE")]
    flows_csv: Option<PathBuf>,
    /// After the run, draw figures (SVG and PNG, as `elvis plot`) into
    /// this directory; the report and the TCP and queue time series go
    /// there too unless given elsewhere.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// No progress bar and no summary.
    #[arg(long, short)]
    quiet: bool,
    /// Seconds of wall time one application may run without yielding
    /// (`inf`: no limit).
    #[arg(long, default_value_t = 10.0)]
    watchdog: f64,
    /// End the run, like an interrupt, after this much wall-clock time,
    /// e.g. `30s`, `300s` (the report's `end` is `wall_limit`).
    #[arg(long, value_name = "DURATION")]
    wall_limit: Option<String>,
    /// Pace virtual time to the wall clock (as `[Simulation
    /// realtime='yes']`); the summary says how well the run kept up.
    #[arg(long)]
    realtime: bool,
    /// Refuse scenarios estimated above this much memory, e.g. `8GiB`
    /// (default: the memory available).
    #[arg(long, value_name = "SIZE")]
    max_memory: Option<String>,
    /// Run on this many threads (at most one per core), each with its
    /// own copy of the world (memory grows with it); the report is the
    /// same for any number. A scenario that cannot be split runs on one,
    /// and the report says why.
    #[arg(long, default_value_t = 1, value_name = "N")]
    threads: usize,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run(args),
        Command::Check { file, max_memory } => check(&file, max_memory.as_deref()),
        Command::Example { name, list, write } => example(name.as_deref(), list, write),
        Command::Plot {
            report,
            tcp_trace,
            queue_trace,
            out,
            format,
        } => match plot::plot(
            &report,
            tcp_trace.as_deref(),
            queue_trace.as_deref(),
            &out,
            format,
        ) {
            Ok(files) => {
                print!("{}", summary::files(&files));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(status::BAD_INPUT)
            }
        },
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "elvis", &mut script);
            // A closed pipe (`| head`) is no error worth a panic.
            let _ = io::stdout().write_all(&script);
            ExitCode::SUCCESS
        }
    }
}

/// `elvis example`: prints, lists or writes the shipped examples.
fn example(name: Option<&str>, list: bool, write: Option<PathBuf>) -> ExitCode {
    if list {
        print!("{}", examples::list());
        return ExitCode::SUCCESS;
    }
    let (file, text) = match name {
        None => ("default.ndl", DEFAULT_SCENARIO),
        Some(n) => match examples::find(n) {
            Some(found) => found,
            None => {
                let names: Vec<&str> = (examples::FILES.iter())
                    .filter_map(|(f, _)| f.strip_suffix(".ndl"))
                    .collect();
                let hint = match elvis_ndl::suggest(n, &names) {
                    Some(s) => format!(" (did you mean `{s}`?)"),
                    None => String::new(),
                };
                eprintln!("error: no example named `{n}`{hint}; `elvis example --list` lists them");
                return ExitCode::from(status::BAD_INPUT);
            }
        },
    };
    let Some(dir) = write else {
        print!("{text}");
        return ExitCode::SUCCESS;
    };
    let mut files = vec![(file, text)];
    files.extend(examples::companions(text));
    for (f, t) in files {
        let path = dir.join(f);
        let done = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, t));
        if let Err(e) = done {
            eprintln!("error: cannot write {}: {e}", path.display());
            return ExitCode::from(status::OUTPUT);
        }
        println!("{}", path.display());
    }
    ExitCode::SUCCESS
}

/// Exit statuses.
mod status {
    pub const FAILED: u8 = 1;
    pub const BAD_INPUT: u8 = 2;
    pub const WAITING: u8 = 3;
    pub const WATCHDOG: u8 = 4;
    pub const OUTPUT: u8 = 5;
}

/// Reads and parses a scenario; prints the error and returns `Err(code)`.
fn load(file: Option<&Path>) -> Result<(String, String, elvis_scenario::Scenario), ExitCode> {
    let (name, source) = match file {
        None => ("default.ndl".to_string(), DEFAULT_SCENARIO.to_string()),
        Some(path) => {
            let max = elvis_scenario::files::MAX_NDL_FILE;
            let bytes = match elvis_scenario::files::read_limited(path, max, false) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("error: cannot read {}: {e}", path.display());
                    return Err(ExitCode::from(status::BAD_INPUT));
                }
            };
            let name = path.display().to_string();
            // The bytes become the source without a copy (a generated
            // file can be hundreds of megabytes).
            match String::from_utf8(bytes) {
                Ok(s) => (name, s),
                Err(bad) => {
                    let bytes = bad.into_bytes();
                    if let Err(e) = elvis_ndl::decode(&bytes, &name) {
                        eprint!(
                            "{}",
                            render::ndl_error(&e, &String::from_utf8_lossy(&bytes))
                        );
                    }
                    return Err(ExitCode::from(status::BAD_INPUT));
                }
            }
        }
    };
    match elvis_ndl::parse(&source, &name) {
        Ok(s) => {
            // What the file says and the simulator does not use yet: said,
            // not silently dropped.
            for w in &s.warnings {
                eprintln!(
                    "{name}:{}:{}: warning: {}",
                    w.loc.line, w.loc.col, w.message
                );
            }
            Ok((name, source, s))
        }
        Err(e) => {
            eprint!("{}", render::ndl_error(&e, &source));
            Err(ExitCode::from(status::BAD_INPUT))
        }
    }
}

/// Parses `--max-memory`; prints the error and returns `Err(code)`.
fn max_memory(arg: Option<&str>) -> Result<Option<u64>, ExitCode> {
    arg.map(elvis_ndl::parse_size_bytes)
        .transpose()
        .map_err(|e| {
            eprintln!("error: --max-memory: {e} (hint: write e.g. --max-memory 8GiB)");
            ExitCode::from(status::BAD_INPUT)
        })
}

/// Estimates the scenario's memory and refuses it (a located error) when
/// the estimate is above `limit` or, without one, the memory available.
fn estimate(
    name: &str,
    source: &str,
    scenario: &elvis_scenario::Scenario,
    limit: Option<u64>,
) -> Result<elvis_sim::report::MemoryEstimate, ExitCode> {
    let e = elvis_build::estimate::estimate(scenario);
    let Some(cap) = limit.or_else(memory::available) else {
        return Ok(e.memory);
    };
    match memory::refuse(&e.memory, cap, limit.is_some()) {
        None => Ok(e.memory),
        Some((mut message, hint)) => {
            if let Some(note) = &e.note {
                message = format!("{message}; {note}");
            }
            eprint!(
                "{}",
                render::located(name, source, e.loc, &message, Some(hint.as_str()))
            );
            Err(ExitCode::from(status::BAD_INPUT))
        }
    }
}

/// Builds the scenario read from `file`; prints the error and returns
/// `Err(code)`. The scenario's text is not held during the build (a
/// generated file can be hundreds of megabytes, which the simulation's
/// own memory can reuse): an error is shown from the file read again.
fn build(
    name: &str,
    file: Option<&Path>,
    scenario: elvis_scenario::Scenario,
    seed: Option<u64>,
) -> Result<elvis_build::Built, ExitCode> {
    // Owned: the builder drops each part of the scenario once it is built.
    elvis_build::build_owned(scenario, seed).map_err(|e| {
        let source = source_again(file);
        eprint!(
            "{}",
            render::located(name, &source, e.loc, &e.message, e.hint.as_deref())
        );
        ExitCode::from(status::BAD_INPUT)
    })
}

/// Returns the scenario's text again, to show an error found after the
/// text was dropped; empty when the file cannot be read now (the error is
/// then shown without its source line).
fn source_again(file: Option<&Path>) -> String {
    let Some(path) = file else {
        return DEFAULT_SCENARIO.to_string();
    };
    let max = elvis_scenario::files::MAX_NDL_FILE;
    elvis_scenario::files::read_limited(path, max, false)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_default()
}

fn check(file: &Path, max_mem: Option<&str>) -> ExitCode {
    let limit = match max_memory(max_mem) {
        Ok(l) => l,
        Err(c) => return c,
    };
    let (name, source, scenario) = match load(Some(file)) {
        Ok(x) => x,
        Err(c) => return c,
    };
    let est = match estimate(&name, &source, &scenario, limit) {
        Ok(e) => e,
        Err(c) => return c,
    };
    drop(source);
    let networks = scenario.networks.len();
    match build(&name, Some(file), scenario, None) {
        Ok(b) => {
            println!(
                "{name}: ok ({networks} networks, {} machines)",
                b.sim.machine_count()
            );
            println!(
                "  estimated memory {} ({})",
                memory::human(est.bytes),
                memory::counts(&est)
            );
            ExitCode::SUCCESS
        }
        Err(c) => c,
    }
}

/// The command-line values of `elvis run`, parsed.
struct Flags {
    until: Option<Time>,
    watchdog: Duration,
    sampling: elvis_sim::Sampling,
    wall_limit: Option<Duration>,
    max_memory: Option<u64>,
}

impl Flags {
    /// Parses the values of `args`; prints the first bad one and returns
    /// `Err(code)`.
    fn parse(args: &RunArgs) -> Result<Flags, ExitCode> {
        let until = match args
            .until
            .as_deref()
            .map(elvis_ndl::parse_duration_ns)
            .transpose()
        {
            Ok(u) => u.map(Time::from_nanos),
            Err(e) => {
                eprintln!("error: --until: {e} (hint: write e.g. --until 10s or --until 250ms)");
                return Err(ExitCode::from(status::BAD_INPUT));
            }
        };
        // `inf` (or any limit too large for a Duration) means no limit.
        if args.watchdog.is_nan() {
            eprintln!(
                "error: --watchdog: not a number (hint: write e.g. --watchdog 10, in seconds)"
            );
            return Err(ExitCode::from(status::BAD_INPUT));
        }
        let watchdog =
            Duration::try_from_secs_f64(args.watchdog.max(0.05)).unwrap_or(Duration::MAX);
        let sampling = match args.tcp_trace_every.as_str() {
            "change" => elvis_sim::Sampling::OnChange,
            every => match elvis_ndl::parse_duration_ns(every) {
                Ok(ns) if ns > 0 => elvis_sim::Sampling::Every(Duration::from_nanos(ns)),
                Ok(_) => {
                    eprintln!("error: --tcp-trace-every: the interval must be positive (hint: write e.g. 10ms, or change)");
                    return Err(ExitCode::from(status::BAD_INPUT));
                }
                Err(e) => {
                    eprintln!("error: --tcp-trace-every: {e} (hint: write e.g. 10ms, or change)");
                    return Err(ExitCode::from(status::BAD_INPUT));
                }
            },
        };
        let wall_limit = match args.wall_limit.as_deref().map(elvis_ndl::parse_duration_ns) {
            None => None,
            Some(Ok(ns)) if ns > 0 => Some(Duration::from_nanos(ns)),
            Some(Ok(_)) => {
                eprintln!("error: --wall-limit: the limit must be positive (hint: write e.g. --wall-limit 30s)");
                return Err(ExitCode::from(status::BAD_INPUT));
            }
            Some(Err(e)) => {
                eprintln!("error: --wall-limit: {e} (hint: write e.g. --wall-limit 30s or --wall-limit 300s)");
                return Err(ExitCode::from(status::BAD_INPUT));
            }
        };
        let max_memory = max_memory(args.max_memory.as_deref())?;
        Ok(Flags {
            until,
            watchdog,
            sampling,
            wall_limit,
            max_memory,
        })
    }
}

/// `elvis run`: loads, checks, builds and runs a scenario, writes its
/// outputs and prints its summary; returns the exit status.
fn run(mut args: RunArgs) -> ExitCode {
    if let Err(c) = plot_defaults(&mut args) {
        return c;
    }
    let Flags {
        until,
        watchdog,
        sampling,
        wall_limit,
        max_memory: limit,
    } = match Flags::parse(&args) {
        Ok(f) => f,
        Err(c) => return c,
    };
    let (name, source, scenario) = match load(args.file.as_deref()) {
        Ok(x) => x,
        Err(c) => return c,
    };
    let est = match estimate(&name, &source, &scenario, limit) {
        Ok(e) => e,
        Err(c) => return c,
    };
    // Every output is checked before the (possibly long) build and run.
    let outputs = match Outputs::plan(&args) {
        Ok(o) => o,
        Err(c) => return c,
    };
    let stop = match interrupt::install() {
        Ok(flag) => flag,
        Err(e) => {
            eprintln!("error: cannot install the SIGINT/SIGTERM handlers: {e}");
            return ExitCode::from(status::OUTPUT);
        }
    };
    // Neither the build nor the run needs the scenario's text, and the
    // build frees the scenario as it goes: a large one is hundreds of
    // megabytes that the simulation's own memory can reuse.
    drop(source);
    // The other threads of a parallel run build their own copies.
    let again = (args.threads > 1).then(|| scenario.clone());
    let build_start = std::time::Instant::now();
    let mut built = match build(&name, args.file.as_deref(), scenario, args.seed) {
        Ok(b) => b,
        Err(c) => return c,
    };
    let build_time = build_start.elapsed();
    let mut written = match prepare(&mut built.sim, &args, sampling, stop, wall_limit, watchdog) {
        Ok(w) => w,
        Err(c) => return c,
    };
    let limits = RunLimits {
        until: until.or(built.until),
    };
    let quiet = args.quiet;
    let mut report = run_built(&mut built.sim, again.as_ref(), &args, limits);
    report.memory_estimate = Some(est);
    let mut code = run_status(&report);
    if !write_outputs(&built.sim, &args, &outputs, &report, &mut written) {
        code = status::OUTPUT;
    }
    if !draw_figures(&args, &mut written) {
        code = status::OUTPUT;
    }
    if !quiet {
        let text = summary::render(&name, &report, build_time) + &summary::files(&written);
        print_summary(&text, &outputs);
    }
    say_why(code, &report);
    ExitCode::from(code)
}

/// Runs the built `sim` within `limits`; with `again`, the scenario it
/// was built from, on `--threads` threads (at most one per core), the
/// other threads building their copies from it.
fn run_built(
    sim: &mut elvis_sim::Simulation,
    again: Option<&elvis_scenario::Scenario>,
    args: &RunArgs,
    limits: RunLimits,
) -> elvis_sim::Report {
    let Some(scenario) = again else {
        return with_progress(args.quiet, |progress| sim.run_with(limits, progress));
    };
    let seed = args.seed;
    // The builder makes the same world every time; were a copy to fail,
    // the parallel run would report that its copies differ.
    let make = || match elvis_build::build(scenario, seed) {
        Ok(b) => b.sim,
        Err(_) => elvis_sim::Simulation::new(seed.unwrap_or(0)),
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = args.threads.min(cores);
    with_progress(args.quiet, |progress| {
        elvis_sim::parallel::run_parallel(threads, sim, make, limits, progress)
    })
}

/// Returns the exit status a run's applications give: failed (or
/// crashed) before waiting, else 0.
fn run_status(report: &elvis_sim::Report) -> u8 {
    if report.failures() > 0 {
        status::FAILED
    } else if report.waiting() > 0 {
        status::WAITING
    } else {
        0
    }
}

/// Prints the summary `text` on standard output, or on standard error
/// when standard output carries the report.
fn print_summary(text: &str, outputs: &Outputs) {
    // With `--report -` standard output carries the JSON alone.
    if outputs.report == Some(output::Target::Stdout) {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
}

/// Prints why a run ends with status `code`, when its applications are
/// the reason: some failed or crashed, or some still wait.
fn say_why(code: u8, report: &elvis_sim::Report) {
    match code {
        status::FAILED => eprintln!(
            "error: {} application(s) failed or crashed (see problems above)",
            report.failures()
        ),
        status::WAITING => eprintln!(
            "error: {} application(s) still waiting when the run ended at {} ({})",
            report.waiting(),
            Time::from_nanos(report.sim_time_ns),
            report.end
        ),
        _ => {}
    }
}

/// With `--plot DIR`: creates DIR and puts the report and the TCP and
/// queue traces in it unless they were given; prints the error and
/// returns `Err(code)` when it cannot.
fn plot_defaults(args: &mut RunArgs) -> Result<(), ExitCode> {
    if let Some(dir) = args.plot.clone() {
        if args.report.as_deref() == Some(Path::new("-")) {
            eprintln!(
                "error: --plot reads the report from a file (hint: drop --report - or give a file)"
            );
            return Err(ExitCode::from(status::BAD_INPUT));
        }
        if let Err(e) = std::fs::create_dir_all(&dir) {
            eprintln!("error: cannot create {}: {e}", dir.display());
            return Err(ExitCode::from(status::OUTPUT));
        }
        args.report.get_or_insert_with(|| dir.join("report.json"));
        args.tcp_trace.get_or_insert_with(|| dir.join("tcp"));
        args.queue_trace.get_or_insert_with(|| dir.join("queues"));
    }
    Ok(())
}

/// Readies the built `sim` to run: pcap capture and traces as `args`
/// ask, the interrupt flag `stop`, the wall-clock limit and the
/// watchdog. Returns the pcap files it will write; prints the error and
/// returns `Err(code)` when it cannot create them.
fn prepare(
    sim: &mut elvis_sim::Simulation,
    args: &RunArgs,
    sampling: elvis_sim::Sampling,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    wall_limit: Option<Duration>,
    watchdog: Duration,
) -> Result<Vec<PathBuf>, ExitCode> {
    let mut written: Vec<PathBuf> = Vec::new();
    if let Some(dir) = &args.pcap {
        match sim.capture_pcap(dir) {
            Ok(files) => written.extend(files),
            Err(e) => {
                eprintln!("error: cannot write pcaps into {}: {e}", dir.display());
                return Err(ExitCode::from(status::OUTPUT));
            }
        }
    }
    if args.tcp_trace.is_some() {
        sim.trace_tcp(sampling);
    }
    if args.queue_trace.is_some() {
        sim.trace_queues();
    }
    sim.set_interrupt_flag(stop);
    if let Some(limit) = wall_limit {
        sim.set_wall_limit(limit);
    }
    if args.realtime {
        sim.set_realtime(true);
    }
    sim.set_watchdog(watchdog, |machine| {
        eprintln!(
            "error: an application on machine '{machine}' has not yielded for the watchdog limit; \
             it loops without awaiting a socket or timer (hint: await sleep/recv/yield_now in long loops)"
        );
        std::process::exit(i32::from(status::WATCHDOG));
    });
    Ok(written)
}

/// Runs `run` with a progress callback that shows a spinner on standard
/// error with the simulated time and the event rate once the run has
/// taken a second (unless `quiet`); returns the run's report.
fn with_progress(
    quiet: bool,
    run: impl FnOnce(&mut dyn FnMut(&Progress)) -> elvis_sim::Report,
) -> elvis_sim::Report {
    let mut bar: Option<indicatif::ProgressBar> = None;
    let mut on_progress = |p: &Progress| {
        if quiet || p.wall < Duration::from_secs(1) {
            return;
        }
        let b = bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            b
        });
        let rate = p.events as f64 / p.wall.as_secs_f64().max(1e-9);
        b.set_message(format!(
            "sim time {}  events {}  {:.2} M events/s",
            p.sim_time,
            p.events,
            rate / 1e6
        ));
        b.tick();
    };
    let report = run(&mut on_progress);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    report
}

/// With `--plot DIR`: draws the figures of the report and traces into
/// DIR and adds them to `written`; returns false when it could not (the
/// error is printed).
fn draw_figures(args: &RunArgs, written: &mut Vec<PathBuf>) -> bool {
    if let (Some(dir), Some(report_file)) = (&args.plot, &args.report) {
        let figures = plot::plot(
            report_file,
            args.tcp_trace.as_deref(),
            args.queue_trace.as_deref(),
            dir,
            plot::Format::Both,
        );
        match figures {
            Ok(files) => written.extend(files),
            Err(e) => {
                eprintln!("error: drawing figures: {e}");
                return false;
            }
        }
    }
    true
}

/// Writes the outputs that come after the run (traces, the report) and
/// adds them to `written`; returns false when one could not be written
/// (the error is printed).
fn write_outputs(
    sim: &elvis_sim::Simulation,
    args: &RunArgs,
    outputs: &Outputs,
    report: &elvis_sim::Report,
    written: &mut Vec<PathBuf>,
) -> bool {
    let mut ok = true;
    if let Some(e) = sim.pcap_error() {
        eprintln!("error: writing pcaps: {e}");
        ok = false;
    }
    if let Some(dir) = &args.tcp_trace {
        match sim.write_tcp_series(dir) {
            Ok(files) => written.extend(files),
            Err(e) => {
                eprintln!(
                    "error: cannot write TCP time series into {}: {e}",
                    dir.display()
                );
                ok = false;
            }
        }
    }
    if let Some(dir) = &args.queue_trace {
        match sim.write_queue_series(dir) {
            Ok(files) => written.extend(files),
            Err(e) => {
                eprintln!(
                    "error: cannot write queue time series into {}: {e}",
                    dir.display()
                );
                ok = false;
            }
        }
    }
    if let Some(target) = &outputs.flows_csv {
        let rows = |w: &mut dyn Write| match &report.flows {
            Some(f) => f.write_csv(w),
            None => writeln!(w, "src,dst,bytes,start_ns,fct_ns,ideal_ns,slowdown"),
        };
        match output::write_with(target, rows) {
            Ok(()) => written.extend(target.path().map(Path::to_path_buf)),
            Err(e) => {
                let shown = args.flows_csv.as_deref().unwrap_or(Path::new("-"));
                eprintln!("error: cannot write flows CSV {}: {e}", shown.display());
                ok = false;
            }
        }
    }
    if let Some(target) = &outputs.report {
        // Streamed: a report of 100,000 networks is tens of megabytes of
        // JSON, which need not be held in memory as one string.
        let json = |w: &mut dyn Write| json::write_pretty(w, report);
        match output::write_with(target, json) {
            Ok(()) => written.extend(target.path().map(Path::to_path_buf)),
            Err(e) => {
                let shown = args.report.as_deref().unwrap_or(Path::new("-"));
                eprintln!("error: cannot write report {}: {e}", shown.display());
                ok = false;
            }
        }
    }
    ok
}

/// The output paths of a run, checked before it starts.
struct Outputs {
    report: Option<output::Target>,
    flows_csv: Option<output::Target>,
}

impl Outputs {
    /// Checks every output path of `args`; prints the first problem and
    /// returns `Err(code)`.
    fn plan(args: &RunArgs) -> Result<Outputs, ExitCode> {
        let fail = |what: &str, path: &Path, e: String| {
            eprintln!("error: {what} {}: {e}", path.display());
            ExitCode::from(status::OUTPUT)
        };
        let report = match &args.report {
            None => None,
            Some(p) => Some(output::plan_file(p).map_err(|e| fail("cannot write report", p, e))?),
        };
        let flows_csv = match &args.flows_csv {
            None => None,
            Some(p) => {
                Some(output::plan_file(p).map_err(|e| fail("cannot write flows CSV", p, e))?)
            }
        };
        let dirs = [
            ("cannot write pcaps into", &args.pcap),
            ("cannot write TCP time series into", &args.tcp_trace),
            ("cannot write queue time series into", &args.queue_trace),
        ];
        for (what, dir) in dirs {
            if let Some(d) = dir {
                output::plan_dir(d).map_err(|e| fail(what, d, e))?;
            }
        }
        Ok(Outputs { report, flows_csv })
    }
}
