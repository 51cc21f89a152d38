//! Reading the files a scenario names (the NDL file itself, a graph
//! `file=`) with a size limit, so that `/dev/zero` or a huge file is an
//! error instead of a machine out of memory.

use std::io::{self, Read};
use std::path::Path;

/// Most bytes of a graph file (`[Topology type='graph' file=…]`).
pub const MAX_GRAPH_FILE: u64 = 64 << 20;
/// Most bytes of an NDL file.
pub const MAX_NDL_FILE: u64 = 1 << 30;

/// Reads at most `max` bytes of `path`. With `regular_only`, anything but
/// a regular file (a device, FIFO, socket or directory) is refused before
/// it is opened, so nothing can block; otherwise a pipe is read until its
/// end or the limit.
///
/// # Errors
/// The I/O error, or `InvalidInput` with a message saying what the file is
/// or how large, and the limit.
pub fn read_limited(path: &Path, max: u64, regular_only: bool) -> io::Result<Vec<u8>> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is a directory",
        ));
    }
    if regular_only && !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is not a regular file (a device, FIFO or socket is not read)",
        ));
    }
    let too_large = |n: u64| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {n} bytes or more, above the limit of {max} bytes"),
        )
    };
    if meta.is_file() && meta.len() > max {
        return Err(too_large(meta.len()));
    }
    // Sized once for a regular file: growing by doubling would copy a
    // large file several times and touch twice its memory.
    let expected = if meta.is_file() { meta.len() + 1 } else { 0 };
    let mut bytes = Vec::with_capacity(usize::try_from(expected).unwrap_or(0));
    std::fs::File::open(path)?
        .take(max + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_large(max + 1));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn devices_are_refused_or_cut_at_the_limit() {
        let e = read_limited(Path::new("/dev/zero"), 1024, true).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = read_limited(Path::new("/dev/zero"), 1024, false).unwrap_err();
        assert!(
            e.to_string().contains("above the limit of 1024 bytes"),
            "{e}"
        );
        let e = read_limited(Path::new("/"), 1024, false).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
    }

    #[test]
    fn a_file_above_the_limit_is_refused_and_one_below_read() {
        let dir = std::env::temp_dir().join(format!("elvis-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("g.txt");
        std::fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_limited(&path, 10, true).unwrap(), b"0123456789");
        let e = read_limited(&path, 9, true).unwrap_err();
        assert!(e.to_string().contains("10 bytes"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
