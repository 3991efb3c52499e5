//! Export to OTF2, the Open Trace Format 2 of Score-P, Vampir and Scalasca.
//!
//! The archive is written with the OTF2 library itself (`libotf2`, Debian:
//! `libopen-trace-format2-10`, installed with `otf2-tools`), loaded at run
//! time with `dlopen`, so nothing is needed to build and only this export
//! needs the library. What is written:
//!
//! - one location per thread of a rank (CPU threads in a process location
//!   group under a system-tree node per host; the rank's number for its
//!   thread 0, which MPI ranks of communicators refer to);
//! - a region per MPI call name (paradigm MPI, role point-to-point, barrier
//!   or collective by the call) and per user region (paradigm user);
//! - per call `Enter` at its start and `Leave` at its end; inside it
//!   `MpiSend` (blocking) or `MpiIsend` at the start of the call that posted
//!   a send and `MpiIsendComplete` at the end of the `Wait`/`Test` that
//!   completed it; `MpiIrecvRequest` at the start of a nonblocking receive's
//!   call; `MpiRecv` (blocking) or `MpiIrecv` at the end of the call that
//!   completed a receive (with the actual source); request ids are unique
//!   per rank; `MpiCollectiveBegin` /
//!   `MpiCollectiveEnd` around collectives (operation, communicator, root,
//!   bytes sent and received);
//! - user regions as `Enter`/`Leave`;
//! - communicators with their groups (ranks in a communicator as OTF2
//!   expects: positions in its group; messages on communicators whose
//!   members the trace does not know are written on `MPI_COMM_WORLD` with
//!   world ranks).
//!
//! Timestamps are nanoseconds from the start of the trace (timer resolution
//! 10^9), after clock correction, kept non-decreasing per location.

use std::ffi::{c_char, c_int, c_void, CString};
use std::path::Path;

use crate::model::{Class, CollKind, Model, NONE};
use crate::{Error, FastMap};

type Archive = c_void;
type Writer = c_void;

/// The OTF2 functions this export calls, resolved from the library.
struct Lib {
    _handle: *mut c_void,
    archive_open: unsafe extern "C" fn(*const c_char, *const c_char, u8, u64, u64, u8, u8) -> *mut Archive,
    archive_close: unsafe extern "C" fn(*mut Archive) -> c_int,
    set_flush_callbacks: unsafe extern "C" fn(*mut Archive, *const FlushCallbacks, *mut c_void) -> c_int,
    set_serial_collective_callbacks: unsafe extern "C" fn(*mut Archive) -> c_int,
    open_evt_files: unsafe extern "C" fn(*mut Archive) -> c_int,
    close_evt_files: unsafe extern "C" fn(*mut Archive) -> c_int,
    get_evt_writer: unsafe extern "C" fn(*mut Archive, u64) -> *mut Writer,
    close_evt_writer: unsafe extern "C" fn(*mut Archive, *mut Writer) -> c_int,
    open_def_files: unsafe extern "C" fn(*mut Archive) -> c_int,
    close_def_files: unsafe extern "C" fn(*mut Archive) -> c_int,
    get_def_writer: unsafe extern "C" fn(*mut Archive, u64) -> *mut Writer,
    close_def_writer: unsafe extern "C" fn(*mut Archive, *mut Writer) -> c_int,
    get_global_def_writer: unsafe extern "C" fn(*mut Archive) -> *mut Writer,
    enter: unsafe extern "C" fn(*mut Writer, *mut c_void, u64, u32) -> c_int,
    leave: unsafe extern "C" fn(*mut Writer, *mut c_void, u64, u32) -> c_int,
    mpi_send: unsafe extern "C" fn(*mut Writer, *mut c_void, u64, u32, u32, u32, u64) -> c_int,
    mpi_recv: unsafe extern "C" fn(*mut Writer, *mut c_void, u64, u32, u32, u32, u64) -> c_int,
    mpi_isend: unsafe extern "C" fn(*mut Writer, *mut c_void, u64, u32, u32, u32, u64, u64) -> c_int,
    mpi_isend_complete: unsafe extern "C" fn(*mut Writer, *mut c_void, u64, u64) -> c_int,
    mpi_irecv_request: unsafe extern "C" fn(*mut Writer, *mut c_void, u64, u64) -> c_int,
    mpi_irecv: unsafe extern "C" fn(*mut Writer, *mut c_void, u64, u32, u32, u32, u64, u64) -> c_int,
    coll_begin: unsafe extern "C" fn(*mut Writer, *mut c_void, u64) -> c_int,
    coll_end: unsafe extern "C" fn(*mut Writer, *mut c_void, u64, u8, u32, u32, u64, u64) -> c_int,
    clock_properties: unsafe extern "C" fn(*mut Writer, u64, u64, u64, u64) -> c_int,
    string: unsafe extern "C" fn(*mut Writer, u32, *const c_char) -> c_int,
    region: unsafe extern "C" fn(*mut Writer, u32, u32, u32, u32, u8, u8, u32, u32, u32, u32) -> c_int,
    system_tree_node: unsafe extern "C" fn(*mut Writer, u32, u32, u32, u32) -> c_int,
    location_group: unsafe extern "C" fn(*mut Writer, u32, u32, u8, u32, u32) -> c_int,
    location: unsafe extern "C" fn(*mut Writer, u64, u32, u8, u64, u32) -> c_int,
    group: unsafe extern "C" fn(*mut Writer, u32, u32, u8, u8, u32, u32, *const u64) -> c_int,
    comm: unsafe extern "C" fn(*mut Writer, u32, u32, u32, u32, u32) -> c_int,
}

