//! Opening the files of a trace without trusting them.
//!
//! A trace directory may hold anything a user, a crash or a copy left in
//! it: a FIFO (opening it blocks until a writer comes), a device
//! (`/dev/zero` reads forever), a symbolic link to either, a file far
//! larger than its kind can be. Every reader opens trace files through
//! this module: the type is checked before the file is opened (and again
//! on the open descriptor, which is opened non-blocking so that a FIFO
//! swapped in between cannot block), and whole-file reads are capped.

use std::fs::{File, Metadata, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::Error;

/// Largest `meta.json` read: far above what a job of the largest rank
/// count writes (a few hundred bytes per rank).
pub const META_MAX_BYTES: u64 = 64 << 20;
/// Largest side file read (communicators, modules and clock points of
/// one process).
pub const SIDE_MAX_BYTES: u64 = 64 << 20;
/// Largest level-of-detail index read.
pub const INDEX_MAX_BYTES: u64 = 64 << 20;

/// What a file that is not a regular file is, for messages.
fn kind_of(m: &Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

fn refuse(path: &Path, m: &Metadata) -> Error {
    Error::NotAFile { path: path.to_path_buf(), kind: kind_of(m) }
}

/// The metadata of `path` (following a symbolic link) if it is a regular
/// file; anything else is refused without being opened.
pub fn regular(path: &Path) -> Result<Metadata, Error> {
    let m = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !m.is_file() {
        return Err(refuse(path, &m));
    }
    Ok(m)
}

/// Opens `path` for reading if it is a regular file. The open is
/// non-blocking and the descriptor checked again, so a FIFO put in its
/// place after the check is refused too rather than waited on.
pub fn open_regular(path: &Path) -> Result<(File, u64), Error> {
    regular(path)?;
    let f = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(|e| Error::io(path, e))?;
    let m = f.metadata().map_err(|e| Error::io(path, e))?;
    if !m.is_file() {
        return Err(refuse(path, &m));
    }
    // O_NONBLOCK means nothing for a regular file: reads behave as usual.
    Ok((f, m.len()))
}

/// Reads the whole regular file `path` if it is at most `max` bytes.
/// The cap is checked against the size before reading and enforced while
/// reading (the file may grow meanwhile).
pub fn read_capped(path: &Path, max: u64, what: &str) -> Result<Vec<u8>, Error> {
    let (f, len) = open_regular(path)?;
    let too_large = |len: u64| Error::Corrupt {
        path: path.to_path_buf(),
        what: format!("{len} bytes, more than a {what} can be ({max} at most); not read"),
    };
    if len > max {
        return Err(too_large(len));
    }
    let mut buf = Vec::with_capacity(len as usize);
    f.take(max + 1).read_to_end(&mut buf).map_err(|e| Error::io(path, e))?;
    if buf.len() as u64 > max {
        return Err(too_large(buf.len() as u64));
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_fifos_are_refused_unopened_and_sizes_capped() {
        let d = std::env::temp_dir().join(format!("tf-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Opening the FIFO for reading would block for ever: it is refused.
        let e = open_regular(&fifo).unwrap_err().to_string();
        assert!(e.contains("a FIFO") && e.contains("fifo"), "{e}");
        let zero = d.join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = read_capped(&zero, 1 << 20, "test file").unwrap_err().to_string();
        assert!(e.contains("a character device"), "{e}");
        let big = d.join("big");
        std::fs::write(&big, vec![b'x'; 100]).unwrap();
        let e = read_capped(&big, 99, "test file").unwrap_err().to_string();
        assert!(e.contains("100 bytes") && e.contains("99 at most"), "{e}");
        assert_eq!(read_capped(&big, 100, "test file").unwrap().len(), 100);
        assert!(matches!(regular(&d), Err(Error::NotAFile { kind: "a directory", .. })));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
