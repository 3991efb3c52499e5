//! MPI-IO (chapter 13 of the standard) on POSIX files: the open files, their
//! views and file pointers, the byte transfers, and the shared file pointer.
//!
//! Every process of a file's group opens the file itself, by name, so all of
//! them must see the same file system (a local one for a job on one host, a
//! network file system such as NFS across hosts). Data moves with
//! `pread`/`pwrite` straight between the user's (packed) data and the file;
//! nothing is cached, so what one process wrote is seen by the others as soon
//! as its write returned, as the file system gives it.
//!
//! The collective protocols run over the file's own context: agreeing on
//! an open, a close, a view, a shared-pointer seek (`open.rs`, with the
//! group helpers of `group.rs`), the ordered accesses and the completion of
//! nonblocking and split accesses (`access.rs`), two-phase collective
//! writes (`collective.rs`). `capi/io.rs` only converts the C arguments
//! and reports errors. See `mpi-core/IO.md`.

pub(crate) mod access;
pub(crate) mod collective;
pub mod datarep;
pub(crate) mod group;
pub(crate) mod open;
pub mod view;

use std::fs::File as OsFile;
use std::os::fd::AsRawFd;
use std::os::raw::c_int;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use mpi_api::abi::*;

use crate::bail;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::info::Pairs;

pub use view::FileView;

/// Access-mode bits (MPICH's values, see `mpi-api`).
pub const ACCESS_BITS: c_int = MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR;
pub const ALL_MODE_BITS: c_int = ACCESS_BITS
    | MPI_MODE_CREATE
    | MPI_MODE_EXCL
    | MPI_MODE_DELETE_ON_CLOSE
    | MPI_MODE_UNIQUE_OPEN
    | MPI_MODE_APPEND
    | MPI_MODE_SEQUENTIAL;

/// Checks an access mode as `MPI_File_open` must.
pub fn check_amode(amode: c_int) -> MpiResult<()> {
    if amode & !ALL_MODE_BITS != 0 {
        bail!(MPI_ERR_AMODE, "amode 0x{amode:x} has unknown bits 0x{:x}", amode & !ALL_MODE_BITS);
    }
    let access = amode & ACCESS_BITS;
    if access.count_ones() != 1 {
        bail!(MPI_ERR_AMODE, "amode must have exactly one of MPI_MODE_RDONLY, MPI_MODE_WRONLY and MPI_MODE_RDWR");
    }
    if access == MPI_MODE_RDONLY && amode & (MPI_MODE_CREATE | MPI_MODE_EXCL) != 0 {
        bail!(MPI_ERR_AMODE, "MPI_MODE_CREATE and MPI_MODE_EXCL cannot go with MPI_MODE_RDONLY");
    }
    if access == MPI_MODE_RDWR && amode & MPI_MODE_SEQUENTIAL != 0 {
        bail!(MPI_ERR_AMODE, "MPI_MODE_SEQUENTIAL cannot go with MPI_MODE_RDWR");
    }
    Ok(())
}

/// The MPI error class of a failed system call on file `what`.
pub fn os_error(e: &std::io::Error, what: &str) -> MpiError {
    let class = match e.raw_os_error() {
        Some(libc::ENOENT) => MPI_ERR_NO_SUCH_FILE,
        Some(libc::EEXIST) => MPI_ERR_FILE_EXISTS,
        Some(libc::EACCES | libc::EPERM) => MPI_ERR_ACCESS,
        Some(libc::EROFS) => MPI_ERR_READ_ONLY,
        Some(libc::ENOSPC | libc::EFBIG) => MPI_ERR_NO_SPACE,
        Some(libc::EDQUOT) => MPI_ERR_QUOTA,
        Some(libc::ENAMETOOLONG | libc::EISDIR | libc::ENOTDIR | libc::ELOOP) => MPI_ERR_BAD_FILE,
        Some(libc::EBUSY | libc::ETXTBSY) => MPI_ERR_FILE_IN_USE,
        _ => MPI_ERR_IO,
    };
    MpiError::new(class, format!("{what}: {e}"))
}

