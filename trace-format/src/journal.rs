//! Journals: the crash-safe files a running process appends to.
//!
//! A journal is a flat array of [`RECORD_SIZE`]-byte slots. Slot 0 is the
//! header ([`JournalHeader`]); slots 1.. are [`Record`]s. The writer maps the
//! file in chunks of [`CHUNK_BYTES`] (a multiple of both the page size and
//! the record size) with `MAP_SHARED`, writing the chunk's zeros with
//! `pwrite` first: the file system reserves the blocks (a full disk is an
//! error at growth time, never a `SIGBUS` in the application) and the pages
//! are already in the page cache, which halves the kernel's work compared
//! with `posix_fallocate` plus faulting them in. Chunks are never remapped, so a slot
//! handed out stays valid until the writer is dropped. Pages of a shared
//! mapping belong to the page cache: when the process dies — `MPI_Abort`,
//! segfault, `kill -9` — everything written so far is still in the file.
//!
//! Records are written by one thread each; the head word of a record is
//! stored last with release ordering, and the reader stops at the first slot
//! whose head is zero.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::record::{Record, RECORD_SIZE};
use crate::Error;

/// Bytes mapped at a time: 340 × lcm(4096, RECORD_SIZE = 96), about 4 MiB.
pub const CHUNK_BYTES: usize = 12288 * 340;
const SLOTS_PER_CHUNK: usize = CHUNK_BYTES / RECORD_SIZE;

/// Magic at the start of every journal.
pub const MAGIC: [u8; 8] = *b"MPITRJ\0\x01";
/// Version of the journal layout.
pub const JOURNAL_VERSION: u32 = 1;

/// What the timestamps of a journal count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockKind {
    /// CLOCK_MONOTONIC nanoseconds.
    MonotonicNs,
    /// x86 time-stamp counter ticks, mapped to CLOCK_MONOTONIC through the
    /// calibration points of the side file.
    Tsc,
}

/// The header slot of a journal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JournalHeader {
    pub clock: ClockKind,
    /// Process id of the writer.
    pub pid: u32,
    /// Index of the writing thread within its process (0 = first thread that called MPI).
    pub thread: u32,
    /// World rank, or -1 if not known when the journal was created.
    pub rank: i32,
    /// Number of procedures in the API table the call ids index.
    pub table_len: u32,
}

impl JournalHeader {
    fn to_bytes(self) -> [u8; RECORD_SIZE] {
        let mut b = [0u8; RECORD_SIZE];
        b[0..8].copy_from_slice(&MAGIC);
        let words = [
            JOURNAL_VERSION,
            RECORD_SIZE as u32,
            match self.clock {
                ClockKind::MonotonicNs => 0,
                ClockKind::Tsc => 1,
            },
            self.pid,
            self.thread,
            self.rank as u32,
            self.table_len,
        ];
        for (i, w) in words.iter().enumerate() {
            b[8 + 4 * i..12 + 4 * i].copy_from_slice(&w.to_le_bytes());
        }
        b
    }

    fn from_bytes(path: &Path, b: &[u8]) -> Result<Self, Error> {
        let bad = |what: String| Error::Corrupt { path: path.to_path_buf(), what };
        if b.len() < RECORD_SIZE {
            return Err(bad(format!("{} bytes, shorter than the journal header", b.len())));
        }
        if b[0..8] != MAGIC {
            return Err(bad("not an mpitrace journal (bad magic)".into()));
        }
        let w = |i: usize| u32::from_le_bytes(b[8 + 4 * i..12 + 4 * i].try_into().unwrap());
        if w(0) != JOURNAL_VERSION || w(1) as usize != RECORD_SIZE {
            return Err(bad(format!("journal version {} record size {} not supported", w(0), w(1))));
        }
        Ok(JournalHeader {
            clock: if w(2) == 1 { ClockKind::Tsc } else { ClockKind::MonotonicNs },
            pid: w(3),
            thread: w(4),
            rank: w(5) as i32,
            table_len: w(6),
        })
    }
}

