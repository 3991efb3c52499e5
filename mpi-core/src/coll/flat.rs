//! Shared-memory ("flat") collectives for small and medium messages.
//!
//! Every rank of a communicator shares one segment with a slot per rank: a
//! sequence word and data buffers of three sizes (`NTINY` of 128 bytes,
//! `NBUF` of 8 KiB, `NBIG` of 64 KiB). In operation `k` (shared-memory
//! collectives are numbered per communicator, and every rank makes the
//! same calls), a rank writes its data to buffer `k % N` of its slot's
//! buffers of the size the operation needs (`N` of them; up to 112 bytes
//! in the tiny buffer itself), writes its length in tiny buffer
//! `k % NTINY` (the operation's header, whatever the size), stamps that
//! header `k + 1` and publishes `seq = k + 1` (a rank with no data,
//! like a broadcast's reader, only publishes `seq`); the others wait for the
//! stamp (or `seq`) and read the data in place. A rank overwrites a buffer
//! only when every rank has finished the operation that used it last, so a
//! root may run many broadcasts ahead of slow readers. One round of memory
//! writes and reads replaces `log2(size)` rounds of messages, and with more
//! ranks than cores each rank needs to be scheduled only once or twice per
//! operation. Reductions combine the slots in rank order on every rank, so
//! the results are identical everywhere and right for non-commutative
//! operations.
//!
//! Nonblocking calls ([`NbOp`]) take their operation number when they
//! start and then advance with the library's progress: each rank publishes
//! its operations in order (a later blocking call waits for earlier
//! nonblocking ones to publish), and publishes operation `j` only once its
//! own operations up to `j - WINDOW` have finished reading, so a rank that
//! published `k - N + WINDOW` is done with buffer `k % N`.
//!
//! The segment has two lanes, each a full set of slots with its own
//! operation numbers: one for blocking calls, one for nonblocking and
//! persistent ones. Blocking calls then never meet nonblocking ones, as
//! their messages do not either (they draw tags from two counters, see
//! `Colls::next_tag`): a program that starts a nonblocking collective and
//! enters a blocking one while another rank does the two the other way
//! round (erroneous, but MPICH completes it, and mpi4py's fallback for
//! `Comm.Iagree` relies on it) completes. Within a lane every rank still
//! makes the same calls in the same order.
//!
//! The segment of a communicator is made at its first eligible blocking
//! call (a collective step itself: rank 0 creates it, a `memfd` with no
//! name in /dev/shm, the others map it through /proc, all agree it worked,
//! rank 0 closes its descriptor); nonblocking calls before that use
//! messages. `MPICORE_COLL_SHM_MAX` (bytes per rank, default and
//! at most 64 KiB; 0 turns this off) sets the largest message done this
//! way; up to 8 KiB use the small buffers, larger ones the large buffers.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use mpi_api::abi::*;

use crate::bail;
use crate::rt::error::MpiResult;
use crate::rt::shm::Ctl;
use crate::rt::{self, State};

/// Bytes of one data buffer.
pub const SLOT: usize = 8 << 10;
/// Bytes of one large data buffer (for messages above `SLOT`).
pub const BIG: usize = 64 << 10;
/// Large buffers per rank (more than `WINDOW`, see [`Flat::free_seq`]).
const NBIG: u64 = 16;
/// Bytes of data a tiny buffer holds after its stamp and length words.
const TINY: usize = TLINE - DATA;
/// Bytes of a tiny buffer: two cache lines (an 8-byte Alltoall of 8 ranks
/// fits).
const TLINE: usize = 128;
/// Tiny buffers per rank, used in turn by every operation: they hold the
/// stamp and length words of each operation (see [`Flat::head`]) and the
/// data of those of at most `TINY` bytes per rank (barriers, small
/// broadcasts and reductions). Many, so that a root runs far ahead of slow
/// readers (with more ranks than cores, the readers then take hundreds of
/// broadcasts per time slice), and adjacent, so that a reader behind the
/// root reads them as a stream (the CPU fetches the next lines ahead)
/// through few pages.
const NTINY: u64 = 1024;
/// Bytes of a large buffer (data at `DATA`, as in every buffer).
const BIGBUF: usize = BIG + 64;
/// Data buffers per rank for messages above `TINY` bytes, used in turn (a
/// root may run `NBUF - WINDOW` broadcasts ahead of the slowest reader).
/// Only the pages touched become memory.
const NBUF: u64 = 64;
/// A rank publishes operation `j` only when its own operations up to
/// `j - WINDOW` have finished (nonblocking ones may be outstanding).
const WINDOW: u64 = 8;
/// Bytes of a slot's header: the sequence word and, with more ranks than
/// cores, the CPU the rank last ran on (see [`Flat::cpu_word`]), written
/// together, on a cache line of their own.
const HDR: usize = 64;
/// Bytes of a small buffer (data at `DATA`, as in every buffer: the first
/// 16 bytes hold a tiny buffer's stamp word (operation number + 1, once
/// the data is there) and length word, and are unused in the others).
const BUF: usize = SLOT + 64;
/// Offset of the data in a buffer (16-aligned for every type).
const DATA: usize = 16;
/// Segments one process keeps at most (one per communicator).
const MAX_SEGS: usize = 32;