/// Opens `path` with the POSIX flags of `amode`; `create`: whether this
/// process creates the file (the others open what it created).
pub fn open_path(path: &Path, amode: c_int, create: bool) -> MpiResult<OsFile> {
    let mut o = std::fs::OpenOptions::new();
    match amode & ACCESS_BITS {
        MPI_MODE_RDONLY => o.read(true),
        MPI_MODE_WRONLY => o.write(true),
        _ => o.read(true).write(true),
    };
    if create && amode & MPI_MODE_CREATE != 0 {
        if amode & MPI_MODE_EXCL != 0 {
            o.create_new(true);
        } else {
            o.create(true);
        }
    } else if create && amode & MPI_MODE_EXCL != 0 {
        // EXCL without CREATE: POSIX leaves it undefined; the file must exist.
    }
    let f = o.open(path).map_err(|e| os_error(&e, &path.display().to_string()))?;
    let md = f.metadata().map_err(|e| os_error(&e, &path.display().to_string()))?;
    if md.is_dir() {
        bail!(MPI_ERR_BAD_FILE, "{} is a directory", path.display());
    }
    Ok(f)
}

/// Takes (`F_WRLCK`, `F_RDLCK`) or drops (`F_UNLCK`) an open-file-description
/// lock on bytes `[from, from + len)` of `f`, waiting for it; `what` names
/// the lock in errors.
fn ofd_lock(f: &OsFile, kind: c_int, from: i64, len: i64, what: &str) -> MpiResult<()> {
    // SAFETY: a zeroed flock is a valid argument; fields set below.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = from;
    fl.l_len = len;
    loop {
        // SAFETY: fcntl on an open descriptor with a valid flock.
        let r = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_SETLKW, &fl) };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(os_error(&e, what));
        }
    }
}

