//! The shared-memory segment of a node: one control block per local rank and
//! one single-producer/single-consumer byte ring per ordered pair of local
//! ranks.
//!
//! Layout (all offsets multiples of 64):
//! ```text
//! [SegHeader 4096 B][Ctl x nlocal, 128 B each][Ring (128 B ctl + ring_size) x nlocal^2]
//! ```
//! The ring from local rank `a` to local rank `b` is slot `a * nlocal + b`.
//! The segment is created mode 0600 by local rank 0 and unlinked as soon as
//! every local rank has mapped it, so nothing is left in /dev/shm after a
//! crash.

use std::ffi::CString;
use std::sync::atomic::{fence, AtomicI32, AtomicU32, AtomicU64, Ordering};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ShmError {
    #[error("shared memory segment {name}: {what}: {err}")]
    Os { name: String, what: &'static str, err: std::io::Error },
    #[error("shared memory segment {0} has a bad header (another job's segment?)")]
    BadHeader(String),
}

const MAGIC: u64 = 0x6d70_6963_6f72_6531; // "mpicore1"
const HEADER_BYTES: usize = 4096;
const CTL_BYTES: usize = 128;
const RING_CTL_BYTES: usize = 128;

#[repr(C)]
struct SegHeader {
    magic: AtomicU64,
    nlocal: u32,
    ring_size: u32,
}

/// Per-rank control block in the segment.
#[repr(C)]
pub struct Ctl {
    /// Threads of the rank asleep on [`Ctl::seq`] waiting for messages.
    pub sleeping: AtomicU32,
    pub pid: AtomicI32,
    /// Bumped by senders; lets a sleeping rank see that something arrived.
    pub doorbell: AtomicU32,
    /// Name of the rank's wake socket (see [`WakeSocket`]), 0 if it has none.
    pub wake: AtomicU64,
    /// Set when the rank enters `MPI_Finalize`: its process may end now.
    pub finalized: AtomicU32,
    /// Threads of the rank asleep in `poll` (on its sockets and its wake
    /// socket).
    pub polling: AtomicU32,
    /// The futex word sleepers wait on; a waking sender bumps it.
    pub seq: AtomicU32,
    /// A sender has woken the rank and no sleeper has gone to sleep since:
    /// later senders need not wake it again (only saves system calls).
    pub wake_pending: AtomicU32,
}

#[repr(C)]
struct RingCtl {
    /// Written by the producer (for inspection only; consumers poll stamps).
    head: AtomicU64,
    _pad0: [u8; 56],
    tail: AtomicU64,
    _pad1: [u8; 56],
}

/// Kinds of ring records.
pub mod kind {
    pub const WRAP: u8 = 0;
    pub const EAGER: u8 = 1;
    pub const RTS: u8 = 2;
    pub const FIN: u8 = 3;
    pub const SYNC_ACK: u8 = 4;
    pub const CTS: u8 = 5;
    pub const DATA: u8 = 6;
    pub const CANCEL_REQ: u8 = 7;
    pub const CANCEL_ACK: u8 = 8;
    /// A communicator was revoked (`MPIX_Comm_revoke`): `ctx` and `len` are
    /// its context ids, the payload its members (see `rt::ulfm`).
    pub const REVOKE: u8 = 9;
}

/// Header of every ring record, followed by `payload` bytes; records start
/// on a cache line (64 bytes).
///
/// `stamp` is written last (release) and is `position + 1` of the record in
/// the ring's byte stream: the consumer polls the stamp of the record at its
/// tail, so a small message costs it one cache line, and a stale record of
/// an earlier lap can never look valid.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MsgHdr {
    pub stamp: u64,
    pub kind: u8,
    pub flags: u8,
    pub _r: u16,
    /// Payload bytes following this header in the ring.
    pub payload: u32,
    /// Sender's rank in the communicator.
    pub src: i32,
    pub tag: i32,
    pub ctx: u32,
    pub _r2: u32,
    /// Message length (EAGER, RTS), offset (DATA), or another number.
    pub len: u64,
    /// A request id (sender's or receiver's), depending on the kind.
    pub aux: u64,
}

pub const HDR: usize = std::mem::size_of::<MsgHdr>();
const _: () = assert!(HDR == 48);
/// Alignment of records in a ring.
const REC_ALIGN: usize = 64;

