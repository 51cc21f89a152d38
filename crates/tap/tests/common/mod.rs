//! What the TAP tests need from the machine, shared by each test binary.

// Each test binary uses part of this module.
#![allow(dead_code)]

use std::process::Command;

/// Why the tests cannot run here (not root, no `/dev/net/tun`, one of
/// `tools` missing), or `None` when they can.
pub fn missing(tools: &[&str]) -> Option<String> {
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    for tool in ["ip"].iter().chain(tools) {
        if !has(tool) {
            return Some(format!("no `{tool}` command"));
        }
    }
    let root = Command::new("id").arg("-u").output();
    if !root.is_ok_and(|o| o.stdout.starts_with(b"0")) {
        return Some("not root".into());
    }
    None
}

/// Whether the command `tool` is installed.
pub fn has(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether `e` says TAP devices or namespaces are not allowed here (an
/// unprivileged container): the test then passes with a message.
pub fn unavailable(e: &elvis_tap::TapError) -> bool {
    match e {
        elvis_tap::TapError::Create { .. } => true,
        elvis_tap::TapError::Ip { .. } => e.to_string().contains("netns add"),
        _ => false,
    }
}

/// Builds NDL `src` (named `file` in errors); `None`, with the reason
/// printed, where TAP devices or namespaces are not allowed here.
pub fn build_or_skip(src: &str, file: &str) -> Option<elvis_build::Built> {
    let scenario = elvis_ndl::parse(src, file).expect("the scenario parses");
    match elvis_build::build(&scenario, None) {
        Ok(b) => Some(b),
        Err(e)
            if e.to_string().contains("cannot create TAP device")
                || e.to_string().contains("netns add") =>
        {
            eprintln!("skipped: {e}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// Runs the simulation while `client` (a command in a TAP machine's
/// namespace) runs; the run ends when the client exits, or after 30 s of
/// wall time. Returns the report and the client's output.
pub fn run_with_client(
    built: &mut elvis_build::Built,
    client: &mut Command,
) -> (elvis_sim::Report, std::process::Output) {
    use std::process::Stdio;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let client = client
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the client starts");
    let done = Arc::new(AtomicBool::new(false));
    built.sim.set_interrupt_flag(done.clone());
    built.sim.set_wall_limit(std::time::Duration::from_secs(30));
    let waiter = std::thread::spawn(move || {
        let out = client.wait_with_output();
        done.store(true, Ordering::Relaxed);
        out
    });
    let report = built.sim.run();
    let out = waiter.join().unwrap().expect("the client ends");
    (report, out)
}
