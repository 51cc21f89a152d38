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