/// Flags of [`MsgHdr::flags`].
pub const FLAG_SYNC: u8 = 1;
/// On an RTS: the sender is still packing the data; the payload carries,
/// after the data's address, the address of a counter of bytes ready.
pub const FLAG_PIPE: u8 = 2;

/// A mapped segment.
pub struct Segment {
    base: *mut u8,
    bytes: usize,
    pub nlocal: usize,
    pub ring_size: usize,
}

// SAFETY: the segment is a plain shared mapping; all concurrent access to it
// goes through atomics or through the SPSC ring protocol.
unsafe impl Send for Segment {}
// SAFETY: as for Send: shared access goes through atomics and the SPSC ring
// protocol, never through plain references to the mapping.
unsafe impl Sync for Segment {}

fn os_err(name: &str, what: &'static str) -> ShmError {
    ShmError::Os { name: name.into(), what, err: std::io::Error::last_os_error() }
}

/// Ring size for `nlocal` ranks: large rings for few ranks, bounded total.
pub fn ring_size_for(nlocal: usize) -> usize {
    if let Some(v) = std::env::var("MPICORE_RING_SIZE").ok().and_then(|v| v.parse::<usize>().ok()) {
        return v.next_power_of_two().max(4096);
    }
    let pairs = (nlocal * nlocal.saturating_sub(1)).max(1);
    let per = ((64usize << 20) / pairs).clamp(16 << 10, 256 << 10);
    1 << (usize::BITS - 1 - per.leading_zeros()) // round down to a power of two
}

impl Segment {
    fn layout(nlocal: usize, ring_size: usize) -> usize {
        HEADER_BYTES + nlocal * CTL_BYTES + nlocal * nlocal * (RING_CTL_BYTES + ring_size)
    }

    /// Creates (local rank 0) the segment `name`, mode 0600.
    pub fn create(name: &str, nlocal: usize) -> Result<Segment, ShmError> {
        let ring_size = ring_size_for(nlocal);
        let bytes = Self::layout(nlocal, ring_size);
        let cname = CString::new(name).unwrap();
        // SAFETY: plain libc calls with a valid C string; the fd is closed below.
        let fd = unsafe { libc::shm_open(cname.as_ptr(), libc::O_CREAT | libc::O_EXCL | libc::O_RDWR, 0o600) };
        if fd < 0 {
            return Err(os_err(name, "create"));
        }
        // SAFETY: fd is a valid shm descriptor.
        if unsafe { libc::ftruncate(fd, bytes as libc::off_t) } != 0 {
            let e = os_err(name, "resize");
            // SAFETY: cleanup of what we created.
            unsafe {
                libc::close(fd);
                libc::shm_unlink(cname.as_ptr());
            }
            return Err(e);
        }
        let mut seg = Self::map(name, fd, bytes)?;
        // SAFETY: the header is at the start of a mapping at least 4096 bytes long.
        let h = unsafe { &*(seg.base as *const SegHeader) };
        // SAFETY: we are the only process with the mapping so far.
        unsafe {
            let hp = seg.base as *mut SegHeader;
            (*hp).nlocal = nlocal as u32;
            (*hp).ring_size = ring_size as u32;
        }
        h.magic.store(MAGIC, Ordering::Release);
        seg.nlocal = nlocal;
        seg.ring_size = ring_size;
        Ok(seg)
    }