/// Appends records to a memory-mapped journal file.
pub struct JournalWriter {
    file: File,
    path: PathBuf,
    chunks: Vec<*mut u8>,
    /// Next free slot (slot 0 is the header).
    next: usize,
}

// SAFETY: the raw chunk pointers are owned by the writer; moving the writer
// to another thread moves the ownership of the mappings with it.
unsafe impl Send for JournalWriter {}

impl JournalWriter {
    /// Creates (truncating) the journal at `path` and writes its header.
    pub fn create(path: &Path, header: JournalHeader) -> Result<Self, Error> {
        let io = |e| Error::Io { path: path.to_path_buf(), source: e };
        let file = crate::private::open(OpenOptions::new().read(true).write(true).create(true).truncate(true), path)
            .map_err(io)?;
        let mut w = JournalWriter { file, path: path.to_path_buf(), chunks: Vec::new(), next: 1 };
        w.grow()?;
        // SAFETY: chunk 0 is mapped, writable and at least one slot long.
        unsafe { std::ptr::copy_nonoverlapping(header.to_bytes().as_ptr(), w.chunks[0], RECORD_SIZE) };
        Ok(w)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of records written (reserved) so far.
    pub fn len(&self) -> usize {
        self.next - 1
    }

    pub fn is_empty(&self) -> bool {
        self.next == 1
    }

    fn grow(&mut self) -> Result<(), Error> {
        let io = |e| Error::Io { path: self.path.clone(), source: e };
        let offset = self.chunks.len() * CHUNK_BYTES;
        let fd = self.file.as_raw_fd();
        // Writing zeros (rather than fallocate) puts the pages in the page
        // cache at once, so mapping them needs no read path; the file
        // system reserves the blocks, so a full disk fails here.
        {
            use std::os::unix::fs::FileExt;
            static ZEROS: [u8; 1 << 16] = [0; 1 << 16];
            for k in (0..CHUNK_BYTES).step_by(ZEROS.len()) {
                let n = ZEROS.len().min(CHUNK_BYTES - k);
                self.file.write_all_at(&ZEROS[..n], (offset + k) as u64).map_err(io)?;
            }
        }
        // SAFETY: maps CHUNK_BYTES of our file at a page-aligned offset that
        // the writes above made part of the file.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                CHUNK_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io(std::io::Error::last_os_error()));
        }
        // Make the pages writable now (one call instead of a write fault per
        // page while recording); older kernels lack it, which only costs time.
        const MADV_POPULATE_WRITE: libc::c_int = 23;
        // SAFETY: advice on the mapping just created.
        unsafe { libc::madvise(p, CHUNK_BYTES, MADV_POPULATE_WRITE) };
        self.chunks.push(p as *mut u8);
        Ok(())
    }

    /// A pointer to the next free slot, growing the file when needed.
    /// The slot is zero and stays mapped as long as the writer lives.
    pub fn reserve(&mut self) -> Result<*mut Record, Error> {
        let chunk = self.next / SLOTS_PER_CHUNK;
        if chunk >= self.chunks.len() {
            self.grow()?;
        }
        let off = (self.next % SLOTS_PER_CHUNK) * RECORD_SIZE;
        self.next += 1;
        // SAFETY: `off` is within the mapped chunk; chunks are page aligned
        // and RECORD_SIZE is a multiple of 8, so the slot is aligned for Record.
        Ok(unsafe { self.chunks[chunk].add(off) as *mut Record })
    }

    /// Appends a complete record (head included).
    pub fn append(&mut self, rec: &Record) -> Result<(), Error> {
        let slot = self.reserve()?;
        // SAFETY: `slot` is a valid, exclusive, free slot of this journal.
        unsafe { publish(slot, rec) };
        Ok(())
    }