#[repr(C)]
struct FlushCallbacks {
    pre: Option<unsafe extern "C" fn(*mut c_void, u8, u64, *mut c_void, bool) -> u8>,
    post: Option<unsafe extern "C" fn(*mut c_void, u8, u64) -> u64>,
}

/// Always flush buffers to the files.
unsafe extern "C" fn pre_flush(_: *mut c_void, _: u8, _: u64, _: *mut c_void, _: bool) -> u8 {
    1 // OTF2_FLUSH
}

/// The time of a flush: the last timestamp written (`data` is the `u64`
/// the writer keeps it in).
unsafe extern "C" fn post_flush(data: *mut c_void, _: u8, _: u64) -> u64 {
    if data.is_null() {
        return 0;
    }
    // SAFETY: `data` is the pointer to the `u64` given with the callbacks,
    // which lives until the archive is closed, and is only read here on the
    // writing thread.
    unsafe { *(data as *const u64) }
}

/// Library names tried, in order.
const LIBRARIES: &[&str] = &["libotf2.so", "libotf2.so.10", "libopen-trace-format2.so.10", "libopen-trace-format2.so"];

const UNDEFINED: u32 = u32::MAX;

fn otf2_error(what: impl Into<String>) -> Error {
    Error::Otf2(what.into())
}