    /// A segment of `nlocal` ranks in anonymous memory of this process
    /// only, for engines that share no memory with other processes (the
    /// in-process engines of unit tests): nothing is created in /dev/shm.
    pub fn private(nlocal: usize) -> Result<Segment, ShmError> {
        let ring_size = ring_size_for(nlocal);
        let bytes = Self::layout(nlocal, ring_size);
        // SAFETY: a new anonymous mapping, owned by the returned segment.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(os_err("(private)", "map"));
        }
        let hp = p as *mut SegHeader;
        // SAFETY: the header is at the start of the (zeroed) mapping, which
        // nothing else uses yet.
        unsafe {
            (*hp).nlocal = nlocal as u32;
            (*hp).ring_size = ring_size as u32;
            (*hp).magic.store(MAGIC, Ordering::Release);
        }
        Ok(Segment { base: p as *mut u8, bytes, nlocal, ring_size })
    }

    /// Attaches to the segment `name` created by local rank 0.
    pub fn attach(name: &str) -> Result<Segment, ShmError> {
        let cname = CString::new(name).unwrap();
        // SAFETY: plain libc call with a valid C string.
        let fd = unsafe { libc::shm_open(cname.as_ptr(), libc::O_RDWR, 0) };
        if fd < 0 {
            return Err(os_err(name, "open"));
        }
        // SAFETY: `stat` is plain old data, for which all zeroes is a value.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is the descriptor shm_open just returned; `st` is ours.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return Err(os_err(name, "stat"));
        }
        let mut seg = Self::map(name, fd, st.st_size as usize)?;
        // SAFETY: header at the start of the mapping.
        let h = unsafe { &*(seg.base as *const SegHeader) };
        if seg.bytes < HEADER_BYTES || h.magic.load(Ordering::Acquire) != MAGIC {
            return Err(ShmError::BadHeader(name.into()));
        }
        let (nlocal, ring_size) = (h.nlocal as usize, h.ring_size as usize);
        if Self::layout(nlocal, ring_size) != seg.bytes {
            return Err(ShmError::BadHeader(name.into()));
        }
        seg.nlocal = nlocal;
        seg.ring_size = ring_size;
        Ok(seg)
    }

    fn map(name: &str, fd: i32, bytes: usize) -> Result<Segment, ShmError> {
        // SAFETY: mapping a shm fd of `bytes` bytes; the fd can be closed after.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), bytes, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
        };
        // SAFETY: fd is ours.
        unsafe { libc::close(fd) };
        if p == libc::MAP_FAILED {
            return Err(os_err(name, "map"));
        }
        Ok(Segment { base: p as *mut u8, bytes, nlocal: 0, ring_size: 0 })
    }

    pub fn unlink(name: &str) {
        let cname = CString::new(name).unwrap();
        // SAFETY: plain libc call.
        unsafe { libc::shm_unlink(cname.as_ptr()) };
    }

    pub fn ctl(&self, local: usize) -> &Ctl {
        assert!(local < self.nlocal);
        // SAFETY: in bounds of the mapping by the layout; Ctl is all atomics.
        unsafe { &*(self.base.add(HEADER_BYTES + local * CTL_BYTES) as *const Ctl) }
    }

    fn ring_base(&self, from: usize, to: usize) -> *mut u8 {
        assert!(from < self.nlocal && to < self.nlocal);
        let slot = from * self.nlocal + to;
        // SAFETY: in bounds by the layout.
        unsafe { self.base.add(HEADER_BYTES + self.nlocal * CTL_BYTES + slot * (RING_CTL_BYTES + self.ring_size)) }
    }

    /// The producer end of the ring `from -> to`. Only local rank `from` may
    /// hold it.
    pub fn producer(&self, from: usize, to: usize) -> Producer {
        let base = self.ring_base(from, to);
        Producer {
            ctl: base as *const RingCtl,
            // SAFETY: `base` starts a ring slot of the live mapping, whose
            // data follows its control block.
            data: unsafe { base.add(RING_CTL_BYTES) },
            size: self.ring_size,
            // SAFETY: `base` starts a ring slot of the live mapping, with an
            // initialized, aligned RingCtl there (atomics shared by both ends).
            head: unsafe { (*(base as *const RingCtl)).head.load(Ordering::Relaxed) },
            tail_cache: 0,
        }
    }

    /// The consumer end of the ring `from -> to`. Only local rank `to` may hold it.
    pub fn consumer(&self, from: usize, to: usize) -> Consumer {
        let base = self.ring_base(from, to);
        Consumer {
            ctl: base as *const RingCtl,
            // SAFETY: `base` starts a ring slot of the live mapping, whose
            // data follows its control block.
            data: unsafe { base.add(RING_CTL_BYTES) },
            size: self.ring_size,
            // SAFETY: `base` starts a ring slot of the live mapping, with an
            // initialized, aligned RingCtl there (atomics shared by both ends).
            tail: unsafe { (*(base as *const RingCtl)).tail.load(Ordering::Relaxed) },
        }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping; no references outlive the segment
        // (rings and ctls are only used while the runtime holds the segment).
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.bytes) };
    }
}

/// Bytes a record with `payload` bytes occupies.
#[inline]
fn rec_len(payload: usize) -> usize {
    (HDR + payload + REC_ALIGN - 1) & !(REC_ALIGN - 1)
}