    /// Asks the kernel to start writing dirty pages back (not needed for
    /// crash safety, only against a machine failure).
    pub fn flush_async(&self) {
        for &c in &self.chunks {
            // SAFETY: each chunk is a live mapping of CHUNK_BYTES.
            unsafe { libc::msync(c as *mut libc::c_void, CHUNK_BYTES, libc::MS_ASYNC) };
        }
    }
}

impl Drop for JournalWriter {
    fn drop(&mut self) {
        for &c in &self.chunks {
            // SAFETY: unmapping mappings this writer created; no slot pointer
            // outlives the writer by contract of `reserve`.
            unsafe { libc::munmap(c as *mut libc::c_void, CHUNK_BYTES) };
        }
    }
}

/// Writes `rec` into `slot`, storing the head word last with release ordering.
///
/// # Safety
/// `slot` must point to a mapped, aligned record slot no other thread writes.
pub unsafe fn publish(slot: *mut Record, rec: &Record) {
    let mut body = *rec;
    body.head = 0;
    // SAFETY: caller guarantees the slot is valid and exclusive.
    unsafe {
        std::ptr::write_volatile(slot, body);
        set_head(slot, rec.head);
    }
}

/// Stores the head word of a slot with release ordering.
///
/// # Safety
/// `slot` must point to a mapped, aligned record slot no other thread writes.
pub unsafe fn set_head(slot: *mut Record, head: u32) {
    // SAFETY: the head is the first, 4-byte aligned u32 of the slot.
    unsafe { AtomicU32::from_ptr(slot as *mut u32).store(head, Ordering::Release) };
}

/// How a journal ended, as found by the reader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JournalEnd {
    /// Records up to a free slot: the writer stopped cleanly or was killed
    /// between records.
    Clean,
    /// The file ends in the middle of a record (copied or cut short).
    Truncated { trailing_bytes: usize },
    /// Records with a non-zero head after the first free slot; they were
    /// not read.
    Hole { at_slot: usize },
}

/// A journal as read from disk.
#[derive(Clone, Debug)]
pub struct Journal {
    pub path: PathBuf,
    pub header: JournalHeader,
    pub records: Vec<Record>,
    pub end: JournalEnd,
}

/// Reads a journal chunk by chunk (bounded memory for long journals).
pub struct ChunkReader {
    file: std::io::BufReader<File>,
    pub path: PathBuf,
    pub header: JournalHeader,
    slot: usize,
    end: Option<JournalEnd>,
}

impl ChunkReader {
    /// Opens a journal; errors only if the header is unreadable (or the
    /// file is not a regular file: a FIFO is refused, not waited on).
    pub fn open(path: &Path) -> Result<Self, Error> {
        use std::io::Read;
        let (file, _) = crate::files::open_regular(path)?;
        let mut file = std::io::BufReader::with_capacity(1 << 20, file);
        let mut head = Vec::with_capacity(RECORD_SIZE);
        (&mut file).take(RECORD_SIZE as u64).read_to_end(&mut head).map_err(|e| Error::io(path, e))?;
        let header = JournalHeader::from_bytes(path, &head)?;
        Ok(ChunkReader { file, path: path.to_path_buf(), header, slot: 1, end: None })
    }

    /// Checks the header against the file's name (`rank-RRRRR.tT.journal`):
    /// the thread index must be `T` and the rank `R` (or -1, written by a
    /// process that did not know its rank yet). The thread index sizes
    /// per-thread tables of the readers: a damaged one must not be used.
    pub fn check_name(&self, rank: i32, thread: u32) -> Result<(), Error> {
        if self.header.rank != rank && self.header.rank != -1 {
            crate::inventory::check_rank(&self.path, rank, self.header.rank, "its header")?;
        }
        if self.header.thread != thread {
            return Err(Error::LeftOut {
                path: self.path.clone(),
                why: format!("header says thread {}, its name thread {thread}", self.header.thread),
            });
        }
        Ok(())
    }

