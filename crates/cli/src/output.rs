//! Where the run's outputs go, checked before the run starts.
//!
//! Every output path given on the command line (`--report`, `--pcap`,
//! `--tcp-trace`, `--queue-trace`) is checked by [`plan_file`] or
//! [`plan_dir`] before the scenario is built, so a typo costs no run.
//!
//! A report is written so that nothing is lost or clobbered:
//! - onto a regular file (or a new one): into a temporary file beside the
//!   *target* (a symbolic link is followed, so the link stays and its
//!   target gets the report), then renamed over it, so a reader never sees
//!   half a report. The file is not forced to disk (no `fsync`): the rename
//!   is what a reader relies on, and on an ext4 disk the fsync of the
//!   1.1 MB report of `bench/vs-ns3`'s 1,000-host star takes longer than
//!   the run; should the machine itself crash, the report may be lost, and
//!   the same seed writes it again;
//! - onto anything else (a FIFO, `/dev/stdout`, `/dev/null`, a terminal):
//!   directly, because renaming over a device node or a FIFO would replace
//!   it and its reader would get nothing;
//! - `-`: standard output.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// How a report will be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `-`: standard output.
    Stdout,
    /// A device, FIFO or socket: opened and written in place.
    Direct(PathBuf),
    /// A regular file (existing or not), after following symbolic links:
    /// written next to it and renamed over it.
    Atomic(PathBuf),
}

impl Target {
    /// Returns the path files are written to, for the list of outputs
    /// (`None` for standard output).
    pub fn path(&self) -> Option<&Path> {
        match self {
            Target::Stdout => None,
            Target::Direct(p) | Target::Atomic(p) => Some(p),
        }
    }
}

/// Most symbolic links followed before a path is called a loop.
const MAX_LINKS: usize = 40;

/// Follows symbolic links from `path` (even dangling ones) to the path
/// that would be written.
fn resolve_links(path: &Path) -> io::Result<PathBuf> {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&at)?;
                at = match at.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(at),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// Returns the temporary file written beside `target` before the rename.
fn partial_path(target: &Path) -> PathBuf {
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(".elvis-partial");
    target.with_file_name(name)
}

/// Returns the directory holding `file` (`.` for a bare name).
fn parent_dir(file: &Path) -> &Path {
    match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Checks that a file can be created in `dir` by creating and removing a
/// probe file there (named after this process, so that nothing else is
/// in its way).
fn probe_writable(dir: &Path) -> io::Result<()> {
    let probe = dir.join(format!(".elvis-probe-{}", std::process::id()));
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)?;
    std::fs::remove_file(&probe)
}

/// Decides how the report at `path` is written and checks, before the run,
/// that it can be.
///
/// # Errors
/// A message naming what is wrong: a directory, a missing directory, no
/// permission to create files there.
pub fn plan_file(path: &Path) -> Result<Target, String> {
    if path.as_os_str() == "-" {
        return Ok(Target::Stdout);
    }
    let target = resolve_links(path).map_err(|e| e.to_string())?;
    match std::fs::metadata(&target) {
        Ok(m) if m.is_dir() => Err("it is a directory (hint: name a file in it)".into()),
        Ok(m) if !m.is_file() => {
            // A device or FIFO: written in place. Opening a FIFO would wait
            // for its reader, so only its permission is checked now.
            #[cfg(unix)]
            {
                use std::os::unix::fs::FileTypeExt;
                if m.file_type().is_fifo() {
                    return if m.permissions().readonly() {
                        Err("the FIFO is read-only".into())
                    } else {
                        Ok(Target::Direct(target))
                    };
                }
            }
            OpenOptions::new()
                .write(true)
                .open(&target)
                .map_err(|e| e.to_string())?;
            Ok(Target::Direct(target))
        }
        _ => {
            let dir = parent_dir(&target);
            match std::fs::metadata(dir) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(format!("{} is not a directory", dir.display())),
                Err(e) => return Err(format!("directory {}: {e}", dir.display())),
            }
            probe_writable(dir)
                .map_err(|e| format!("cannot create files in {}: {e}", dir.display()))?;
            Ok(Target::Atomic(target))
        }
    }
}