impl Lib {
    fn load() -> Result<Lib, Error> {
        let mut handle = std::ptr::null_mut();
        for name in LIBRARIES {
            let c = CString::new(*name).expect("no NUL in the names");
            // SAFETY: dlopen with a valid C string; loading the OTF2 library
            // runs only its own initializers.
            handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            if !handle.is_null() {
                break;
            }
        }
        if handle.is_null() {
            return Err(otf2_error(
                "the OTF2 library is not installed (libotf2.so / libopen-trace-format2.so.10; Debian: apt install otf2-tools)",
            ));
        }
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: the field's type repeats the C prototype of the OTF2
                // function of that name (OTF2 3.x headers).
                unsafe { sym(handle, $name)? }
            };
        }
        Ok(Lib {
            _handle: handle,
            archive_open: sym!("OTF2_Archive_Open"),
            archive_close: sym!("OTF2_Archive_Close"),
            set_flush_callbacks: sym!("OTF2_Archive_SetFlushCallbacks"),
            set_serial_collective_callbacks: sym!("OTF2_Archive_SetSerialCollectiveCallbacks"),
            open_evt_files: sym!("OTF2_Archive_OpenEvtFiles"),
            close_evt_files: sym!("OTF2_Archive_CloseEvtFiles"),
            get_evt_writer: sym!("OTF2_Archive_GetEvtWriter"),
            close_evt_writer: sym!("OTF2_Archive_CloseEvtWriter"),
            open_def_files: sym!("OTF2_Archive_OpenDefFiles"),
            close_def_files: sym!("OTF2_Archive_CloseDefFiles"),
            get_def_writer: sym!("OTF2_Archive_GetDefWriter"),
            close_def_writer: sym!("OTF2_Archive_CloseDefWriter"),
            get_global_def_writer: sym!("OTF2_Archive_GetGlobalDefWriter"),
            enter: sym!("OTF2_EvtWriter_Enter"),
            leave: sym!("OTF2_EvtWriter_Leave"),
            mpi_send: sym!("OTF2_EvtWriter_MpiSend"),
            mpi_recv: sym!("OTF2_EvtWriter_MpiRecv"),
            mpi_isend: sym!("OTF2_EvtWriter_MpiIsend"),
            mpi_isend_complete: sym!("OTF2_EvtWriter_MpiIsendComplete"),
            mpi_irecv_request: sym!("OTF2_EvtWriter_MpiIrecvRequest"),
            mpi_irecv: sym!("OTF2_EvtWriter_MpiIrecv"),
            coll_begin: sym!("OTF2_EvtWriter_MpiCollectiveBegin"),
            coll_end: sym!("OTF2_EvtWriter_MpiCollectiveEnd"),
            clock_properties: sym!("OTF2_GlobalDefWriter_WriteClockProperties"),
            string: sym!("OTF2_GlobalDefWriter_WriteString"),
            region: sym!("OTF2_GlobalDefWriter_WriteRegion"),
            system_tree_node: sym!("OTF2_GlobalDefWriter_WriteSystemTreeNode"),
            location_group: sym!("OTF2_GlobalDefWriter_WriteLocationGroup"),
            location: sym!("OTF2_GlobalDefWriter_WriteLocation"),
            group: sym!("OTF2_GlobalDefWriter_WriteGroup"),
            comm: sym!("OTF2_GlobalDefWriter_WriteComm"),
        })
    }
}

/// The symbol `name` of the library `handle` as a function pointer `F`.
///
/// # Safety
///
/// `F` must be the `unsafe extern "C" fn` type of the C function `name`.
unsafe fn sym<F: Copy>(handle: *mut c_void, name: &str) -> Result<F, Error> {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>(), "function pointers only");
    let c = CString::new(name).map_err(|_| otf2_error("NUL in a symbol name"))?;
    // SAFETY: dlsym on an open handle with a valid C string.
    let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
    if p.is_null() {
        return Err(otf2_error(format!("the OTF2 library has no {name}")));
    }
    // SAFETY: `F` is a function pointer type of the size of `p` (asserted)
    // and, as the caller guarantees, the type of the function at `p`.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

/// Checks an OTF2 error code.
fn ok(what: &str, rc: c_int) -> Result<(), Error> {
    if rc == 0 {
        Ok(())
    } else {
        Err(otf2_error(format!("{what} failed (OTF2 error {rc})")))
    }
}

/// The OTF2 collective operation of a call name.
fn coll_op(name: &str) -> u8 {
    let base = name.strip_suffix("_c").unwrap_or(name).trim_start_matches("MPI_");
    let base = base.strip_suffix("_init").unwrap_or(base);
    let base = match base.strip_prefix('I') {
        Some(rest) if rest.starts_with(|c: char| c.is_ascii_lowercase()) => rest,
        _ => base,
    };
    match base.to_ascii_lowercase().as_str() {
        "barrier" => 0,
        "bcast" => 1,
        "gather" => 2,
        "gatherv" => 3,
        "scatter" => 4,
        "scatterv" => 5,
        "allgather" => 6,
        "allgatherv" => 7,
        "alltoall" => 8,
        "alltoallv" => 9,
        "alltoallw" => 10,
        "allreduce" => 11,
        "reduce" => 12,
        "reduce_scatter" => 13,
        "scan" => 14,
        "exscan" => 15,
        "reduce_scatter_block" => 16,
        // Neighborhood collectives have no OTF2 operation of their own.
        _ => 10,
    }
}

