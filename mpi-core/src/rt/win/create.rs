//! Collective creation of windows of every flavor: the memory of each
//! member's part (the program's, the heap, or one shared segment for the
//! members of one host), the exchange of every part's base, size and
//! displacement unit, and the means of direct access (shared segment,
//! process_vm_readv/writev, lock words).

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::node::LOCK_LINE;
use super::{alloc_heap, Mem, Peer, Win};
use crate::bail;
use crate::rt;
use crate::rt::agree::View;
use crate::rt::comm::Comm;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::info::Pairs;

/// What kind of memory a new window gets.
#[derive(Clone, Copy)]
pub enum Memory {
    /// The program's memory at this address (`MPI_Win_create`).
    User(usize),
    /// Memory the library allocates (`MPI_Win_allocate`).
    Allocate,
    /// One shared segment for all members (`MPI_Win_allocate_shared`).
    Shared,
    /// Regions attached later (`MPI_Win_create_dynamic`).
    Dynamic,
}

impl Memory {
    fn flavor(self) -> c_int {
        match self {
            Memory::User(_) => MPI_WIN_FLAVOR_CREATE,
            Memory::Allocate => MPI_WIN_FLAVOR_ALLOCATE,
            Memory::Shared => MPI_WIN_FLAVOR_SHARED,
            Memory::Dynamic => MPI_WIN_FLAVOR_DYNAMIC,
        }
    }
}

/// The arguments of a window creation, converted from C.
pub struct WinRequest {
    pub memory: Memory,
    pub size: MPI_Aint,
    pub disp_unit: MPI_Aint,
    pub hints: Pairs,
}

/// This process's checks of a creation over `c` (`has_baseptr`: the caller
/// gave somewhere to write the base address); their outcome is agreed on
/// with the window's context.
pub fn check(c: &Comm, req: &WinRequest, has_baseptr: bool) -> MpiResult<()> {
    let (size, disp_unit) = (req.size, req.disp_unit);
    if size < 0 {
        bail!(MPI_ERR_SIZE, "window size {size} is negative");
    }
    if disp_unit <= 0 || disp_unit > c_int::MAX as MPI_Aint {
        bail!(MPI_ERR_DISP, "displacement unit {disp_unit} must be positive");
    }
    if matches!(req.memory, Memory::Allocate | Memory::Shared) && !has_baseptr {
        bail!(MPI_ERR_ARG, "baseptr is a NULL pointer");
    }
    if matches!(req.memory, Memory::Shared) {
        // Every member sees the same answer: if any two are on different
        // hosts, every member has some member on another host.
        let remote = rt::with(|st| Ok(c.group.iter().any(|&w| st.engine.is_remote(w))))?;
        if remote {
            return Err(MpiError::new(
                MPI_ERR_RMA_SHARED,
                "MPI_Win_allocate_shared needs all processes of the communicator on one host",
            ));
        }
    }
    Ok(())
}