    /// Up to `max` further records; empty once the journal is over.
    pub fn next_chunk(&mut self, max: usize) -> Vec<Record> {
        let mut out = Vec::new();
        if self.end.is_some() {
            return out;
        }
        let mut buf = [0u8; RECORD_SIZE];
        while out.len() < max {
            let n = read_full(&mut self.file, &mut buf);
            if n < RECORD_SIZE {
                let trailing = buf[..n].iter().any(|&b| b != 0);
                self.end = Some(if trailing { JournalEnd::Truncated { trailing_bytes: n } } else { JournalEnd::Clean });
                break;
            }
            let r = Record::from_bytes(&buf);
            self.slot += 1;
            if r.head != 0 {
                out.push(r);
                continue;
            }
            // A free slot: the journal ends here, unless records follow.
            // The writer grows the file a chunk at a time, so a clean end
            // has zeros to the end of its chunk; a hole left by a record
            // never published is within the same or the next chunk. The
            // rest of a longer file (a sparse file of a terabyte) is not
            // read: scanning it would take as long as its size.
            let mut end = JournalEnd::Clean;
            let mut slot = self.slot;
            let scan_end = (slot / SLOTS_PER_CHUNK + 2) * SLOTS_PER_CHUNK;
            while slot < scan_end && read_full(&mut self.file, &mut buf) == RECORD_SIZE {
                if buf[..4] != [0, 0, 0, 0] {
                    end = JournalEnd::Hole { at_slot: slot };
                    break;
                }
                slot += 1;
            }
            self.end = Some(end);
            break;
        }
        out
    }

    /// How the journal ended (known once `next_chunk` returned empty).
    pub fn end(&self) -> Option<&JournalEnd> {
        self.end.as_ref()
    }
}

/// Reads as many bytes as available up to `buf.len()`.
fn read_full(r: &mut impl std::io::Read, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    n
}

/// Reads a whole journal. Errors only if the header is unreadable; damage
/// after the header is reported in [`Journal::end`] and what precedes it returned.
pub fn read_journal(path: &Path) -> Result<Journal, Error> {
    let mut r = ChunkReader::open(path)?;
    let records = r.next_chunk(usize::MAX);
    let end = r.end().cloned().unwrap_or(JournalEnd::Clean);
    Ok(Journal { path: path.to_path_buf(), header: r.header, records, end })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{head, Kind};

    fn header() -> JournalHeader {
        JournalHeader { clock: ClockKind::Tsc, pid: 42, thread: 1, rank: 3, table_len: 700 }
    }

    #[test]
    fn write_read_across_chunks() {
        let dir = tempdir();
        let path = dir.join("j");
        let mut w = JournalWriter::create(&path, header()).unwrap();
        let n = SLOTS_PER_CHUNK * 2 + 17;
        for i in 0..n {
            let r = Record { head: head(i as u16, Kind::Call, 1), t_enter: i as u64, ..Default::default() };
            w.append(&r).unwrap();
        }
        // A reserved but unpublished slot ends the journal.
        let _ = w.reserve().unwrap();
        let j = read_journal(&path).unwrap();
        assert_eq!(j.header, header());
        assert_eq!(j.records.len(), n);
        assert_eq!(j.records[n - 1].t_enter, (n - 1) as u64);
        assert_eq!(j.end, JournalEnd::Clean);
        drop(w);
        // Cut the file in the middle of a record.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..RECORD_SIZE * 11 + 30]).unwrap();
        let j = read_journal(&path).unwrap();
        assert_eq!(j.records.len(), 10);
        assert_eq!(j.end, JournalEnd::Truncated { trailing_bytes: 30 });
        std::fs::write(&path, b"garbage").unwrap();
        assert!(matches!(read_journal(&path), Err(Error::Corrupt { .. })));
    }

    fn tempdir() -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("tf-journal-{}-{:?}", std::process::id(), std::thread::current().id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