/// The stamp word at `at` in a ring's data.
///
/// # Safety
/// `data + at` is 8-aligned and inside the ring.
#[inline]
unsafe fn stamp_at<'a>(data: *mut u8, at: usize) -> &'a AtomicU64 {
    // SAFETY: the caller's contract: the word is inside the ring's shared
    // mapping (alive as long as the ring) and aligned for an AtomicU64.
    unsafe { &*(data.add(at) as *const AtomicU64) }
}

/// Writer of one ring.
pub struct Producer {
    ctl: *const RingCtl,
    data: *mut u8,
    size: usize,
    head: u64,
    tail_cache: u64,
}

// SAFETY: a Producer is owned by one runtime, which serializes its use.
unsafe impl Send for Producer {}

impl Producer {
    /// Largest payload a single record may carry.
    pub fn max_payload(&self) -> usize {
        self.size / 2 - HDR
    }

    /// Appends a record whose payload is written by `fill` into a slice of
    /// `payload` bytes. Returns false (writing nothing) if the ring is full.
    #[inline]
    pub fn try_push_with(&mut self, hdr: &MsgHdr, payload: usize, fill: impl FnOnce(&mut [u8])) -> bool {
        debug_assert!(payload <= self.max_payload());
        let rec = rec_len(payload);
        let pos = (self.head as usize) & (self.size - 1);
        let to_end = self.size - pos;
        let need = if to_end < rec { to_end + rec } else { rec };
        // SAFETY: ctl points into the live mapping.
        let ctl = unsafe { &*self.ctl };
        if (self.head - self.tail_cache) as usize + need > self.size {
            self.tail_cache = ctl.tail.load(Ordering::Acquire);
            if (self.head - self.tail_cache) as usize + need > self.size {
                return false;
            }
        }
        let mut at = pos;
        if to_end < rec {
            // SAFETY: `pos` is 64-aligned inside the ring, so a whole header
            // fits before the end; the space is free (checked above).
            unsafe {
                *self.data.add(pos + 8) = kind::WRAP;
                stamp_at(self.data, pos).store(self.head + 1, Ordering::Release);
            }
            self.head += to_end as u64;
            at = 0;
        }
        let mut h = *hdr;
        h.payload = payload as u32;
        // SAFETY: [at, at+rec) is free space of the ring (checked above) and in
        // bounds; the consumer reads it only after seeing the stamp, which is
        // stored last with release ordering.
        unsafe {
            std::ptr::copy_nonoverlapping((&h as *const MsgHdr as *const u8).add(8), self.data.add(at + 8), HDR - 8);
            fill(std::slice::from_raw_parts_mut(self.data.add(at + HDR), payload));
            stamp_at(self.data, at).store(self.head + 1, Ordering::Release);
        }
        self.head += rec as u64;
        true
    }

    #[inline]
    pub fn try_push(&mut self, hdr: &MsgHdr, payload: &[u8]) -> bool {
        self.try_push_with(hdr, payload.len(), |d| d.copy_from_slice(payload))
    }
}

/// The stamp word of the next record of one ring, as seen by its reader at
/// one moment: polling it touches one cache line of the segment and nothing
/// of the runtime, so a waiting rank can look at it between yields of the CPU
/// without taking the runtime's lock. A hint only: once it shows a record,
/// the reader looks at the ring again through its [`Consumer`].
#[derive(Clone, Copy)]
pub struct RingWatch {
    stamp: *const AtomicU64,
    expect: u64,
}

// SAFETY: the word lives in the node segment, mapped until MPI_Finalize; a
// RingWatch is only read (atomically).
unsafe impl Send for RingWatch {}

impl RingWatch {
    /// True once a record (or a wrap marker) was published where the ring's
    /// reader will look next.
    #[inline]
    pub fn ready(&self) -> bool {
        // SAFETY: see the type's Send impl: the word stays mapped while the
        // runtime lives, and callers use a watch only inside an MPI call.
        unsafe { &*self.stamp }.load(Ordering::Acquire) == self.expect
    }
}

/// Reader of one ring.
pub struct Consumer {
    ctl: *const RingCtl,
    data: *mut u8,
    size: usize,
    tail: u64,
}

// SAFETY: a Consumer is owned by one runtime, which serializes its use.
unsafe impl Send for Consumer {}