/// The directory of file `path` (`.` for a bare name).
pub fn dir_of(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// The shared file pointer of one open file: an 8-byte counter (in etypes
/// of the current view) in a side file every process of the group opened,
/// updated under an open-file-description lock, so it works wherever the
/// file system honours `fcntl` locks (local file systems, NFS with lockd).
/// The side file is unlinked once all processes have it open.
pub struct SharedPtr {
    f: OsFile,
}

impl SharedPtr {
    /// Creates a side file for `data` (next to it, or in the temporary
    /// directory when `local_ok` and its directory is not writable) holding
    /// `initial`. Returns it and its name.
    pub fn create(data: &Path, initial: i64, local_ok: bool) -> MpiResult<(SharedPtr, PathBuf)> {
        let base = data.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tag: u64 = {
            let mut b = [0u8; 8];
            // SAFETY: getrandom writes at most 8 bytes into `b`.
            unsafe { libc::getrandom(b.as_mut_ptr() as *mut libc::c_void, 8, 0) };
            u64::from_ne_bytes(b) ^ std::process::id() as u64
        };
        let name = format!(".{base}.mpicore-shfp-{tag:016x}");
        let mut places = vec![dir_of(data).join(&name)];
        if local_ok {
            places.push(std::env::temp_dir().join(&name));
        }
        let mut last = None;
        for p in places {
            match std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&p) {
                Ok(f) => {
                    let s = SharedPtr { f };
                    s.store(initial)?;
                    return Ok((s, p));
                }
                Err(e) => last = Some(os_error(&e, &format!("shared file pointer {}", p.display()))),
            }
        }
        Err(last.unwrap_or_else(|| MpiError::new(MPI_ERR_IO, "no place for the shared file pointer")))
    }

    /// Opens the side file another process created.
    pub fn open(p: &Path) -> MpiResult<SharedPtr> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(p)
            .map_err(|e| os_error(&e, &format!("shared file pointer {}", p.display())))?;
        Ok(SharedPtr { f })
    }

    fn lock(&self, kind: c_int) -> MpiResult<()> {
        ofd_lock(&self.f, kind, 0, 8, "locking the shared file pointer")
    }

    fn load(&self) -> MpiResult<i64> {
        let mut b = [0u8; 8];
        let n = self.f.read_at(&mut b, 0).map_err(|e| os_error(&e, "reading the shared file pointer"))?;
        Ok(if n == 8 { i64::from_ne_bytes(b) } else { 0 })
    }

    fn store(&self, v: i64) -> MpiResult<()> {
        self.f.write_all_at(&v.to_ne_bytes(), 0).map_err(|e| os_error(&e, "writing the shared file pointer"))
    }

    /// Adds `n` to the pointer atomically; returns its value before.
    pub fn fetch_add(&self, n: i64) -> MpiResult<i64> {
        self.lock(libc::F_WRLCK)?;
        let r = self.load().and_then(|v| self.store(v + n).map(|()| v));
        self.lock(libc::F_UNLCK)?;
        r
    }

    /// Runs `f` on the pointer's value with the pointer locked, and sets
    /// it to what `f` returns first (for a read whose length is known only
    /// after it: the pointer moves by what was read).
    pub fn update<R>(&self, f: impl FnOnce(i64) -> MpiResult<(i64, R)>) -> MpiResult<R> {
        self.lock(libc::F_WRLCK)?;
        let r = self.load().and_then(f).and_then(|(v, out)| self.store(v).map(|()| out));
        self.lock(libc::F_UNLCK)?;
        r
    }

    pub fn get(&self) -> MpiResult<i64> {
        self.lock(libc::F_RDLCK)?;
        let r = self.load();
        self.lock(libc::F_UNLCK)?;
        r
    }

    pub fn set(&self, v: i64) -> MpiResult<()> {
        self.lock(libc::F_WRLCK)?;
        let r = self.store(v);
        self.lock(libc::F_UNLCK)?;
        r
    }
}

/// A split collective in progress on a file (`_begin` called, `_end` not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    ReadAll,
    ReadAtAll,
    WriteAll,
    WriteAtAll,
    ReadOrdered,
    WriteOrdered,
}

/// One open file at this process.
pub struct File {
    pub os: OsFile,
    pub path: PathBuf,
    pub amode: c_int,
    /// World ranks of the group that opened the file, and this process's rank.
    pub group: Arc<Vec<usize>>,
    pub rank: usize,
    /// Context id of the file's internal messages (agreed at open).
    pub ctx: u32,
    pub errhandler: MPI_Errhandler,
    pub hints: Pairs,
    pub atomic: bool,
    pub view: FileView,
    /// Individual file pointer, in etypes of the view.
    pub pos: i64,
    pub shared: Option<SharedPtr>,
    /// Why the shared file pointer is missing, if it is.
    pub shared_err: Option<MpiError>,
    /// The split collective begun and its result, to hand out at `_end`.
    pub split: Option<(Split, MPI_Status)>,
}

impl File {
    pub fn readable(&self) -> MpiResult<()> {
        if self.amode & MPI_MODE_WRONLY != 0 {
            bail!(MPI_ERR_ACCESS, "the file was opened write-only (MPI_MODE_WRONLY)");
        }
        Ok(())
    }
    pub fn writable(&self) -> MpiResult<()> {
        if self.amode & MPI_MODE_RDONLY != 0 {
            bail!(MPI_ERR_READ_ONLY, "the file was opened read-only (MPI_MODE_RDONLY)");
        }
        Ok(())
    }
    /// Explicit offsets and individual file pointers are not allowed on a
    /// file opened with `MPI_MODE_SEQUENTIAL`.
    pub fn random_access(&self) -> MpiResult<()> {
        if self.amode & MPI_MODE_SEQUENTIAL != 0 {
            bail!(
                MPI_ERR_UNSUPPORTED_OPERATION,
                "the file was opened with MPI_MODE_SEQUENTIAL: only shared file pointer access is allowed"
            );
        }
        Ok(())
    }
    pub fn shared(&self) -> MpiResult<&SharedPtr> {
        match (&self.shared, &self.shared_err) {
            (Some(s), _) => Ok(s),
            (None, Some(e)) => {
                Err(MpiError::new(MPI_ERR_UNSUPPORTED_OPERATION, format!("no shared file pointer: {}", e.msg)))
            }
            (None, None) => bail!(MPI_ERR_UNSUPPORTED_OPERATION, "no shared file pointer"),
        }
    }

