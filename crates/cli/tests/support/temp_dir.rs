//! A scratch directory for tests, removed with its contents when dropped.
//!
//! Shared by the CLI's unit tests and its integration tests (each includes
//! this file with `#[path]`). It stands in for the `tempfile` crate, whose
//! `rustix` dependency was the largest single crate of a test build; the
//! tests need only a fresh directory that no other test, in this process
//! or another, uses.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A fresh directory under the system's temporary directory.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates a directory no one else has: the process id and a
    /// per-process counter make the name unique among tests running now,
    /// the clock among runs that left one behind (it is created with
    /// `create_dir`, which fails rather than reuse one).
    pub fn new() -> std::io::Result<TempDir> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let path = base.join(format!("elvis-test-{}-{n}-{nanos}", std::process::id()));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(TempDir(path)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Returns the directory's path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