impl Consumer {
    /// The next record, if any. It stays valid until [`Consumer::pop`].
    #[inline]
    pub fn peek(&mut self) -> Option<(MsgHdr, &[u8])> {
        loop {
            let pos = (self.tail as usize) & (self.size - 1);
            // SAFETY: pos is 64-aligned inside the ring.
            if unsafe { stamp_at(self.data, pos) }.load(Ordering::Acquire) != self.tail + 1 {
                return None;
            }
            // SAFETY: the stamp (acquire) shows a complete record at `pos`;
            // records never straddle the end of the ring.
            unsafe {
                if *self.data.add(pos + 8) == kind::WRAP {
                    self.tail += (self.size - pos) as u64;
                    (*self.ctl).tail.store(self.tail, Ordering::Release);
                    continue;
                }
                let mut h = MsgHdr::default();
                std::ptr::copy_nonoverlapping(self.data.add(pos), &mut h as *mut MsgHdr as *mut u8, HDR);
                let p = std::slice::from_raw_parts(self.data.add(pos + HDR), h.payload as usize);
                return Some((h, p));
            }
        }
    }

    /// Where the next record's stamp will appear, and the value it will
    /// have: a [`RingWatch`] to poll without the runtime (see there).
    #[inline]
    pub fn watch(&self) -> RingWatch {
        let pos = (self.tail as usize) & (self.size - 1);
        // SAFETY: pos is 64-aligned inside the ring.
        RingWatch { stamp: unsafe { stamp_at(self.data, pos) }, expect: self.tail + 1 }
    }

    /// Releases the record returned by the last `peek`.
    #[inline]
    pub fn pop(&mut self, hdr: &MsgHdr) {
        self.tail += rec_len(hdr.payload as usize) as u64;
        // SAFETY: ctl points into the live mapping.
        unsafe { &*self.ctl }.tail.store(self.tail, Ordering::Release);
    }
}

/// Wakes local rank `ctl` if any of its threads sleeps. Call after
/// publishing a record.
///
/// The protocol (see [`sleep`]): a sleeper counts itself in `sleeping` (or
/// `polling`), clears `wake_pending`, reads `seq`, looks for work once more
/// and only then waits for `seq` to change. A sender publishes its record,
/// fences, and if it sees a sleeper and no wake-up pending, bumps `seq` and
/// wakes every sleeper. Each sleeper counts itself, so one thread waking
/// up never hides another that still sleeps.
#[inline]
pub fn notify(ctl: &Ctl) {
    fence(Ordering::SeqCst);
    let f = ctl.sleeping.load(Ordering::Relaxed);
    let p = ctl.polling.load(Ordering::Relaxed);
    if f | p != 0 && ctl.wake_pending.swap(1, Ordering::SeqCst) == 0 {
        if f != 0 {
            wake_futex(ctl);
        }
        if p != 0 {
            WakeSocket::ring(ctl.wake.load(Ordering::Relaxed));
        }
    }
}

/// Wakes the threads of local rank `ctl` that sleep on its futex (not one
/// in `poll`): for a thread of that rank whose wake-up may concern them.
pub fn wake_sleepers(ctl: &Ctl) {
    if ctl.sleeping.load(Ordering::SeqCst) != 0 {
        wake_futex(ctl);
    }
}

/// Moves `seq` on and wakes every thread waiting for it to change.
fn wake_futex(ctl: &Ctl) {
    ctl.seq.fetch_add(1, Ordering::SeqCst);
    futex_wake(&ctl.seq);
}

/// Announces a sleeper (`count` is `sleeping` or `polling`); returns the
/// `seq` value to wait on. Look for work after this, then wait.
pub fn sleep_begin(ctl: &Ctl, count: &AtomicU32) -> u32 {
    count.fetch_add(1, Ordering::SeqCst);
    ctl.wake_pending.store(0, Ordering::SeqCst);
    ctl.seq.load(Ordering::SeqCst)
}

/// Ends what [`sleep_begin`] announced.
pub fn sleep_end(count: &AtomicU32) {
    count.fetch_sub(1, Ordering::SeqCst);
}

/// A rank's wake socket: a datagram socket in the abstract namespace that a
/// rank sleeping in `poll` (because it also waits for TCP traffic) watches
/// beside its TCP sockets; a local sender that finds it asleep sends it one
/// byte. Only ranks of jobs that span hosts have one.
pub struct WakeSocket {
    sock: std::os::unix::net::UnixDatagram,
    id: u64,
}