/// The sequence of operations a collective call belongs to (see the
/// module's documentation).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Lane {
    /// Blocking calls.
    Block = 0,
    /// Nonblocking and persistent calls.
    Nb = 1,
}

/// What a communicator has for shared-memory collectives.
pub struct Entry {
    /// The communicator (to notice when it is freed).
    comm: MPI_Comm,
    /// Its segment's lanes (indexed by [`Lane`]); None: the communicator
    /// uses messages only.
    seg: Option<[Seg; 2]>,
    /// The first nonblocking operation that uses the segment: the most any
    /// rank had started when it was made (see [`nb_op`]).
    nb_from: u64,
}

/// The mapped segment of a communicator.
pub struct Seg {
    /// Number of the next operation.
    next: u64,
    sh: Arc<Shared>,
}

impl Seg {
    /// Takes the next operation, this rank's part of it using buffers of
    /// `kind`.
    fn take(&mut self, rank: usize, size: usize, kind: Kind, oversub: bool) -> Flat {
        let k = self.next;
        self.next += 1;
        Flat { base: self.sh.base, k, rank, size, kind, oversub, sh: self.sh.clone() }
    }
}

/// A lane of a segment and what this rank keeps of it, shared by the
/// operations on it: the mapping stays until the last one ends, even when
/// the communicator is freed while a nonblocking one runs.
pub struct Shared {
    base: *mut u8,
    /// Bytes mapped at `base` (the blocking lane, which owns the mapping);
    /// 0: the other lane, which keeps the owner alive instead.
    len: usize,
    _owner: Option<Arc<Shared>>,
    /// Which lane it is (`Lane as u8`).
    lane: u8,
    /// Control blocks of the other ranks (for waking them).
    wake: Vec<CtlPtr>,
    /// The communicator's collective context (its waits end when it is
    /// revoked, see `rt::ulfm`).
    ctx: u32,
    /// The lowest sequence word of all ranks seen so far.
    seen: AtomicU64,
    /// This rank's unfinished nonblocking operations.
    gate: Gate,
}

// SAFETY: the mapping is shared memory meant for concurrent use; its
// words are atomics, its data is written by one operation at a time.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

/// The numbers of a rank's unfinished nonblocking operations on a segment.
#[derive(Default)]
pub struct Gate {
    open: std::sync::Mutex<Vec<u64>>,
    /// The lowest of them (u64::MAX: none), read without the lock.
    low: AtomicU64,
}

impl Gate {
    fn set(&self, f: impl FnOnce(&mut Vec<u64>)) {
        let mut v = self.open.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut v);
        self.low.store(v.iter().copied().min().unwrap_or(u64::MAX), Ordering::Release);
    }

    /// Whether operation `k` may be published.
    fn allows(&self, k: u64) -> bool {
        self.low.load(Ordering::Acquire).saturating_add(WINDOW) > k
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: base/len is our mapping (the other lane holds this
            // one until it goes).
            unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
        }
    }
}

/// The control block of another rank of the node (in the node segment).
#[derive(Clone, Copy)]
pub struct CtlPtr(*const Ctl);

// SAFETY: a pointer into the node segment, shared by design between
// processes; used only to wake that rank.
unsafe impl Send for CtlPtr {}
// SAFETY: as above.
unsafe impl Sync for CtlPtr {}