    pub fn size(&self) -> MpiResult<i64> {
        let md = self.os.metadata().map_err(|e| os_error(&e, &self.path.display().to_string()))?;
        Ok(md.len() as i64)
    }

    /// Locks bytes `[from, to)` of the file for the duration of an access
    /// in atomic mode (`F_WRLCK` or `F_RDLCK`), or unlocks them (`F_UNLCK`).
    fn range_lock(&self, kind: c_int, from: i64, to: i64) -> MpiResult<()> {
        if to <= from {
            return Ok(());
        }
        ofd_lock(&self.os, kind, from, to - from, "locking a range of the file (atomic mode)")
    }

    /// Writes `data` at stream byte `start` of the view.
    pub fn write_stream(&self, start: i64, data: &[u8]) -> MpiResult<()> {
        let span = self.stream_span(start, data.len());
        if self.atomic {
            self.range_lock(libc::F_WRLCK, span.0, span.1)?;
        }
        let mut r = Ok(());
        // In slices of the stream, so a very fragmented access never holds
        // the list of all its file ranges at once.
        for (k, part) in data.chunks(STREAM_SLICE).enumerate() {
            let mut at = 0usize;
            for (off, len) in self.view.segments(start + (k * STREAM_SLICE) as i64, part.len() as i64) {
                r = self.write_at(&part[at..at + len], off);
                if r.is_err() {
                    break;
                }
                at += len;
            }
            if r.is_err() {
                break;
            }
        }
        if self.atomic {
            self.range_lock(libc::F_UNLCK, span.0, span.1)?;
        }
        r
    }

    /// Reads stream bytes from `start` of the view into `out`; returns how
    /// many were read (fewer at the end of the file).
    pub fn read_stream(&self, start: i64, out: &mut [u8]) -> MpiResult<usize> {
        let span = self.stream_span(start, out.len());
        if self.atomic {
            self.range_lock(libc::F_RDLCK, span.0, span.1)?;
        }
        let mut r = Ok(0usize);
        for (k, part) in out.chunks_mut(STREAM_SLICE).enumerate() {
            let segs = self.view.segments(start + (k * STREAM_SLICE) as i64, part.len() as i64);
            match self.read_pieces(&segs, part) {
                Ok(got) => {
                    // The stream ends at the first piece the file did not fill.
                    let mut at = 0usize;
                    let mut short = false;
                    for (&(_, len), &g) in segs.iter().zip(&got) {
                        at += g;
                        if g < len {
                            short = true;
                            break;
                        }
                    }
                    r = r.map(|n| n + at);
                    if short {
                        break;
                    }
                }
                Err(e) => {
                    r = Err(e);
                    break;
                }
            }
        }
        if self.atomic {
            self.range_lock(libc::F_UNLCK, span.0, span.1)?;
        }
        r
    }

    /// First and last file byte (exclusive) of stream bytes
    /// `[start, start + len)` (the view's positions never decrease).
    fn stream_span(&self, start: i64, len: usize) -> (i64, i64) {
        if len == 0 {
            return (0, 0);
        }
        (self.view.byte_position(start), self.view.byte_position(start + len as i64 - 1) + 1)
    }