impl WakeSocket {
    fn addr(id: u64) -> std::io::Result<std::os::unix::net::SocketAddr> {
        use std::os::linux::net::SocketAddrExt;
        std::os::unix::net::SocketAddr::from_abstract_name(format!("mpicore-wake-{id:016x}"))
    }

    /// Binds a new wake socket under a random name.
    pub fn bind() -> std::io::Result<WakeSocket> {
        let id = u64::from_ne_bytes(super::tcp::random_bytes()) | 1;
        let sock = std::os::unix::net::UnixDatagram::bind_addr(&Self::addr(id)?)?;
        sock.set_nonblocking(true)?;
        Ok(WakeSocket { sock, id })
    }

    /// The name to publish in [`Ctl::wake`].
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.sock.as_raw_fd()
    }

    /// Empties the socket after a wake-up.
    pub fn drain(&self) {
        let mut b = [0u8; 64];
        while self.sock.recv(&mut b).is_ok() {}
    }

    /// Wakes the rank whose wake socket is `id` (best effort: a full socket
    /// already holds a wake-up).
    fn ring(id: u64) {
        static SENDER: std::sync::OnceLock<Option<std::os::unix::net::UnixDatagram>> = std::sync::OnceLock::new();
        if id == 0 {
            return;
        }
        let sender = SENDER.get_or_init(|| {
            let s = std::os::unix::net::UnixDatagram::unbound().ok()?;
            s.set_nonblocking(true).ok()?;
            Some(s)
        });
        if let (Some(s), Ok(addr)) = (sender, Self::addr(id)) {
            let _ = s.send_to_addr(&[1], &addr);
        }
    }
}

/// Sleeps until woken by [`notify`] or `timeout_ms` passed, unless `ready`
/// finds work after the thread announced that it sleeps.
pub fn sleep(ctl: &Ctl, timeout_ms: u64, ready: impl FnOnce() -> bool) {
    let seq = sleep_begin(ctl, &ctl.sleeping);
    if !ready() {
        futex_wait(&ctl.seq, seq, timeout_ms);
    }
    sleep_end(&ctl.sleeping);
}

fn futex_wait(word: &AtomicU32, expected: u32, timeout_ms: u64) {
    let ts = libc::timespec {
        tv_sec: (timeout_ms / 1000) as libc::time_t,
        tv_nsec: ((timeout_ms % 1000) * 1_000_000) as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT on a valid, aligned u32 in a shared mapping (no
    // PRIVATE flag: waker and waiter are different processes).
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word as *const AtomicU32,
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            0usize,
            0u32,
        );
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a valid, aligned u32 in a shared mapping.
    unsafe {
        libc::syscall(libc::SYS_futex, word as *const AtomicU32, libc::FUTEX_WAKE, i32::MAX, 0usize, 0usize, 0u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_roundtrip_with_wrap() {
        let name = format!("/mpicore-test-{}", std::process::id());
        std::env::set_var("MPICORE_RING_SIZE", "4096");
        let seg = Segment::create(&name, 2).unwrap();
        std::env::remove_var("MPICORE_RING_SIZE");
        let seg2 = Segment::attach(&name).unwrap();
        Segment::unlink(&name);
        assert_eq!(seg2.ring_size, 4096);
        let mut p = seg.producer(0, 1);
        let mut c = seg2.consumer(0, 1);
        let mut sent = 0u32;
        let mut got = 0u32;
        for round in 0..2000u32 {
            let len = (round as usize * 37) % 700;
            let data: Vec<u8> = (0..len).map(|i| (i as u32 + round) as u8).collect();
            let h = MsgHdr { kind: kind::EAGER, tag: round as i32, len: len as u64, ..Default::default() };
            while !p.try_push(&h, &data) {
                let (hh, payload) = c.peek().unwrap();
                assert_eq!(hh.tag as u32, got);
                assert!(payload.iter().enumerate().all(|(i, b)| *b == (i as u32 + got) as u8));
                c.pop(&hh);
                got += 1;
            }
            sent += 1;
        }
        while let Some((hh, _)) = c.peek() {
            assert_eq!(hh.tag as u32, got);
            c.pop(&hh);
            got += 1;
        }
        assert_eq!(sent, got);
    }
}