/// Asks for the cache line at `p` in a state that can be written (x86
/// `prefetchw`; elsewhere nothing).
#[inline(always)]
fn prefetch_write(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and changes no memory (CPUs without
    // `prefetchw` run it as a no-op).
    unsafe {
        std::arch::asm!("prefetchw [{0}]", in(reg) p, options(nostack, readonly, preserves_flags));
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A length a rank publishes when its arguments are bad (no data, and
/// nothing as messages either).
pub const BAD_LEN: usize = LEN_MASK as usize;

/// Where a length word keeps the kind of buffer the data is in.
const KIND_SHIFT: u32 = 56;
/// The bytes of a length word.
const LEN_MASK: u64 = (1 << KIND_SHIFT) - 1;

/// Offset of the first tiny buffer in a slot.
const TINY_AT: usize = HDR;
/// Offset of the first small buffer in a slot.
const SMALL_AT: usize = TINY_AT + NTINY as usize * TLINE;
/// Offset of the first large buffer in a slot.
const BIG_AT: usize = SMALL_AT + NBUF as usize * BUF;

fn stride() -> usize {
    BIG_AT + NBIG as usize * BIGBUF
}

/// Which of a slot's buffers an operation uses (every rank picks the same:
/// it depends on the bytes per rank, which agree between ranks).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u64)]
enum Kind {
    /// Up to `TINY` bytes: in the header's two cache lines.
    Tiny,
    /// Up to `SLOT` bytes.
    Small,
    /// Up to `BIG` bytes.
    Big,
    /// More than the segment takes: the data goes as messages, and the
    /// operation only carries the rank's length in its header (see
    /// [`guard`]).
    Msg,
}

impl Kind {
    fn of(bytes: usize) -> Kind {
        if bytes > SLOT {
            Kind::Big
        } else if bytes <= TINY {
            Kind::Tiny
        } else {
            Kind::Small
        }
    }

    /// Offset in a slot of the buffer of operation `k`.
    fn offset(self, k: u64) -> usize {
        match self {
            Kind::Tiny | Kind::Msg => TINY_AT + (k % NTINY) as usize * TLINE,
            Kind::Small => SMALL_AT + (k % NBUF) as usize * BUF,
            Kind::Big => BIG_AT + (k % NBIG) as usize * BIGBUF,
        }
    }

    /// The kind's bits in a length word.
    fn word(self) -> u64 {
        (self as u64) << KIND_SHIFT
    }

    /// The kind a length word names.
    fn from_word(w: u64) -> Kind {
        match w >> KIND_SHIFT {
            0 => Kind::Tiny,
            1 => Kind::Small,
            2 => Kind::Big,
            _ => Kind::Msg,
        }
    }

    /// Buffers of this kind per rank.
    fn count(self) -> u64 {
        match self {
            Kind::Tiny | Kind::Msg => NTINY,
            Kind::Small => NBUF,
            Kind::Big => NBIG,
        }
    }
}

/// One flat operation in progress: operation number `k` on a segment.
pub struct Flat {
    base: *mut u8,
    k: u64,
    pub rank: usize,
    pub size: usize,
    /// The buffers it uses.
    kind: Kind,
    /// More ranks than cores: never poll without yielding.
    oversub: bool,
    /// The segment (the ranks' control blocks, to wake them if they sleep;
    /// what was seen, see [`Flat::wait_free`]; the unfinished operations).
    sh: Arc<Shared>,
}

impl Flat {
    fn seq(&self, r: usize) -> &AtomicU64 {
        // SAFETY: slot r's header lies in the mapping, 8-aligned (page-
        // aligned base, stride a multiple of 64), shared between processes.
        unsafe { &*(self.base.add(r * stride()) as *const AtomicU64) }
    }

    /// The CPU rank `r` last ran on, plus one (0: not known), kept with
    /// more ranks than cores only: when it publishes and when it comes
    /// back from yielding while waiting.
    fn cpu_word(&self, r: usize) -> &AtomicU64 {
        // SAFETY: the word after the sequence word in slot r's header.
        unsafe { &*(self.base.add(r * stride() + 8) as *const AtomicU64) }
    }

    /// Records the CPU this rank runs on in its header (with more ranks
    /// than cores) and returns it, plus one.
    fn note_cpu(&self) -> u64 {
        if !self.oversub {
            return 0;
        }
        // SAFETY: plain call (glibc reads it from the rseq area).
        let cpu = unsafe { libc::sched_getcpu() };
        let c = if cpu < 0 { 0 } else { cpu as u64 + 1 };
        let w = self.cpu_word(self.rank);
        if w.load(Ordering::Relaxed) != c {
            w.store(c, Ordering::Relaxed);
        }
        c
    }

    /// With more ranks than cores, now and then: if this rank's CPU (`cpu`,
    /// plus one) holds more ranks of the communicator than another CPU it
    /// may run on plus one, the highest of them moves to the CPU with the
    /// fewest (and may then run anywhere again, as before). The kernel
    /// rarely moves a task that ran in the last half millisecond, which
    /// ranks taking turns on a CPU always did: 4 ranks on 2 CPUs stayed 3
    /// and 1 for whole runs, and every collective waited for the CPU with
    /// 3. A process moves at most once in 10 ms (another program may hold
    /// a CPU, and the kernel move the rank back).
    fn balance(&self, cpu: u64) {
        static CALLS: AtomicU64 = AtomicU64::new(0);
        static MOVED: AtomicU64 = AtomicU64::new(0);
        if cpu == 0 || !CALLS.fetch_add(1, Ordering::Relaxed).is_multiple_of(64) {
            return;
        }
        let now = (rt::wtime() * 1e3) as u64 + 1000;
        if now < MOVED.load(Ordering::Relaxed) + 10 {
            return;
        }
        let words: Vec<u64> = (0..self.size).map(|r| self.cpu_word(r).load(Ordering::Relaxed)).collect();
        let mine = words.iter().filter(|&&c| c == cpu).count();
        if words.contains(&0) || mine < 3 || (self.rank + 1..self.size).any(|r| words[r] == cpu) {
            return;
        }
        // SAFETY: sched_getaffinity/setaffinity of this thread with
        // zero-initialized cpu_set_t values.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return;
            }
            let fewest = (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .map(|c| (words.iter().filter(|&&w| w == c as u64 + 1).count(), c))
                .min();
            let Some((n, to)) = fewest else { return };
            if n + 1 >= mine {
                return;
            }
            MOVED.store(now, Ordering::Relaxed);
            let mut one: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(to, &mut one);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one) == 0 {
                // Widening the mask again leaves the thread where it is.
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            }
        }
        self.note_cpu();
    }

    /// Rank `r`'s header of this operation: its tiny buffer, whatever
    /// buffers the data uses, with the stamp and length words. Every rank
    /// looks for the others' data here, so ranks whose counts disagree (and
    /// so may pick buffers of different kinds) still see each other's
    /// lengths, and fail instead of waiting forever.
    fn head(&self, r: usize) -> *mut u8 {
        let off = Kind::Tiny.offset(self.k);
        // SAFETY: the arithmetic stays within the mapping (rank `r`'s stride).
        unsafe { self.base.add(r * stride() + off) }
    }

    /// Data of rank `r` for this operation: in this rank's own buffer of
    /// the operation's kind, or where rank `r` said it wrote it (once it
    /// published).
    pub fn buf(&self, r: usize) -> *mut u8 {
        let kind = if r == self.rank { self.kind } else { Kind::from_word(self.len_word(r).load(Ordering::Relaxed)) };
        let off = kind.offset(self.k) + DATA;
        self.base.wrapping_add(r * stride() + off)
    }

    /// The stamp word of rank `r`'s header of this operation.
    fn stamp(&self, r: usize) -> &AtomicU64 {
        // SAFETY: 64-aligned within the mapping (HDR, BUF and the stride
        // are multiples of 64), shared between processes.
        unsafe { &*(self.head(r) as *const AtomicU64) }
    }

    /// The length word of rank `r`'s header of this operation: the bytes
    /// and, in the top bits, the kind of buffer they are in.
    fn len_word(&self, r: usize) -> &AtomicU64 {
        // SAFETY: as in `stamp`, the word after it.
        unsafe { &*(self.head(r).add(8) as *const AtomicU64) }
    }

    /// Waits until ranks `ranks` have published operation `seq - 1`: a
    /// short poll of the shared words (with more ranks than cores: 50 us of
    /// yielding), then the library's wait loop (which drives other traffic,
    /// and sleeps until woken when the wait is long).
    fn wait(&self, ranks: std::ops::Range<usize>, seq: u64) -> MpiResult<()> {
        self.wait_on(ranks, |r| self.seq(r), seq)
    }

    /// Waits until `word(r)` reaches `at_least` for every rank of `ranks`
    /// (see [`Flat::wait`]).
    #[inline]
    fn wait_on<'a>(
        &'a self,
        ranks: std::ops::Range<usize>,
        word: impl Fn(usize) -> &'a AtomicU64,
        at_least: u64,
    ) -> MpiResult<()> {
        let ready = || ranks.clone().all(|r| word(r).load(Ordering::Acquire) >= at_least);
        if ready() {
            return Ok(());
        }
        let words = || Awaited { words: ranks.clone().map(|r| word(r) as *const AtomicU64).collect(), at_least };
        // Whether a rank still awaited last ran on CPU `cpu` (or its CPU is
        // not known).
        let here = |cpu: u64| {
            ranks.clone().any(|r| {
                word(r).load(Ordering::Relaxed) < at_least && {
                    let c = self.cpu_word(r).load(Ordering::Relaxed);
                    c == 0 || c == cpu
                }
            })
        };
        self.wait_long(&ready, &here, &words)
    }

    /// [`Flat::wait_on`] once the words were not there at the first look
    /// (kept out of line: the first look is most of the calls). `here`:
    /// whether a rank awaited may be waiting for this rank's CPU (see
    /// `wait_on`); `words`: the same condition for the library's wait loop.
    #[inline(never)]
    fn wait_long(
        &self,
        ready: &dyn Fn() -> bool,
        here: &dyn Fn(u64) -> bool,
        words: &dyn Fn() -> Awaited,
    ) -> MpiResult<()> {
        if !self.oversub {
            // Poll for up to 50 us; the library's loop polls with the lock
            // and its progress in each round, which reacts later.
            let t0 = std::time::Instant::now();
            loop {
                for _ in 0..256 {
                    std::hint::spin_loop();
                    if ready() {
                        return Ok(());
                    }
                }
                if t0.elapsed() > std::time::Duration::from_micros(50) {
                    break;
                }
            }
        } else {
            // Give the core to a rank that has work, straight away, when one
            // of the ranks awaited last ran on this CPU: it cannot run while
            // this rank polls. When all of them ran on other CPUs, they are
            // running there or next in line, and every rank of this CPU that
            // takes part has arrived: poll, as switching to another rank
            // (about 1.5 us) would only find it waiting too, and delay
            // seeing the words. Polling goes on for at most `SPIN` in one
            // stretch (a few switches' time, as at 8 ranks on 2 cores the
            // other CPU may switch 3 times before the last rank arrives),
            // in case the CPU words are stale (a rank moved) or another
            // program holds the other CPU.
            const SPIN: std::time::Duration = std::time::Duration::from_micros(4);
            let t0 = std::time::Instant::now();
            let mut cpu = self.note_cpu();
            self.balance(cpu);
            let mut spun = t0;
            while t0.elapsed() < std::time::Duration::from_micros(50) {
                if cpu == 0 || here(cpu) || spun.elapsed() > SPIN {
                    // SAFETY: plain syscall.
                    unsafe { libc::sched_yield() };
                    cpu = self.note_cpu();
                    spun = std::time::Instant::now();
                } else {
                    // A look after each pause (about 30 ns on this
                    // project's test machines, and 32 of them between two
                    // looks at the words made the one who polls see the
                    // last arrival 0.5 us late on average).
                    for _ in 0..32 {
                        std::hint::spin_loop();
                        if ready() {
                            return Ok(());
                        }
                    }
                }
                if ready() {
                    return Ok(());
                }
            }
        }
        // The library's wait loop, which drives other traffic and sleeps
        // when the wait is long: it must see these words as progress (see
        // `coll::progress`) so that it does not sleep through them.
        let id = rt::with(|st| Ok(st.coll.await_words(words())))?;
        let r = self.wait_or_revoked(ready);
        let _ = rt::with(|st| {
            st.coll.unawait(id);
            Ok(())
        });
        r
    }

    /// The sequence word every rank must have reached before this rank
    /// overwrites its buffer: each has published operation
    /// `k - n + WINDOW`, so it has finished operation `k - n`, the last that
    /// may have used the buffer (`n` buffers of this kind).
    fn free_seq(&self) -> u64 {
        (self.k + 1).saturating_sub(self.kind.count() - WINDOW)
    }

    /// Whether this rank may overwrite its buffer now. What was seen of the
    /// others is kept, so a rank running ahead (a root of many broadcasts)
    /// reads the others' words once in many operations, not at each.
    fn free_now(&self) -> bool {
        let need = self.free_seq();
        if self.sh.seen.load(Ordering::Relaxed) >= need {
            return true;
        }
        let min = (0..self.size).map(|r| self.seq(r).load(Ordering::Acquire)).min().unwrap_or(need);
        self.sh.seen.fetch_max(min, Ordering::Relaxed);
        min >= need
    }

    /// Waits until this rank may overwrite its buffer.
    pub fn wait_free(&self) -> MpiResult<()> {
        if self.free_now() {
            return Ok(());
        }
        self.wait(0..self.size, self.free_seq())?;
        self.free_now();
        Ok(())
    }

    /// Whether this rank may publish this operation: it has published the
    /// ones before, and finished those up to `k - WINDOW`.
    fn turn(&self) -> bool {
        self.seq(self.rank).load(Ordering::Relaxed) == self.k && self.sh.gate.allows(self.k)
    }

    /// Waits (driving the nonblocking operations before it) until this
    /// rank may publish this operation.
    pub fn wait_turn(&self) -> MpiResult<()> {
        if self.turn() {
            return Ok(());
        }
        self.wait_or_revoked(&|| self.turn())
    }

    /// The library's wait loop until `ready`, or until the communicator is
    /// revoked or a member fails (`MPIX_ERR_REVOKED`, `MPIX_ERR_PROC_FAILED`:
    /// its other ranks may never come).
    fn wait_or_revoked(&self, ready: &dyn Fn() -> bool) -> MpiResult<()> {
        let ctx = self.sh.ctx;
        let mut fault = None;
        rt::wait_until(|st| {
            fault = rt::ulfm::ctx_fault(st, ctx);
            fault.is_some() || ready()
        })?;
        match fault {
            Some(e) if !ready() => Err(e),
            _ => Ok(()),
        }
    }

    /// Whether ranks `ranks` have published this operation (`data`: with
    /// data, looking at their buffers' stamps).
    fn published(&self, ranks: std::ops::Range<usize>, data: bool) -> bool {
        let word = |r| if data { self.stamp(r) } else { self.seq(r) };
        ranks.into_iter().all(|r| word(r).load(Ordering::Acquire) > self.k)
    }

    /// Bytes rank `r` published for this operation (after [`Flat::wait_data`]).
    pub fn len_of(&self, r: usize) -> usize {
        (self.len_word(r).load(Ordering::Relaxed) & LEN_MASK) as usize
    }

    /// Fails unless ranks `ranks` published `bytes` bytes each (the counts
    /// and types of the ranks do not match otherwise).
    #[inline]
    pub fn check_len(&self, mut ranks: std::ops::Range<usize>, bytes: usize) -> MpiResult<()> {
        match ranks.find(|&r| self.len_of(r) != bytes) {
            None => Ok(()),
            Some(r) => self.len_error(r, bytes),
        }
    }

    #[cold]
    #[inline(never)]
    fn len_error(&self, r: usize, bytes: usize) -> MpiResult<()> {
        let l = self.len_of(r);
        bail!(MPI_ERR_TRUNCATE, "rank {r} of the collective gave {l} bytes where this rank expects {bytes}: counts or types differ between ranks, or the ranks called different collectives (in different orders on this communicator)")
    }

    /// Announces this rank's data of `bytes` bytes (after [`Flat::wait_free`]
    /// and writing it), or with None only its arrival: then the length word
    /// is not touched, as its buffer may still be read by a slower rank.
    pub fn publish(&self, bytes: Option<usize>) {
        if let Some(b) = bytes {
            self.len_word(self.rank).store(b as u64 | self.kind.word(), Ordering::Relaxed);
            self.stamp(self.rank).store(self.k + 1, Ordering::Release);
        }
        self.note_cpu();
        self.seq(self.rank).store(self.k + 1, Ordering::Release);
        // One fence for all ranks (a waiter announces its sleep, then looks
        // at the words again; see `shm::sleep_begin`), then wake only those
        // that sleep (`notify` fences again, which only they pay for).
        std::sync::atomic::fence(Ordering::SeqCst);
        for c in self.sh.wake.iter() {
            // SAFETY: control blocks of the node segment, mapped until
            // finalize (which cannot run during this call).
            let ctl = unsafe { &*c.0 };
            if ctl.sleeping.load(Ordering::Relaxed) | ctl.polling.load(Ordering::Relaxed) != 0 {
                crate::rt::shm::notify(ctl);
            }
        }
        // The line this rank writes first in its next operation (of the
        // same kind, most likely) was last read by the others: take it back
        // now, while this operation waits, so the next write (and the fence
        // above) does not wait for the other cores to give it up.
        let next = Kind::Tiny.offset(self.k + 1);
        prefetch_write(self.base.wrapping_add(self.rank * stride() + next));
    }

    /// The tag of the messages an operation of the segment sends (blocks
    /// too large for it): made from the operation number, which every rank
    /// knows, above the tags schedules draw (up to 0x3fff_ffff).
    pub fn msg_tag(&self) -> i32 {
        0x4000_0000 | (self.sh.lane as i32) << 29 | (self.k & 0x1fff_ffff) as i32
    }

    /// Makes this rank's part of the operation carry only its length in
    /// the header: its data goes as messages (kind `Msg`, as in [`guard`]).
    pub fn by_message(&mut self) {
        self.kind = Kind::Msg;
    }

    /// Whether rank `r` published only its length, its data going as
    /// messages (after [`Flat::wait_data`]).
    pub fn sent_by_message(&self, r: usize) -> bool {
        Kind::from_word(self.len_word(r).load(Ordering::Relaxed)) == Kind::Msg
    }

    /// The operation of [`guard`]: publishes this rank's `bytes` and waits
    /// for every rank's arrival; fails with `MPI_ERR_TRUNCATE` (then this
    /// rank must send nothing) if a rank published other bytes, or none (a
    /// broadcast's reader in the segment).
    pub fn guard_check(&self, bytes: usize) -> MpiResult<()> {
        self.wait_turn()?;
        self.wait_free()?;
        self.publish(Some(bytes));
        self.wait_all_len(bytes)
    }

    /// Waits for every rank's arrival in this operation (after publishing
    /// `bytes`); fails with `MPI_ERR_TRUNCATE` if a rank published other
    /// bytes, or none: such a rank took another path with its arguments
    /// (a broadcast's reader in the segment publishes no data), so the
    /// counts or types of the ranks differ. Every rank that calls this sees
    /// the same words, and so the same outcome.
    pub fn wait_all_len(&self, bytes: usize) -> MpiResult<()> {
        self.wait_for(0..self.size)?;
        self.check_all_len(bytes)
    }

    /// [`Flat::wait_all_len`] once every rank has arrived.
    pub fn check_all_len(&self, bytes: usize) -> MpiResult<()> {
        match (0..self.size).find(|&r| self.stamp(r).load(Ordering::Acquire) <= self.k) {
            Some(r) => bail!(MPI_ERR_TRUNCATE, "rank {r} of the collective took another path with its arguments than this rank with {bytes} bytes: counts or types differ between ranks, or the ranks called different collectives (in different orders on this communicator)"),
            None => self.check_len(0..self.size, bytes),
        }
    }

    /// Waits until ranks `ranks` have published this operation (their
    /// arrival, or data).
    pub fn wait_for(&self, ranks: std::ops::Range<usize>) -> MpiResult<()> {
        self.wait(ranks, self.k + 1)
    }

    /// Waits until ranks `ranks` have published their data of this
    /// operation (only their buffers' cache lines are read).
    pub fn wait_data(&self, ranks: std::ops::Range<usize>) -> MpiResult<()> {
        self.wait_on(ranks, |r| self.stamp(r), self.k + 1)
    }
}

/// This rank's part of one kind of nonblocking operation in shared memory.
pub trait NbKind: Send {
    /// A copy (a persistent operation's part, for each start).
    fn clone_box(&self) -> Box<dyn NbKind>;
    /// Whether [`NbKind::write`] publishes data (then the buffer must be
    /// free first).
    fn data(&self) -> bool;
    /// Writes this rank's data into its buffer; the bytes to publish, or
    /// None: only the arrival.
    ///
    /// # Safety
    /// The user buffers given when the operation started are still lent.
    unsafe fn write(&mut self, f: &Flat) -> Option<usize>;
    /// The ranks whose data this rank reads.
    fn peers(&self, f: &Flat) -> std::ops::Range<usize>;
    /// Whether the ranks of [`NbKind::peers`] publish data (else only their
    /// arrival is waited for).
    fn peers_have_data(&self) -> bool {
        true
    }
    /// Reads, once every rank of [`NbKind::peers`] has published.
    ///
    /// # Safety
    /// As for `write`.
    unsafe fn read(&mut self, f: &Flat) -> MpiResult<()>;
}

/// A nonblocking operation in shared memory, advanced by progress.
pub struct NbOp {
    f: Flat,
    kind: Box<dyn NbKind>,
    published: bool,
    res: MpiResult<()>,
}

// SAFETY: the segment pointer is shared memory kept mapped by the
// operation's own reference to the segment; used under the runtime lock
// only.
unsafe impl Send for NbOp {}

impl NbOp {
    /// Operation `f` of this rank, doing `kind`.
    pub fn new(f: Flat, kind: Box<dyn NbKind>) -> NbOp {
        f.sh.gate.set(|v| v.push(f.k));
        NbOp { f, kind, published: false, res: Ok(()) }
    }

    /// Does what can be done now; true when complete.
    pub fn advance(&mut self) -> bool {
        if !self.published {
            if !self.f.turn() || (self.kind.data() && !self.f.free_now()) {
                return false;
            }
            // SAFETY: the operation's buffers are lent until it completes.
            let bytes = unsafe { self.kind.write(&self.f) };
            self.f.publish(bytes);
            self.published = true;
        }
        if !self.f.published(self.kind.peers(&self.f), self.kind.peers_have_data()) {
            return false;
        }
        // SAFETY: as above.
        self.res = unsafe { self.kind.read(&self.f) };
        let k = self.f.k;
        self.f.sh.gate.set(|v| v.retain(|&x| x != k));
        true
    }

    /// The outcome, once complete.
    pub fn result(&self) -> MpiResult<()> {
        self.res.clone()
    }

    /// Whether this rank has published its part.
    pub fn has_published(&self) -> bool {
        self.published
    }
}

/// What a blocking operation waits for: every word at least `at_least`.
/// The words lie in a segment the waiting operation keeps mapped until it
/// withdraws this ([`super::Colls::unawait`]).
pub struct Awaited {
    words: Vec<*const AtomicU64>,
    at_least: u64,
}

// SAFETY: pointers into a shared mapping that outlives the registration;
// only read atomically.
unsafe impl Send for Awaited {}

impl Awaited {
    pub fn ready(&self) -> bool {
        // SAFETY: see the type; the words are mapped while registered.
        self.words.iter().all(|&w| unsafe { &*w }.load(Ordering::Acquire) >= self.at_least)
    }
}

/// What [`lookup`] found for a communicator.
pub enum Lookup {
    /// The next operation on its segment.
    Ready(Flat),
    /// Use messages (one rank, message too large, no segment).
    No,
    /// No segment yet: make one (collectively) with [`create`], [`open`]
    /// and [`install`], then look again.
    Setup { ctx: u32, rank: usize, size: usize, room: bool },
}

/// Whether a message of `bytes` per rank fits in shared memory: Some(true)
/// in the large buffers, Some(false) in the small ones.
pub fn fits(t: &super::Tune, bytes: usize) -> Option<bool> {
    if t.shm_max == 0 || bytes > t.shm_max.min(BIG) {
        return None;
    }
    Some(bytes > SLOT)
}

/// Takes the next operation of lane `lane` of `comm`'s segment for a
/// message of `bytes` per rank.
pub fn lookup(st: &mut State, comm: MPI_Comm, lane: Lane, bytes: usize) -> MpiResult<Lookup> {
    let c = st.comms.get(comm)?;
    if c.is_inter() {
        return Ok(Lookup::No);
    }
    let (ctx, rank, size) = (c.coll_ctx(), c.rank as usize, c.size() as usize);
    lookup_in(st, comm, lane, ctx, rank, size, bytes)
}

/// [`lookup`] for intracommunicator `comm` whose collective context, rank
/// and size the caller has looked up already.
#[allow(clippy::too_many_arguments)]
pub fn lookup_in(
    st: &mut State,
    comm: MPI_Comm,
    lane: Lane,
    ctx: u32,
    rank: usize,
    size: usize,
    bytes: usize,
) -> MpiResult<Lookup> {
    if fits(&st.coll.tune, bytes).is_none() || size < 2 {
        return Ok(Lookup::No);
    }
    let oversub = st.oversubscribed;
    // The common case first: one look at the map.
    match st.coll.flat.get_mut(&ctx).map(|e| &mut e.seg) {
        Some(Some(seg)) => return Ok(Lookup::Ready(seg[lane as usize].take(rank, size, Kind::of(bytes), oversub))),
        Some(None) => return Ok(Lookup::No),
        None => {}
    }
    if st.comms.get(comm)?.group.iter().any(|&w| st.engine.is_remote(w)) {
        // Shared memory only joins ranks of one node (every member sees
        // the same): this communicator uses messages.
        st.coll.flat.insert(ctx, Entry { comm, seg: None, nb_from: 0 });
        return Ok(Lookup::No);
    }
    forget_freed(st);
    Ok(Lookup::Setup { ctx, rank, size, room: st.coll.flat.values().filter(|e| e.seg.is_some()).count() < MAX_SEGS })
}

/// For a blocking collective whose `bytes` per rank are too many for the
/// segment of `comm` (which it has): an operation of the segment that only
/// carries this rank's length, before the messages. Counts that disagree
/// across the segment's limit would otherwise hang, the ranks above it
/// sending messages that the ranks below never take, and the ones below
/// waiting in the segment for data that never comes: with this operation
/// every rank takes the same operation number, and the ranks below see the
/// others' lengths where they look for their data. A rank above the limit
/// waits for every rank's header ([`Flat::guard_check`]) before its first
/// message, so all ranks above see a mismatch before any of them sends.
/// None: `comm` has no segment (or it is an intercommunicator, or one
/// rank): there is nothing to disagree with.
pub fn guard(st: &mut State, comm: MPI_Comm, lane: Lane, bytes: usize) -> MpiResult<Option<Flat>> {
    let t = &st.coll.tune;
    if t.shm_max == 0 || bytes <= t.shm_max.min(BIG) {
        return Ok(None);
    }
    let c = st.comms.get(comm)?;
    let (ctx, rank, size) = (c.coll_ctx(), c.rank as usize, c.size() as usize);
    if c.is_inter() || size < 2 {
        return Ok(None);
    }
    let oversub = st.oversubscribed;
    Ok(match st.coll.flat.get_mut(&ctx).map(|e| &mut e.seg) {
        Some(Some(seg)) => Some(seg[lane as usize].take(rank, size, Kind::Msg, oversub)),
        _ => None,
    })
}

/// Unmaps the segments of communicators freed since (a handle that no
/// longer names a communicator with that context: context ids are never
/// reused). Called when a segment is about to be made, so a program that
/// makes and frees communicators keeps at most the live ones mapped.
/// Unmapping is safe while other ranks still use the segment: each has its
/// own mapping, and none reads this rank's slot after the communicator is
/// freed (every collective on it has completed).
fn forget_freed(st: &mut State) {
    let comms = &st.comms;
    st.coll.flat.retain(|&ctx, e| comms.get(e.comm).is_ok_and(|c| c.coll_ctx() == ctx));
}

/// Bytes of the segment of a communicator of `size` ranks (two lanes).
pub fn seg_len(size: usize) -> usize {
    2 * size * stride()
}

/// Counts a nonblocking collective (or a start of a persistent one) on
/// `comm` that may run in shared memory, and says whether it may use the
/// segment's nonblocking lane: the communicator has its segment, and no
/// rank had started this operation when the segment was made. (The segment
/// is made in a blocking call, which a rank may reach before or after a
/// nonblocking one that another rank started first: every rank counts the
/// same operations, and those below the count agreed at the making, some
/// rank ran with messages, so all do.)
pub fn nb_op(st: &mut State, comm: MPI_Comm) -> MpiResult<bool> {
    let ctx = st.comms.get(comm)?.coll_ctx();
    let n = st.coll.nb_ops.entry(ctx).or_insert(0);
    let j = *n;
    *n += 1;
    Ok(st.coll.flat.get(&ctx).is_some_and(|e| e.seg.is_some() && j >= e.nb_from))
}

/// How many operations [`nb_op`] has counted on context `ctx`.
pub fn nb_count(st: &State, ctx: u32) -> u64 {
    st.coll.nb_ops.get(&ctx).copied().unwrap_or(0)
}

/// Records the outcome of a setup: the mapping if every rank has one, and
/// the first nonblocking operation to use it (see [`nb_op`]).
pub fn install(st: &mut State, comm: MPI_Comm, ctx: u32, map: Option<(*mut u8, usize)>, all_ok: bool, nb_from: u64) {
    let wake: Vec<CtlPtr> = match st.comms.get(comm) {
        Ok(c) => c.group.iter().filter_map(|&w| st.engine.ctl_of(w)).map(CtlPtr).collect(),
        Err(_) => Vec::new(),
    };
    let lane = |base, len, owner: Option<Arc<Shared>>, wake| Seg {
        next: 0,
        sh: Arc::new(Shared {
            base,
            len,
            lane: owner.is_some() as u8,
            _owner: owner,
            wake,
            ctx,
            seen: AtomicU64::new(0),
            gate: Gate { open: Default::default(), low: AtomicU64::new(u64::MAX) },
        }),
    };
    let seg = map.map(|(base, len)| {
        let block = lane(base, len, None, wake.clone());
        // SAFETY: the second half of the mapping (`seg_len`).
        let nb_base = unsafe { base.add(len / 2) };
        let nb = lane(nb_base, 0, Some(block.sh.clone()), wake);
        [block, nb]
    });
    st.coll.flat.insert(ctx, Entry { comm, seg: if all_ok { seg } else { None }, nb_from });
}

/// A new shared-memory object of `len` bytes (a `memfd`), mapped, and
/// its descriptor. It has no name in /dev/shm, so nothing of it can be left
/// there however the job ends (a launcher that is not ours, hydra or
/// Slurm, removes nothing). The other ranks of the host map it through
/// `/proc/<pid>/fd/<fd>` ([`open_anon`]) while the creator keeps the
/// descriptor open; it closes it ([`close_anon`]) once they all have.
/// `what` names it in /proc (`memfd:<what>`), for people and tests.
pub fn create_anon(what: &std::ffi::CStr, len: usize) -> Option<((*mut u8, usize), c_int)> {
    // SAFETY: plain memfd_create/ftruncate on a new object of ours; the
    // name is NUL-terminated.
    let fd = unsafe { libc::memfd_create(what.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: our new descriptor.
    if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
        close_anon(fd);
        return None;
    }
    // SAFETY: our descriptor (duplicated: `map_fd` closes the one it gets).
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        close_anon(fd);
        return None;
    }
    match map_fd(dup, len) {
        Some(m) => Some((m, fd)),
        None => {
            close_anon(fd);
            None
        }
    }
}

/// Maps the object that process `pid` made with [`create_anon`] and holds
/// as descriptor `fd` (None if it cannot: another PID namespace, a /proc
/// that hides other processes; then the ranks use messages).
pub fn open_anon(pid: u32, fd: c_int, len: usize) -> Option<(*mut u8, usize)> {
    let path = std::ffi::CString::new(format!("/proc/{pid}/fd/{fd}")).ok()?;
    // SAFETY: a NUL-terminated path.
    let f = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if f < 0 {
        return None;
    }
    map_fd(f, len)
}

/// Closes the creator's descriptor of an object every rank has mapped.
pub fn close_anon(fd: c_int) {
    // SAFETY: a descriptor of ours that nothing else uses.
    unsafe { libc::close(fd) };
}

fn map_fd(fd: c_int, len: usize) -> Option<(*mut u8, usize)> {
    // SAFETY: mapping `len` bytes of an object at least that long; the fd
    // is not needed once mapped.
    let p = unsafe {
        let p = libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0);
        libc::close(fd);
        p
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    Some((p as *mut u8, len))
}