    /// Reads the file ranges `pieces` into `out`, one after the other
    /// (`out` holds their total length); returns how many bytes of each
    /// the file had (fewer at its end). Consecutive pieces that follow each
    /// other closely are read with one `pread` of their whole span (data
    /// sieving: a strided view costs a few large reads, not one per piece).
    pub fn read_pieces(&self, pieces: &[view::Segment], out: &mut [u8]) -> MpiResult<Vec<usize>> {
        let mut got = Vec::with_capacity(pieces.len());
        let mut at = 0usize;
        let mut i = 0;
        let mut span_buf = Vec::new();
        while i < pieces.len() {
            // The group of pieces [i, j) read at once.
            let (lo, mut hi) = (pieces[i].0, pieces[i].0 + pieces[i].1 as i64);
            let mut j = i + 1;
            while j < pieces.len() {
                let (o, l) = pieces[j];
                if o < hi || o - hi > SIEVE_GAP || o + l as i64 - lo > SIEVE_SPAN {
                    break;
                }
                hi = o + l as i64;
                j += 1;
            }
            if j == i + 1 {
                let len = pieces[i].1;
                got.push(self.read_full(&mut out[at..at + len], lo)?);
                at += len;
            } else {
                span_buf.resize((hi - lo) as usize, 0);
                let have = self.read_full(&mut span_buf, lo)? as i64;
                for &(o, l) in &pieces[i..j] {
                    let from = (o - lo) as usize;
                    let n = (have - (o - lo)).clamp(0, l as i64) as usize;
                    out[at..at + n].copy_from_slice(&span_buf[from..from + n]);
                    got.push(n);
                    at += l;
                }
            }
            i = j;
        }
        Ok(got)
    }

    /// Fills `buf` from file position `off`; returns the bytes read (fewer
    /// only at the end of the file).
    fn read_full(&self, buf: &mut [u8], off: i64) -> MpiResult<usize> {
        let mut done = 0usize;
        while done < buf.len() {
            match self.os.read_at(&mut buf[done..], off as u64 + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(os_error(&e, &format!("reading {}", self.path.display()))),
            }
        }
        Ok(done)
    }

    /// Truncates or extends the file to `size` bytes.
    pub fn set_len(&self, size: MPI_Offset) -> MpiResult<()> {
        self.os.set_len(size as u64).map_err(|e| os_error(&e, &self.path.display().to_string()))
    }

    /// Reserves the file's first `size` bytes on disk (`posix_fallocate`).
    pub fn preallocate(&self, size: MPI_Offset) -> MpiResult<()> {
        // SAFETY: posix_fallocate on our open descriptor, no memory passed.
        let rc = unsafe { libc::posix_fallocate(self.os.as_raw_fd(), 0, size) };
        if rc != 0 {
            return Err(os_error(&std::io::Error::from_raw_os_error(rc), &self.path.display().to_string()));
        }
        Ok(())
    }

    /// Flushes what this process wrote to the storage device.
    pub fn sync(&self) -> MpiResult<()> {
        self.os.sync_all().map_err(|e| os_error(&e, &self.path.display().to_string()))
    }

    /// Writes `data` at file position `off`.
    pub fn write_at(&self, data: &[u8], off: i64) -> MpiResult<()> {
        self.os.write_all_at(data, off as u64).map_err(|e| os_error(&e, &format!("writing {}", self.path.display())))
    }
}

/// Stream bytes handled at a time by one access (bounds the list of file
/// ranges it builds).
const STREAM_SLICE: usize = 4 << 20;
/// Largest hole between two pieces that one sieving read spans.
const SIEVE_GAP: i64 = 64 << 10;
/// Largest span one sieving read covers.
const SIEVE_SPAN: i64 = 8 << 20;

// ---------------------------------------------------------------------------
// The table of open files.

/// An open file, shared by the calls that use it.
pub type FileRef = Arc<Mutex<File>>;