/// Region role and paradigm of a name.
fn role(class: Class, mpi: bool) -> (u8, u8) {
    const PARADIGM_MPI: u8 = 4;
    const PARADIGM_USER: u8 = 1;
    if !mpi {
        return (4, PARADIGM_USER); // OTF2_REGION_ROLE_CODE
    }
    let r = match class {
        Class::Coll { kind, .. } => match kind {
            CollKind::Barrier => 15,
            CollKind::OneToN => 23,
            CollKind::NToOne => 24,
            CollKind::NxN => 25,
            _ => 26,
        },
        c if c.is_p2p() => 28,
        _ => 1, // OTF2_REGION_ROLE_FUNCTION
    };
    (r, PARADIGM_MPI)
}

/// What happens inside a call, in the order written: what starts at the
/// call's start, then what ends at its end.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Inner {
    /// A send posted by the call (index into `sends`).
    Send(u32),
    /// A nonblocking receive posted by the call (index into `recvs`).
    IrecvRequest(u32),
    /// A collective begun by the call (index into `colls`).
    CollBegin(u32),
    /// A receive completed by the call (index into `recvs`).
    Recv(u32),
    /// A nonblocking send completed by the call (index into `sends`).
    IsendComplete(u32),
    /// A collective completed by the call.
    CollEnd(u32),
}

/// Request ids of nonblocking operations (unique within a rank).
fn send_request(i: u32) -> u64 {
    i as u64
}
fn recv_request(i: u32) -> u64 {
    (1 << 40) + i as u64
}

/// The threads of a rank that made calls, in order (the first at least).
fn threads_of(r: &crate::model::RankData) -> Vec<u16> {
    let mut t: Vec<u16> = (0..r.calls.kinds() as u32).map(|k| r.calls.kind_thread(k)).collect();
    t.sort_unstable();
    t.dedup();
    if t.is_empty() {
        t.push(0);
    }
    t
}

/// The OTF2 location of a thread of a rank: the rank's number for its
/// first thread (the locations MPI ranks refer to), above 2^32 for others.
fn location(rank: i32, thread: u16) -> u64 {
    rank as u32 as u64 | (thread as u64) << 32
}

/// Counts of what was written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    pub locations: u64,
    pub events: u64,
    pub messages: u64,
    pub collectives: u64,
}

/// Writes the model as the OTF2 archive `dir/name.otf2` (with `name.def`
/// and the directory `name/`); `dir` is created if needed and must not
/// hold an archive of that name already.
pub fn write_otf2(m: &Model, dir: &Path, name: &str) -> Result<Written, Error> {
    let lib = Lib::load()?;
    std::fs::create_dir_all(dir).map_err(|e| Error::Io { path: dir.to_path_buf(), source: e })?;
    let anchor = dir.join(format!("{name}.otf2"));
    if anchor.exists() || dir.join(name).exists() {
        return Err(otf2_error(format!("{} exists already", anchor.display())));
    }
    let cdir = CString::new(dir.to_string_lossy().as_bytes()).map_err(|_| otf2_error("NUL in the path"))?;
    let cname = CString::new(name).map_err(|_| otf2_error("NUL in the name"))?;
    // SAFETY: valid C strings; constants from the OTF2 headers (file mode
    // write 0, default chunk sizes, POSIX substrate 1, no compression 1).
    let archive = unsafe { (lib.archive_open)(cdir.as_ptr(), cname.as_ptr(), 0, 1 << 20, 4 << 20, 1, 1) };
    if archive.is_null() {
        return Err(otf2_error(format!("cannot create the archive {}", anchor.display())));
    }
    // The last timestamp written, read by the flush callback.
    let now = Box::new(std::cell::Cell::new(0u64));
    let result = write_archive(&lib, archive, m, &now);
    // SAFETY: the archive is open and every writer taken from it was closed
    // (or never opened) by `write_archive`.
    let closed = unsafe { (lib.archive_close)(archive) };
    let w = result?;
    ok("OTF2_Archive_Close", closed)?;
    Ok(w)
}