/// Checks that the output directory `dir` can be made (if missing) and
/// filled, leaving nothing behind: an existing `dir` must be a directory
/// where files can be created; a missing one needs its nearest existing
/// ancestor to be such a directory.
///
/// # Errors
/// A message naming what is wrong.
pub fn plan_dir(dir: &Path) -> Result<(), String> {
    let mut at = dir;
    loop {
        match std::fs::metadata(at) {
            Ok(m) if m.is_dir() => break,
            Ok(_) if at == dir => return Err("it exists and is not a directory".into()),
            Ok(_) => return Err(format!("{} is not a directory", at.display())),
            Err(_) => match at.parent() {
                Some(p) if !p.as_os_str().is_empty() => at = p,
                _ => {
                    at = Path::new(".");
                    break;
                }
            },
        }
    }
    probe_writable(at).map_err(|e| format!("cannot create files in {}: {e}", at.display()))
}

/// Writes `bytes` to `target` as [`Target`] describes (the tests'
/// shorthand for [`write_with`]).
///
/// # Errors
/// Any I/O error; an atomic write leaves the old file untouched then.
#[cfg(test)]
pub fn write(target: &Target, bytes: &[u8]) -> io::Result<()> {
    write_with(target, |w| w.write_all(bytes))
}

/// Writes what `fill` writes (through a buffer) to `target` as [`Target`]
/// describes.
///
/// # Errors
/// Any I/O error, `fill`'s among them; an atomic write leaves the old file
/// untouched then.
pub fn write_with(
    target: &Target,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    match target {
        Target::Stdout => {
            let mut out = io::BufWriter::new(io::stdout().lock());
            fill(&mut out)?;
            out.flush()
        }
        Target::Direct(path) => {
            let mut f = io::BufWriter::new(OpenOptions::new().write(true).open(path)?);
            fill(&mut f)?;
            f.flush()
        }
        Target::Atomic(path) => {
            let tmp = partial_path(path);
            let written = (|| {
                let mut f = io::BufWriter::new(File::create(&tmp)?);
                fill(&mut f)?;
                f.into_inner().map_err(io::IntoInnerError::into_error)?;
                std::fs::rename(&tmp, path)
            })();
            if written.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            written
        }
    }
}

/// A scratch directory for the tests (shared with the integration tests).
#[cfg(test)]
#[path = "../tests/support/temp_dir.rs"]
mod temp_dir;

#[cfg(test)]
mod tests {
    use super::temp_dir::TempDir;
    use super::*;

    #[test]
    fn a_dash_means_standard_output() {
        assert_eq!(plan_file(Path::new("-")), Ok(Target::Stdout));
    }

    #[test]
    fn a_new_file_in_an_existing_directory_is_written_atomically() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("r.json");
        let t = plan_file(&path).unwrap();
        assert_eq!(t, Target::Atomic(path.clone()));
        assert!(
            std::fs::read_dir(dir.path()).unwrap().next().is_none(),
            "the probe is removed"
        );
        write(&t, b"{}").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
    }

    #[test]
    fn a_missing_directory_or_a_directory_is_refused_before_the_run() {
        let dir = TempDir::new().unwrap();
        let e = plan_file(&dir.path().join("no/such/r.json")).unwrap_err();
        assert!(e.contains("no/such"), "{e}");
        let e = plan_file(dir.path()).unwrap_err();
        assert!(e.contains("directory"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_is_kept_and_its_target_gets_the_report() {
        let dir = TempDir::new().unwrap();
        let real = dir.path().join("real.json");
        std::fs::write(&real, b"old").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        let t = plan_file(&link).unwrap();
        assert_eq!(t, Target::Atomic(real.clone()));
        write(&t, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
    }

    #[cfg(unix)]
    #[test]
    fn a_dangling_link_creates_its_target() {
        let dir = TempDir::new().unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("made.json", &link).unwrap();
        let t = plan_file(&link).unwrap();
        write(&t, b"x").unwrap();
        assert_eq!(std::fs::read(dir.path().join("made.json")).unwrap(), b"x");
    }

    #[cfg(unix)]
    #[test]
    fn a_device_is_written_in_place() {
        use std::os::unix::fs::FileTypeExt;
        let t = plan_file(Path::new("/dev/null")).unwrap();
        assert_eq!(t, Target::Direct(PathBuf::from("/dev/null")));
        write(&t, b"x").unwrap();
        let kind = std::fs::metadata("/dev/null").unwrap().file_type();
        assert!(kind.is_char_device(), "still a device");
    }

    #[test]
    fn a_file_in_the_way_of_an_output_directory_is_refused() {
        let dir = TempDir::new().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"").unwrap();
        assert!(plan_dir(&file).unwrap_err().contains("not a directory"));
        assert!(plan_dir(&file.join("sub"))
            .unwrap_err()
            .contains("not a directory"));
        assert!(plan_dir(&dir.path().join("new/sub")).is_ok());
        assert!(
            !dir.path().join("new").exists(),
            "nothing made before the run"
        );
    }
}
