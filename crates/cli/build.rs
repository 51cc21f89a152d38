//! Lays out the code of `elvis` so that short runs map little of it.
//!
//! Linux maps a program's code 64 KiB at a time around each executed page,
//! so a short run's resident code is every 64 KiB block holding one
//! function it ran. `link/elvis.order` (written by `bench/order-functions`)
//! lists the functions that small scenarios run; the linker puts them side
//! by side at the start of the code. Names it does not find are skipped,
//! so a stale list costs memory, never correctness.
//!
//! The order is given only where the linker is known to be LLD: Rust's own
//! `rust-lld`, the default for `x86_64-unknown-linux-gnu` since Rust 1.90,
//! unless the build names another linker.

#![forbid(unsafe_code)]

use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=link/elvis.order");
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    if !default_lld() {
        return;
    }
    let order =
        Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join("link/elvis.order");
    if !order.is_file() {
        return;
    }
    println!(
        "cargo:rustc-link-arg-bin=elvis=-Wl,--symbol-ordering-file={}",
        order.display()
    );
    println!("cargo:rustc-link-arg-bin=elvis=-Wl,--no-warn-symbol-ordering");
}

/// Whether rustc links this build with its own LLD: target
/// `x86_64-unknown-linux-gnu`, rustc 1.90 or later, and no `-C linker` or
/// `-C link-self-contained`/`-C linker-features` in the flags.
fn default_lld() -> bool {
    let var = |k: &str| env::var(k).unwrap_or_default();
    if var("TARGET") != "x86_64-unknown-linux-gnu" {
        return false;
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    if ["linker", "link-self-contained"]
        .iter()
        .any(|f| flags.contains(f))
    {
        return false;
    }
    if env::vars().any(|(k, _)| k.starts_with("CARGO_TARGET_") && k.ends_with("_LINKER")) {
        return false;
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("--version").output() else {
        return false;
    };
    let version = String::from_utf8_lossy(&out.stdout);
    // "rustc 1.95.0 (…)"
    let minor = version
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').nth(1))
        .and_then(|m| m.parse::<u32>().ok());
    minor.is_some_and(|m| m >= 90)
}