/// A new window over `c` on context ids `ctx` (RMA traffic) and `ctx + 1`
/// (its collectives), agreed by every member after [`check`]. Returns the
/// handle and this process's base address.
pub fn create(c: &Comm, ctx: u32, req: WinRequest) -> MpiResult<(MPI_Win, usize)> {
    let WinRequest { memory, size, disp_unit, hints } = req;
    let flavor = memory.flavor();
    let size = size as usize;
    let (view, bytes) =
        rt::with(|st| Ok((View::new(st, ctx + 1, c.rank as usize, c.group.clone())?, st.types.get(MPI_BYTE)?)))?;
    let n = c.group.len();
    // Windows of MPI_Win_allocate whose members share a host live in one
    // shared segment too: Put, Get and accumulates are then done in place.
    let same_host = rt::with(|st| Ok(!c.group.iter().any(|&w| st.engine.is_remote(w))))?;
    let shm_alloc = matches!(memory, Memory::Allocate) && same_host && std::env::var_os("MPICORE_RMA_NO_SHM").is_none();
    let mut locks = 0;
    let (mem, base, locals) = match memory {
        Memory::User(b) => (Mem::None, b, vec![None; n]),
        Memory::Dynamic => (Mem::None, 0, vec![None; n]),
        Memory::Shared | Memory::Allocate if matches!(memory, Memory::Shared) || shm_alloc => {
            match shared_parts(&view, size, if matches!(memory, Memory::Shared) { 1 } else { 64 })? {
                Some(parts) => {
                    locks = parts.segment;
                    (parts.mem, parts.base, parts.locals)
                }
                None if matches!(memory, Memory::Shared) => {
                    bail!(MPI_ERR_NO_MEM, "cannot map a shared segment for the window")
                }
                None => heap_part(&view, size, n)?,
            }
        }
        Memory::Allocate | Memory::Shared => heap_part(&view, size, n)?,
    };
    let mut card = Vec::with_capacity(24);
    for v in [base as u64, size as u64, disp_unit as u64] {
        card.extend_from_slice(&v.to_ne_bytes());
    }
    let mut peers: Vec<Peer> = view
        .allgather_vec(&card)?
        .iter()
        .zip(locals)
        .map(|(b, local)| Peer {
            base: u64_of(&b[0..]) as usize,
            size: u64_of(&b[8..]) as usize,
            disp_unit: u64_of(&b[16..]) as usize,
            local,
            pid: 0,
        })
        .collect();
    if flavor != MPI_WIN_FLAVOR_DYNAMIC {
        // This process's own part is always reached directly; so are the
        // parts of other processes on this host, through CMA.
        let me = c.rank as usize;
        peers[me].local = Some(base);
        if matches!(flavor, MPI_WIN_FLAVOR_CREATE | MPI_WIN_FLAVOR_ALLOCATE)
            && std::env::var_os("MPICORE_RMA_NO_CMA").is_none()
        {
            rt::with(|st| {
                for (t, p) in peers.iter_mut().enumerate().filter(|&(t, _)| t != me) {
                    if let Some(ctl) = st.engine.ctl_of(c.group[t]) {
                        // SAFETY: control blocks live in the node segment,
                        // mapped until finalize.
                        p.pid = unsafe { &*ctl }.pid.load(std::sync::atomic::Ordering::Acquire);
                    }
                }
                Ok(())
            })?;
        }
    }
    let size = if flavor == MPI_WIN_FLAVOR_DYNAMIC { 0 } else { size };
    let part = super::Part { base, size, disp_unit: disp_unit as usize, flavor, mem };
    let mut w = Win::new(ctx, c.group.clone(), c.rank as usize, part, peers, MPI_ERRORS_ARE_FATAL, bytes);
    w.hints = hints;
    w.shm_locks = (locks != 0).then_some(locks);
    w.acc_locks = w.shm_locks;
    // A window of MPI_Win_create on one host: a segment of lock words only,
    // so origins apply accumulates themselves (CMA) under the target part's
    // word, as the target does with those that reach it as messages.
    if flavor == MPI_WIN_FLAVOR_CREATE && same_host && n > 1 && w.peers.iter().any(|p| p.pid != 0) {
        if let Some(((p, len), _)) = map_shared(&view, &vec![0; n], 1)? {
            w.acc_locks = Some(p as usize);
            w.locks_map = Some((p as usize, len));
            rt::with(|st| {
                w.peer_ctls = c.group.iter().filter_map(|&g| st.engine.ctl_of(g)).map(|p| p as usize).collect();
                Ok(())
            })?;
        }
    }
    if locks != 0 {
        rt::with(|st| {
            w.peer_ctls = c.group.iter().filter_map(|&g| st.engine.ctl_of(g)).map(|p| p as usize).collect();
            Ok(())
        })?;
    }
    let h = rt::with(|st| Ok(st.wins.insert(w)))?;
    Ok((h, base))
}

/// A mapping: its address and length.
type Mapping = (*mut u8, usize);