struct Slot {
    gen: u32,
    file: Option<FileRef>,
}

static FILES: Mutex<Vec<Slot>> = Mutex::new(Vec::new());

fn table() -> MutexGuard<'static, Vec<Slot>> {
    FILES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Locks one file (a panic elsewhere does not poison it for us).
pub fn lock(f: &FileRef) -> MutexGuard<'_, File> {
    f.lock().unwrap_or_else(|e| e.into_inner())
}

/// The handle of slot `i` with generation `gen`: the generation in the high
/// half, the slot plus one in the low half (never 0, `MPI_FILE_NULL`).
fn handle_of(i: usize, gen: u32) -> MPI_File {
    (((gen as u64) << 32) | (i as u64 + 1)) as usize as MPI_File
}

/// Registers a new open file and returns its handle.
pub fn insert(f: File) -> MPI_File {
    let mut t = table();
    let file = Some(Arc::new(Mutex::new(f)));
    if let Some(i) = t.iter().position(|s| s.file.is_none()) {
        t[i].gen = t[i].gen.wrapping_add(1);
        t[i].file = file;
        return handle_of(i, t[i].gen);
    }
    t.push(Slot { gen: 1, file });
    handle_of(t.len() - 1, 1)
}

fn slot_of(h: MPI_File) -> Option<(usize, u32)> {
    let v = h as usize as u64;
    let i = (v & 0xffff_ffff) as usize;
    (i > 0).then(|| (i - 1, (v >> 32) as u32))
}

/// The open file of handle `h`.
pub fn get(h: MPI_File) -> MpiResult<FileRef> {
    if h.is_null() {
        bail!(MPI_ERR_FILE, "MPI_FILE_NULL is not an open file");
    }
    let t = table();
    match slot_of(h).and_then(|(i, g)| t.get(i).filter(|s| s.gen == g)).and_then(|s| s.file.clone()) {
        Some(f) => Ok(f),
        None => bail!(MPI_ERR_FILE, "invalid file handle {h:p}"),
    }
}

/// Removes the file of handle `h` from the table.
pub fn remove(h: MPI_File) -> Option<FileRef> {
    let mut t = table();
    let (i, g) = slot_of(h)?;
    let s = t.get_mut(i).filter(|s| s.gen == g)?;
    s.file.take()
}

/// `MPI_File_c2f`: the slot plus one (0 for `MPI_FILE_NULL` or a stale handle).
pub fn to_fint(h: MPI_File) -> MPI_Fint {
    match get(h) {
        Ok(_) => slot_of(h).map_or(0, |(i, _)| (i + 1) as MPI_Fint),
        Err(_) => 0,
    }
}

/// `MPI_File_f2c`: the handle of a live slot, else `MPI_FILE_NULL`.
pub fn from_fint(f: MPI_Fint) -> MPI_File {
    if f <= 0 {
        return std::ptr::null_mut();
    }
    let t = table();
    let i = f as usize - 1;
    match t.get(i) {
        Some(s) if s.file.is_some() => handle_of(i, s.gen),
        _ => std::ptr::null_mut(),
    }
}