fn write_archive(lib: &Lib, archive: *mut Archive, m: &Model, now: &std::cell::Cell<u64>) -> Result<Written, Error> {
    let callbacks = FlushCallbacks { pre: Some(pre_flush), post: Some(post_flush) };
    let now_ptr: *mut u64 = now.as_ptr();
    // SAFETY: the archive is open; the callbacks are copied by OTF2 and the
    // data pointer (the boxed u64) outlives the archive.
    ok("OTF2_Archive_SetFlushCallbacks", unsafe {
        (lib.set_flush_callbacks)(archive, &callbacks, now_ptr as *mut c_void)
    })?;
    // SAFETY: the archive is open.
    ok("OTF2_Archive_SetSerialCollectiveCallbacks", unsafe { (lib.set_serial_collective_callbacks)(archive) })?;
    // SAFETY: the archive is open.
    ok("OTF2_Archive_OpenEvtFiles", unsafe { (lib.open_evt_files)(archive) })?;

    let (t0, t1) = m.span();
    let mut out = Written::default();
    // User region names (the rest are MPI calls).
    let mut is_region = vec![false; m.names.len()];
    for r in &m.ranks {
        for g in &r.regions {
            is_region[g.name as usize] = true;
        }
    }
    // Communicators: OTF2 comm ref = index into m.comms; rank of a world
    // rank in each (None if the members are unknown).
    // MPI_COMM_WORLD, defined after the trace's communicators if they lack it.
    let world = m.comms.iter().position(|c| c.id == 0).unwrap_or(m.comms.len()) as u32;
    let comm_rank: Vec<FastMap<i32, u32>> =
        m.comms.iter().map(|c| c.members.iter().enumerate().map(|(i, &w)| (w, i as u32)).collect()).collect();
    let known =
        |comm: u32| comm != NONE && (comm as usize) < m.comms.len() && !m.comms[comm as usize].members.is_empty();
    // (communicator, rank in it) of a world rank on a communicator.
    let place = |comm: u32, peer: i32| -> (u32, u32) {
        if known(comm) {
            if let Some(&r) = comm_rank[comm as usize].get(&peer) {
                return (comm, r);
            }
        }
        (world, if peer >= 0 { peer as u32 } else { UNDEFINED })
    };
    // Events per location: (rank, thread, events).
    let mut counts: Vec<(i32, u16, u64)> = Vec::new();
    for r in &m.ranks {
        let mut inner: Vec<(u32, Inner)> = Vec::new();
        for (i, s) in r.sends.iter().enumerate() {
            if s.peer >= 0 && s.post != NONE {
                inner.push((s.post, Inner::Send(i as u32)));
                if s.done != NONE && s.done != s.post {
                    inner.push((s.done, Inner::IsendComplete(i as u32)));
                }
            }
        }
        for (i, p) in r.recvs.iter().enumerate() {
            if p.peer >= 0 && p.done != NONE {
                inner.push((p.done, Inner::Recv(i as u32)));
                if p.post != p.done {
                    inner.push((p.post, Inner::IrecvRequest(i as u32)));
                }
            }
        }
        for (i, c) in r.colls.iter().enumerate() {
            if c.post != NONE && c.done != NONE {
                inner.push((c.post, Inner::CollBegin(i as u32)));
                inner.push((c.done, Inner::CollEnd(i as u32)));
            }
        }
        inner.sort_unstable();
        let threads = threads_of(r);
        for &th in &threads {
            let loc = location(r.rank, th);
            // SAFETY: the archive is open with its event files.
            let w = unsafe { (lib.get_evt_writer)(archive, loc) };
            if w.is_null() {
                return Err(otf2_error(format!("no event writer for rank {} thread {th}", r.rank)));
            }
            let mut next_inner = 0;
            // User regions are marked by the thread that initialized MPI (the
            // trace does not say by which).
            let mut marks = r.regions.iter().filter(|_| th == threads[0]).peekable();
            let mut last = 0u64;
            let mut n = 0u64;
            let stamp = |t: i64, last: &mut u64| -> u64 {
                let v = ((t - t0).max(0) as u64).max(*last);
                *last = v;
                now.set(v);
                v
            };
            let null = std::ptr::null_mut();
            for (ci, c) in r.calls.iter().enumerate() {
                if c.thread != th {
                    continue;
                }
                while inner.get(next_inner).is_some_and(|e| (e.0 as usize) < ci) {
                    next_inner += 1;
                }
                while let Some(g) = marks.next_if(|g| g.t <= c.t_start) {
                    let t = stamp(g.t, &mut last);
                    let f = if g.begin { lib.enter } else { lib.leave };
                    // SAFETY: `w` is this rank's open event writer.
                    ok("OTF2_EvtWriter_Enter/Leave", unsafe { f(w, null, t, g.name as u32) })?;
                    n += 1;
                }
                let t = stamp(c.t_start, &mut last);
                // SAFETY: `w` is this rank's open event writer.
                ok("OTF2_EvtWriter_Enter", unsafe { (lib.enter)(w, null, t, c.name as u32) })?;
                n += 1;
                while let Some(&(call, what)) = inner.get(next_inner) {
                    if call as usize != ci {
                        break;
                    }
                    next_inner += 1;
                    match what {
                        Inner::Send(i) => {
                            let p = &r.sends.at(i as usize);
                            let (comm, to) = place(p.comm, p.peer);
                            let t = stamp(c.t_start, &mut last);
                            let (tag, len) = (p.tag as u32, p.bytes.max(0) as u64);
                            if p.done == p.post {
                                // SAFETY: `w` is this rank's open event writer.
                                ok("OTF2_EvtWriter_MpiSend", unsafe {
                                    (lib.mpi_send)(w, null, t, to, comm, tag, len)
                                })?;
                            } else {
                                // SAFETY: `w` is this rank's open event writer.
                                ok("OTF2_EvtWriter_MpiIsend", unsafe {
                                    (lib.mpi_isend)(w, null, t, to, comm, tag, len, send_request(i))
                                })?;
                            }
                            out.messages += 1;
                        }
                        Inner::IsendComplete(i) => {
                            let t = stamp(c.t_end, &mut last);
                            // SAFETY: `w` is this rank's open event writer.
                            ok("OTF2_EvtWriter_MpiIsendComplete", unsafe {
                                (lib.mpi_isend_complete)(w, null, t, send_request(i))
                            })?;
                        }
                        Inner::IrecvRequest(i) => {
                            let t = stamp(c.t_start, &mut last);
                            // SAFETY: `w` is this rank's open event writer.
                            ok("OTF2_EvtWriter_MpiIrecvRequest", unsafe {
                                (lib.mpi_irecv_request)(w, null, t, recv_request(i))
                            })?;
                        }
                        Inner::Recv(i) => {
                            let p = &r.recvs.at(i as usize);
                            let (comm, from) = place(p.comm, p.peer);
                            let t = stamp(c.t_end, &mut last);
                            let (tag, len) = (p.tag as u32, p.bytes.max(0) as u64);
                            if p.done == p.post {
                                // SAFETY: `w` is this rank's open event writer.
                                ok("OTF2_EvtWriter_MpiRecv", unsafe {
                                    (lib.mpi_recv)(w, null, t, from, comm, tag, len)
                                })?;
                            } else {
                                // SAFETY: `w` is this rank's open event writer.
                                ok("OTF2_EvtWriter_MpiIrecv", unsafe {
                                    (lib.mpi_irecv)(w, null, t, from, comm, tag, len, recv_request(i))
                                })?;
                            }
                        }
                        Inner::CollBegin(_) => {
                            let t = stamp(c.t_start, &mut last);
                            // SAFETY: `w` is this rank's open event writer.
                            ok("OTF2_EvtWriter_MpiCollectiveBegin", unsafe { (lib.coll_begin)(w, null, t) })?;
                        }
                        Inner::CollEnd(i) => {
                            let k = &r.colls[i as usize];
                            let op = coll_op(m.name(r.calls.at(k.post as usize).name));
                            let comm = if known(k.comm) { k.comm } else { world };
                            let root = if k.root >= 0 { place(k.comm, k.root).1 } else { UNDEFINED };
                            let t = stamp(c.t_end, &mut last);
                            // SAFETY: `w` is this rank's open event writer.
                            ok("OTF2_EvtWriter_MpiCollectiveEnd", unsafe {
                                (lib.coll_end)(
                                    w,
                                    null,
                                    t,
                                    op,
                                    comm,
                                    root,
                                    k.bytes.max(0) as u64,
                                    k.recv_bytes.max(0) as u64,
                                )
                            })?;
                            out.collectives += 1;
                        }
                    }
                    n += 1;
                }
                let t = stamp(c.t_end, &mut last);
                // SAFETY: `w` is this rank's open event writer.
                ok("OTF2_EvtWriter_Leave", unsafe { (lib.leave)(w, null, t, c.name as u32) })?;
                n += 1;
            }
            for g in marks {
                let t = stamp(g.t, &mut last);
                let f = if g.begin { lib.enter } else { lib.leave };
                // SAFETY: `w` is this rank's open event writer.
                ok("OTF2_EvtWriter_Enter/Leave", unsafe { f(w, null, t, g.name as u32) })?;
                n += 1;
            }
            // SAFETY: `w` came from this archive and is closed once.
            ok("OTF2_Archive_CloseEvtWriter", unsafe { (lib.close_evt_writer)(archive, w) })?;
            counts.push((r.rank, th, n));
            out.events += n;
            out.locations += 1;
        }
    }
    // SAFETY: the archive is open with its event files, all writers closed.
    ok("OTF2_Archive_CloseEvtFiles", unsafe { (lib.close_evt_files)(archive) })?;
    // Empty local definitions per location (readers expect the files).
    // SAFETY: the archive is open.
    ok("OTF2_Archive_OpenDefFiles", unsafe { (lib.open_def_files)(archive) })?;
    for &(rank, th, _) in &counts {
        // SAFETY: the archive is open with its definition files.
        let d = unsafe { (lib.get_def_writer)(archive, location(rank, th)) };
        if d.is_null() {
            return Err(otf2_error(format!("no definition writer for rank {rank} thread {th}")));
        }
        // SAFETY: `d` came from this archive and is closed once.
        ok("OTF2_Archive_CloseDefWriter", unsafe { (lib.close_def_writer)(archive, d) })?;
    }
    // SAFETY: the archive is open with its definition files.
    ok("OTF2_Archive_CloseDefFiles", unsafe { (lib.close_def_files)(archive) })?;

    // Global definitions.
    // SAFETY: the archive is open.
    let g = unsafe { (lib.get_global_def_writer)(archive) };
    if g.is_null() {
        return Err(otf2_error("no global definition writer"));
    }
    let mut strings: FastMap<String, u32> = FastMap::default();
    let mut string = |s: &str| -> Result<u32, Error> {
        if let Some(&i) = strings.get(s) {
            return Ok(i);
        }
        let i = strings.len() as u32;
        let c = CString::new(s.replace('\0', " ")).expect("NULs replaced");
        // SAFETY: `g` is the open global definition writer; `c` a valid C string.
        ok("OTF2_GlobalDefWriter_WriteString", unsafe { (lib.string)(g, i, c.as_ptr()) })?;
        strings.insert(s.to_string(), i);
        Ok(i)
    };
    // SAFETY: `g` is the open global definition writer.
    ok("OTF2_GlobalDefWriter_WriteClockProperties", unsafe {
        (lib.clock_properties)(g, 1_000_000_000, 0, (t1 - t0).max(0) as u64 + 1, u64::MAX)
    })?;
    let empty = string("")?;
    // Region refs are name ids (every name gets a region, so refs stay dense).
    for (i, nm) in m.names.iter().enumerate() {
        let s = string(nm)?;
        let mpi = nm.starts_with("MPI_") && !is_region[i];
        let (role, paradigm) = role(m.class(i as u16), mpi);
        // SAFETY: `g` is the open global definition writer.
        ok("OTF2_GlobalDefWriter_WriteRegion", unsafe {
            (lib.region)(g, i as u32, s, s, empty, role, paradigm, 0, empty, 0, 0)
        })?;
    }
    // System tree: the job, then one node per host.
    let job = string("mpitrace job")?;
    let machine = string("machine")?;
    let node_class = string("node")?;
    // SAFETY: `g` is the open global definition writer.
    ok("OTF2_GlobalDefWriter_WriteSystemTreeNode", unsafe { (lib.system_tree_node)(g, 0, job, machine, UNDEFINED) })?;
    let mut hosts: Vec<String> = m.meta.hosts.clone();
    let host_of = |rank: i32| m.meta.rank_meta.iter().find(|x| x.process.rank == rank).map(|x| x.process.host.clone());
    for r in &m.ranks {
        if let Some(h) = host_of(r.rank) {
            if !hosts.contains(&h) {
                hosts.push(h);
            }
        }
    }
    for (i, h) in hosts.iter().enumerate() {
        let s = string(h)?;
        // SAFETY: `g` is the open global definition writer.
        ok("OTF2_GlobalDefWriter_WriteSystemTreeNode", unsafe {
            (lib.system_tree_node)(g, i as u32 + 1, s, node_class, 0)
        })?;
    }
    for r in &m.ranks {
        let parent =
            host_of(r.rank).and_then(|h| hosts.iter().position(|x| *x == h)).map(|i| i as u32 + 1).unwrap_or(0);
        let s = string(&format!("rank {}", r.rank))?;
        // SAFETY: `g` is the open global definition writer (process group
        // type 1, no creating group).
        ok("OTF2_GlobalDefWriter_WriteLocationGroup", unsafe {
            (lib.location_group)(g, r.rank as u32, s, 1, parent, UNDEFINED)
        })?;
    }
    for &(rank, th, n) in &counts {
        let s = string(&format!("rank {rank} thread {th}"))?;
        // SAFETY: `g` is the open global definition writer (CPU thread type 1).
        ok("OTF2_GlobalDefWriter_WriteLocation", unsafe {
            (lib.location)(g, location(rank, th), s, 1, n, rank as u32)
        })?;
    }
    // Groups: 0 = every location (the MPI ranks), then one per communicator.
    let all: Vec<u64> = m.ranks.iter().map(|r| r.rank as u64).collect();
    let locs = string("MPI ranks")?;
    // SAFETY: `g` is the open global definition writer; `all` has `len` elements.
    ok("OTF2_GlobalDefWriter_WriteGroup", unsafe { (lib.group)(g, 0, locs, 4, 4, 0, all.len() as u32, all.as_ptr()) })?;
    for (i, c) in m.comms.iter().enumerate() {
        let members: Vec<u64> =
            if c.id == 0 && c.members.is_empty() { all.clone() } else { c.members.iter().map(|&w| w as u64).collect() };
        let label = c.label();
        let s = string(&label)?;
        // SAFETY: `g` is the open global definition writer; `members` has `len` elements.
        ok("OTF2_GlobalDefWriter_WriteGroup", unsafe {
            (lib.group)(g, i as u32 + 1, s, 5, 4, 0, members.len() as u32, members.as_ptr())
        })?;
        // SAFETY: `g` is the open global definition writer.
        ok("OTF2_GlobalDefWriter_WriteComm", unsafe { (lib.comm)(g, i as u32, s, i as u32 + 1, UNDEFINED, 0) })?;
    }
    if world as usize == m.comms.len() {
        let s = string("WORLD")?;
        // SAFETY: `g` is the open global definition writer; `all` has `len` elements.
        ok("OTF2_GlobalDefWriter_WriteGroup", unsafe {
            (lib.group)(g, world + 1, s, 5, 4, 0, all.len() as u32, all.as_ptr())
        })?;
        // SAFETY: `g` is the open global definition writer.
        ok("OTF2_GlobalDefWriter_WriteComm", unsafe { (lib.comm)(g, world, s, world + 1, UNDEFINED, 0) })?;
    }
    Ok(out)
}