/// Maps one shared segment for all members of `view` (every one on this
/// host): a lock word per member, then the members' parts, `sizes` bytes
/// each, in rank order, each starting at a multiple of `align` (1:
/// contiguous, as `MPI_Win_allocate_shared` promises). Returns the mapping
/// and the offset of every member's part; `None` (at every member) if any
/// could not map it.
fn map_shared(view: &View, sizes: &[usize], align: usize) -> MpiResult<Option<(Mapping, Vec<usize>)>> {
    let mut offs = Vec::with_capacity(sizes.len());
    let mut total = sizes.len() * LOCK_LINE;
    for &s in sizes {
        offs.push(total);
        total += s.div_ceil(align) * align;
    }
    let len = total.max(64);
    // The first member makes it (no name in /dev/shm, see
    // `flat::create_anon`) and says so with its process id and descriptor.
    let (mine, fd) = match if view.rank == 0 { crate::coll::flat::create_anon(c"mpicore-win", len) } else { None } {
        Some((m, fd)) => (Some(m), fd),
        None => (None, -1),
    };
    let mut hello = Vec::with_capacity(12);
    for w in [mine.is_some() as u32, std::process::id(), fd as u32] {
        hello.extend_from_slice(&w.to_ne_bytes());
    }
    let hello = view.bcast_vec(hello, 0);
    let word = |b: &[u8], i: usize| u32::from_ne_bytes(b[4 * i..4 * i + 4].try_into().expect("4 bytes"));
    let map = match &hello {
        Ok(h) if h.len() < 12 || word(h, 0) == 0 => None,
        Ok(_) if view.rank == 0 => mine,
        Ok(h) => crate::coll::flat::open_anon(word(h, 1), word(h, 2) as i32, len),
        Err(_) => None,
    };
    let all = hello.and_then(|_| view.allreduce_u32(map.is_some() as u32, |a, b| a.min(b)));
    if fd >= 0 {
        crate::coll::flat::close_anon(fd);
    }
    let all = all?;
    match (all, map) {
        (1, Some(m)) => Ok(Some((m, offs))),
        (_, m) => {
            if let Some((p, l)) = m {
                // SAFETY: our own mapping, not used by anyone.
                unsafe { libc::munmap(p as *mut libc::c_void, l) };
            }
            Ok(None)
        }
    }
}

/// Memory of a window in one shared segment.
struct SharedParts {
    /// The mapping, unmapped with the window.
    mem: Mem,
    /// This process's part.
    base: usize,
    /// Every member's part, in this process.
    locals: Vec<Option<usize>>,
    /// The segment's start (its lock words).
    segment: usize,
}

/// [`map_shared`] for a window whose members each give `size` bytes.
fn shared_parts(view: &View, size: usize, align: usize) -> MpiResult<Option<SharedParts>> {
    let sizes: Vec<usize> =
        view.allgather_vec(&(size as u64).to_ne_bytes())?.iter().map(|b| u64_of(b) as usize).collect();
    Ok(map_shared(view, &sizes, align)?.map(|((p, len), offs)| SharedParts {
        mem: Mem::Shared(p, len),
        base: p as usize + offs[view.rank],
        locals: offs.iter().map(|&o| Some(p as usize + o)).collect(),
        segment: p as usize,
    }))
}

/// Heap memory for this process's part (every member agrees it got one).
fn heap_part(view: &View, size: usize, n: usize) -> MpiResult<(Mem, usize, Vec<Option<usize>>)> {
    let m = alloc_heap(size);
    let ok = view.allreduce_u32(m.is_ok() as u32, |a, b| a.min(b))?;
    let m = m?;
    if ok == 0 {
        bail!(MPI_ERR_NO_MEM, "another process could not allocate its part of the window");
    }
    let p = match &m {
        Mem::Heap(p, _) => *p as usize,
        _ => 0,
    };
    Ok((m, p, vec![None; n]))
}

pub(super) fn u64_of(b: &[u8]) -> u64 {
    b.get(..8).and_then(|s| s.try_into().ok()).map(u64::from_ne_bytes).unwrap_or(0)
}