/// Open files at this process (for leak checks).
pub fn live() -> usize {
    table().iter().filter(|s| s.file.is_some()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amode_rules() {
        assert!(check_amode(MPI_MODE_RDONLY).is_ok());
        assert!(check_amode(MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_SEQUENTIAL).is_ok());
        for bad in [
            0,
            MPI_MODE_RDONLY | MPI_MODE_RDWR,
            MPI_MODE_RDONLY | MPI_MODE_CREATE,
            MPI_MODE_RDONLY | MPI_MODE_EXCL,
            MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL,
            MPI_MODE_RDWR | 0x10000,
        ] {
            assert_eq!(check_amode(bad).unwrap_err().class, MPI_ERR_AMODE, "amode {bad:#x}");
        }
    }

    #[test]
    fn shared_pointer_counts_across_openings() {
        let dir = std::env::temp_dir().join(format!("mpicore-io-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let data = dir.join("data");
        let (a, side) = SharedPtr::create(&data, 5, false).unwrap();
        let b = SharedPtr::open(&side).unwrap();
        assert_eq!(a.fetch_add(3).unwrap(), 5);
        assert_eq!(b.fetch_add(2).unwrap(), 8);
        assert_eq!(a.get().unwrap(), 10);
        b.set(0).unwrap();
        assert_eq!(a.get().unwrap(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn handles_round_trip_and_go_stale() {
        let dir = std::env::temp_dir().join(format!("mpicore-io-handles-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f");
        let os = open_path(&p, MPI_MODE_RDWR | MPI_MODE_CREATE, true).unwrap();
        let byte = Arc::new(crate::rt::datatype::builtin(MPI_BYTE).unwrap());
        let f = File {
            os,
            path: p.clone(),
            amode: MPI_MODE_RDWR,
            group: Arc::new(vec![0]),
            rank: 0,
            ctx: 0,
            errhandler: MPI_ERRORS_RETURN,
            hints: Vec::new(),
            atomic: false,
            view: FileView::bytes(byte),
            pos: 0,
            shared: None,
            shared_err: None,
            split: None,
        };
        let h = insert(f);
        assert!(get(h).is_ok());
        assert_eq!(from_fint(to_fint(h)), h);
        {
            let f = get(h).unwrap();
            let f = lock(&f);
            f.write_stream(3, b"abc").unwrap();
            let mut out = [0u8; 8];
            assert_eq!(f.read_stream(0, &mut out).unwrap(), 6);
            assert_eq!(&out[..6], b"\0\0\0abc");
        }
        {
            // Sieving: close pieces read in one span, a far one alone, the
            // end of the file cutting the last piece short.
            let f = get(h).unwrap();
            let f = lock(&f);
            let bytes: Vec<u8> = (0..200u8).collect();
            f.write_at(&bytes, 0).unwrap();
            let pieces = [(10, 2), (14, 3), (100_000, 4), (198, 5)];
            let mut out = [0u8; 14];
            assert_eq!(f.read_pieces(&pieces, &mut out).unwrap(), vec![2, 3, 0, 2]);
            assert_eq!(&out[..5], &[10, 11, 14, 15, 16]);
            assert_eq!(&out[9..11], &[198, 199]);
            assert_eq!(f.read_stream(10, &mut out[..4]).unwrap(), 4);
            assert_eq!(&out[..4], &[10, 11, 12, 13]);
        }
        {
            // An access longer than one slice of the stream, in a view of
            // 1 KiB blocks 2 KiB apart; the read back ends at the end of
            // the file in the middle of a block.
            let f = get(h).unwrap();
            let mut f = lock(&f);
            let byte = Arc::new(crate::rt::datatype::builtin(MPI_BYTE).unwrap());
            let ft = Arc::new(crate::rt::datatype::hvector(1, 1024, 0, &byte).unwrap().resized(0, 2048).unwrap());
            f.view = FileView::new(0, byte, ft, "native", true).unwrap();
            let n = STREAM_SLICE + STREAM_SLICE / 2;
            let data: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
            f.write_stream(0, &data).unwrap();
            assert_eq!(f.size().unwrap(), (n / 1024 * 2048 - 1024) as i64);
            f.os.set_len((n / 1024 * 2048 - 1024 - 100) as u64).unwrap();
            let mut back = vec![0u8; n];
            assert_eq!(f.read_stream(0, &mut back).unwrap(), n - 100);
            assert!(back[..n - 100] == data[..n - 100]);
        }
        assert!(remove(h).is_some());
        assert_eq!(get(h).err().map(|e| e.class), Some(MPI_ERR_FILE));
        assert!(from_fint(to_fint(h)).is_null());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
