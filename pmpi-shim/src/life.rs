//! Start and end of tracing: output directory, process identity, clock
//! synchronization at `MPI_Init` and `MPI_Finalize`, `meta.json`, and the
//! conversion of the journals to Parquet.

use std::os::raw::{c_char, c_int};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use mpi_api::abi;
use trace_format::layout;
use trace_format::meta::{Meta, RankMeta};
use trace_format::record::{flags, head, Kind, Record};
use trace_format::side::{Module, ProcessInfo, SideEntry, SideWriter, SyncPoint};

use crate::clock;
use crate::pmpi;
use crate::rec::{self, mode, MODE, TRACE_OUTPUT};
use crate::state::{state, Tracer};

const SYNC_TAG: c_int = 0x7ff1;
const SYNC_ROUNDS: usize = 20;

/// The communicator of all processes of the job for the shim's own use:
/// `MPI_COMM_WORLD`, or, when tracing started in `MPI_Session_init`, a
/// communicator the shim made from the session's `mpi://WORLD` process set.
static WORLD: AtomicI32 = AtomicI32::new(abi::MPI_COMM_WORLD);
/// The session whose `MPI_Session_init` started tracing (its finalization
/// ends it), or `MPI_SESSION_NULL` when `MPI_Init` started it.
static SESSION: AtomicI32 = AtomicI32::new(abi::MPI_SESSION_NULL);

/// See [`WORLD`].
pub fn world() -> c_int {
    WORLD.load(Ordering::Relaxed)
}

/// Whether tracing was started by `MPI_Init`/`MPI_Init_thread` (and ends in
/// `MPI_Finalize`) rather than by a session.
pub fn started_by_init() -> bool {
    SESSION.load(Ordering::Relaxed) == abi::MPI_SESSION_NULL
}

/// The session that started tracing, if a session did.
pub fn tracing_session() -> Option<c_int> {
    Some(SESSION.load(Ordering::Relaxed)).filter(|&s| s != abi::MPI_SESSION_NULL)
}

/// Tracing starts in `MPI_Session_init` of `session` (when the process
/// is not traced yet): the shim makes its own communicator of all
/// processes from the `mpi://WORLD` process set (collective over them, as
/// every process of a job initializes a session), then starts as
/// [`start`] does. Returns false (untraced) if that communicator cannot be
/// had.
pub fn start_session(session: c_int, call: usize, before: (u64, u64), after: u64) -> bool {
    if MODE.load(Ordering::Relaxed) != mode::OFF {
        return false;
    }
    let (mut group, mut comm) = (abi::MPI_GROUP_NULL, abi::MPI_COMM_NULL);
    // SAFETY: the session was just initialized; NUL-terminated names; live
    // out pointers.
    let ok = unsafe {
        pmpi::MPI_Group_from_session_pset(session, c"mpi://WORLD".as_ptr(), &mut group) == abi::MPI_SUCCESS
            && pmpi::MPI_Comm_create_from_group(
                group,
                c"org.mpitrace.world".as_ptr(),
                abi::MPI_INFO_NULL,
                abi::MPI_ERRORS_RETURN,
                &mut comm,
            ) == abi::MPI_SUCCESS
    };
    if group != abi::MPI_GROUP_NULL {
        // SAFETY: our own group handle.
        unsafe { pmpi::MPI_Group_free(&mut group) };
    }
    if !ok || comm == abi::MPI_COMM_NULL {
        eprintln!("mpitrace: no communicator from the session's mpi://WORLD; the application runs untraced");
        MODE.store(mode::DONE, Ordering::Relaxed);
        return false;
    }
    WORLD.store(comm, Ordering::Relaxed);
    SESSION.store(session, Ordering::Relaxed);
    start(call, before, after);
    true
}

/// Frees the shim's communicator of a session-started trace (before the
/// session is finalized).
pub fn release_session_world() {
    if let Some(tr) = state().as_mut() {
        if tr.world_group != abi::MPI_GROUP_NULL {
            // SAFETY: our own group handle, not used after this.
            unsafe { pmpi::MPI_Group_free(&mut tr.world_group) };
        }
    }
    let mut c = WORLD.swap(abi::MPI_COMM_WORLD, Ordering::Relaxed);
    if c != abi::MPI_COMM_WORLD && c != abi::MPI_COMM_NULL {
        // SAFETY: our own communicator, no operation pending on it.
        unsafe { pmpi::MPI_Comm_free(&mut c) };
    }
}

/// Tracing starts: called right after `PMPI_Init` returned successfully.
/// `before` is a calibration point taken before it, `after` the ticks
/// right after. The Init call is recorded from `before` to the end of the
/// shim's own set-up here (journals, modules, clock synchronization), which
/// is time spent in MPI_Init as the program sees it, not its compute.
pub fn start(call: usize, before: (u64, u64), after: u64) {
    if MODE.load(Ordering::Relaxed) != mode::OFF {
        // Already traced (a session started it before MPI_Init).
        return;
    }
    let (mut rank, mut size) = (0, 0);
    // SAFETY: MPI is initialized; out pointers are live locals.
    unsafe {
        pmpi::MPI_Comm_rank(world(), &mut rank);
        pmpi::MPI_Comm_size(world(), &mut size);
    }
    let dir = output_dir(rank);
    // Private (0700/0600): the trace holds the command line, hosts, paths.
    let open_side = || {
        trace_format::private::create_dir_all(&dir.join(layout::JOURNAL_DIR))
            .map_err(|e| format!("{}: {e}", dir.display()))
            .and_then(|_| SideWriter::open(&layout::side(&dir, rank)).map_err(|e| e.to_string()))
    };
    // The last rank to convert removes the emptied journal folder; a rank
    // that starts only then (sessions need not meet) may see it vanish
    // between creating it and opening its side file: once more then.
    let side = open_side().or_else(|_| open_side());
    let side = match side {
        Ok(s) => s,
        Err(e) => {
            if rank == 0 {
                eprintln!("mpitrace: cannot write the trace ({e}); the application runs untraced");
            }
            MODE.store(mode::DONE, Ordering::Relaxed);
            return;
        }
    };
    let mut process = process_info(rank, size);
    // Held until the process ends: readers on any machine that sees the
    // trace directory tell a dead rank from a computing one by it.
    process.alive_lock = trace_format::alive::hold(&layout::side(&dir, rank));
    let mut tr = Tracer::new(dir.clone(), rank, size, Some(side), process.clone());
    tr.write_side(&SideEntry::Process(process));
    tr.write_side(&SideEntry::Clock { ticks: before.0, ns: before.1 });
    tr.clock_point();
    let (ticks_now, ns_now) = (tr.last_point, clock::mono_ns());
    if ns_now > before.1 && ticks_now > before.0 {
        // About one calibration point per second of run time.
        let ticks_per_ns = (ticks_now - before.0) as f64 / (ns_now - before.1) as f64;
        tr.point_interval = (ticks_per_ns * 1e9) as u64;
    }
    tr.dl_adds = dl_adds();
    let (modules, ids) = module_map();
    record_modules(&mut tr, modules, &ids);
    tr.isendrecv_status = isendrecv_fills_status(rank);
    if !tr.isendrecv_status {
        tr.write_side(&SideEntry::Note {
            message: "the MPI library does not fill the status of MPI_Isendrecv: receive halves \
                      are recorded from the call's source and tag, without bytes"
                .into(),
        });
    }
    tr.sync_comms = sync_comms(rank);
    let p = measure_offset(tr.sync_comms);
    tr.sync_init = Some(p);
    tr.write_side(&SideEntry::Sync { phase: "init".into(), point: p });
    let shared_side = SideWriter::open(&layout::side(&dir, rank)).ok();
    *crate::state::SHARED_SIDE.lock().unwrap_or_else(|p| p.into_inner()) =
        shared_side.map(|side| crate::state::SharedSide { side, regions: Default::default() });
    let mut level = abi::MPI_THREAD_MULTIPLE;
    if started_by_init() {
        // SAFETY: MPI is initialized; live out pointer.
        unsafe { pmpi::MPI_Query_thread(&mut level) };
    }
    // Sessions choose their thread level each: the state is always locked.
    let lock = level == abi::MPI_THREAD_MULTIPLE || std::env::var("MPITRACE_LOCK").is_ok_and(|v| v == "1");
    crate::callpath::configure(rank);
    let counters = crate::counters::configure(rank);
    if !counters.is_empty() {
        tr.write_side(&SideEntry::Counters { names: counters });
    }
    let _ = TRACE_OUTPUT.set((dir, rank));
    *state() = Some(tr);
    crate::state::LOCKING.store(lock, Ordering::Relaxed);
    MODE.store(mode::ON, Ordering::Relaxed);
    let _ = crate::rec::THREAD_STATE.try_with(|t| {
        rec::append(&Record {
            head: head(call as u16, Kind::Call, flags::DONE),
            t_enter: before.0,
            t_exit: clock::ticks().max(after),
            // Still inside the program's MPI_Init: its callers' frames are there.
            site: crate::callpath::tag(t.site.get(), t.frame.get()),
            ..Default::default()
        })
    });
}

/// `MPITRACE_DIR`, or `./mpitrace-<UTC time>` named by rank 0 for everyone.
fn output_dir(rank: c_int) -> PathBuf {
    let base = std::env::var_os("MPITRACE_DIR").filter(|d| !d.is_empty()).map(PathBuf::from);
    // A job started by MPI_Comm_spawn inherits the environment of its
    // parent's launcher: it writes its own trace in a directory of its own
    // (under the parent's `spawned/`), never over the parent's ranks.
    match (base, spawned()) {
        (Some(d), false) => d,
        (Some(d), true) => {
            d.join("spawned").join(name_from_rank0(rank, || format!("{}-{}", utc_stamp(), std::process::id())))
        }
        (None, false) => PathBuf::from(name_from_rank0(rank, || format!("mpitrace-{}", utc_stamp()))),
        (None, true) => {
            PathBuf::from(name_from_rank0(rank, || format!("mpitrace-{}-spawned-{}", utc_stamp(), std::process::id())))
        }
    }
}

/// Whether this process belongs to a job another one spawned (it has a
/// parent communicator). Only asked of a job that called `MPI_Init`.
fn spawned() -> bool {
    if !started_by_init() {
        return false;
    }
    let mut parent = abi::MPI_COMM_NULL;
    // SAFETY: MPI is initialized; live out pointer.
    let rc = unsafe { pmpi::MPI_Comm_get_parent(&mut parent) };
    rc == abi::MPI_SUCCESS && parent != abi::MPI_COMM_NULL
}

/// The name rank 0 makes with `make`, the same at every rank (at most 255
/// bytes).
fn name_from_rank0(rank: c_int, make: impl FnOnce() -> String) -> String {
    let mut buf = [0u8; 256];
    if rank == 0 {
        let name = make();
        let n = name.len().min(buf.len() - 1);
        buf[..n].copy_from_slice(&name.as_bytes()[..n]);
    }
    // SAFETY: every rank passes a 256-byte buffer to the broadcast.
    unsafe { pmpi::MPI_Bcast(buf.as_mut_ptr() as *mut _, buf.len() as c_int, abi::MPI_CHAR, 0, world()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// `YYYYmmdd-HHMMSS` in UTC.
fn utc_stamp() -> String {
    let secs =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}{m:02}{d:02}-{:02}{:02}{:02}", rem / 3600, rem / 60 % 60, rem % 60)
}

fn process_info(rank: c_int, size: c_int) -> ProcessInfo {
    let mut host = [0 as c_char; 256];
    // SAFETY: gethostname writes at most len bytes into our buffer.
    unsafe { libc::gethostname(host.as_mut_ptr(), host.len() - 1) };
    // SAFETY: NUL-terminated by the zeroed last byte.
    let host = unsafe { std::ffi::CStr::from_ptr(host.as_ptr()) }.to_string_lossy().into_owned();
    let argv = std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0).filter(|s| !s.is_empty()).map(|s| String::from_utf8_lossy(s).into_owned()).collect()
        })
        .unwrap_or_default();
    let mut lib = vec![0 as c_char; abi::MPI_MAX_LIBRARY_VERSION_STRING as usize + 1];
    let mut len = 0;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: buffers as large as the standard requires; live out pointers.
    let library = unsafe {
        pmpi::MPI_Get_library_version(lib.as_mut_ptr(), &mut len);
        pmpi::MPI_Get_version(&mut major, &mut minor);
        std::ffi::CStr::from_ptr(lib.as_ptr()).to_string_lossy().trim().to_string()
    };
    ProcessInfo {
        rank,
        size,
        pid: std::process::id(),
        host,
        argv,
        mpi_library: library,
        mpi_version: format!("{major}.{minor}"),
        mpi_abi: crate::detect::library().map(|l| l.abi.to_string()).unwrap_or_default(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        clock: Some(clock::KIND),
        started_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0),
        alive_lock: false,
    }
}

/// Whether the library fills the status of a completed `MPI_Isendrecv`:
/// one to this process on a communicator of its own (split from the
/// shim's world) with wildcards. MPICH 4.0 leaves zeros or an older
/// request's status there. True when the library has no `MPI_Isendrecv`.
fn isendrecv_fills_status(rank: c_int) -> bool {
    if crate::next::resolve(crate::ids::MPI_Isendrecv).is_none() {
        return true;
    }
    let mut just_me = abi::MPI_COMM_NULL;
    // SAFETY: collective split of the shim's world; live out pointer.
    unsafe { pmpi::MPI_Comm_split(world(), rank, 0, &mut just_me) };
    if just_me == abi::MPI_COMM_NULL {
        return true;
    }
    let (sent, mut received) = ([1 as c_int, 2, 3], [0 as c_int; 4]);
    let mut req = abi::MPI_REQUEST_NULL;
    let mut st = abi::MPI_Status::default();
    // SAFETY: buffers and out pointers are live locals for the whole
    // operation (it completes in MPI_Wait below); `just_me` is the shim's
    // own communicator, freed only after that.
    let rc = unsafe {
        let rc = pmpi::MPI_Isendrecv(
            sent.as_ptr().cast(),
            3,
            abi::MPI_INT,
            0,
            SYNC_TAG + 1,
            received.as_mut_ptr().cast(),
            4,
            abi::MPI_INT,
            abi::MPI_ANY_SOURCE,
            abi::MPI_ANY_TAG,
            just_me,
            &mut req,
        );
        let rc = if rc == abi::MPI_SUCCESS { pmpi::MPI_Wait(&mut req, &mut st) } else { rc };
        pmpi::MPI_Comm_free(&mut just_me);
        rc
    };
    rc != abi::MPI_SUCCESS || (st.MPI_SOURCE == 0 && st.MPI_TAG == SYNC_TAG + 1 && st.byte_count() == 12)
}

/// Executable file mappings, to symbolize call sites offline.
fn modules() -> Vec<Module> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    maps.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let range = f.next()?;
            let perms = f.next()?;
            let offset = u64::from_str_radix(f.next()?, 16).ok()?;
            let path = f.nth(2)?;
            if !perms.contains('x') || !path.starts_with('/') {
                return None;
            }
            let (a, b) = range.split_once('-')?;
            Some(Module {
                start: u64::from_str_radix(a, 16).ok()?,
                end: u64::from_str_radix(b, 16).ok()?,
                offset,
                path: path.to_string(),
            })
        })
        .collect()
}

/// The dynamic loader's count of objects loaded so far (`dlpi_adds`).
fn dl_adds() -> u64 {
    unsafe extern "C" fn store_adds(info: *mut libc::dl_phdr_info, _size: usize, data: *mut std::ffi::c_void) -> c_int {
        // SAFETY: `data` is the u64 passed below; the loader passes a
        // valid `dl_phdr_info`.
        unsafe { *data.cast::<u64>() = (*info).dlpi_adds };
        1
    }
    let mut adds = 0u64;
    // SAFETY: the callback writes only `adds`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(store_adds), (&mut adds as *mut u64).cast()) };
    adds
}

/// Set about once a second: [`refresh_modules`] is due.
pub static MODULES_DUE: AtomicBool = AtomicBool::new(false);

/// Adds the mappings of objects loaded since the last look to the module
/// map (cheap when nothing was loaded: one call into the dynamic loader).
/// Must be called with the state unlocked: the dynamic loader's lock is
/// taken, and a library constructor running under it may call MPI.
pub fn refresh_modules() {
    let adds = dl_adds();
    if state().as_ref().is_none_or(|tr| tr.dl_adds == adds) {
        return;
    }
    let (modules, ids) = module_map();
    if let Some(tr) = state().as_mut() {
        tr.dl_adds = adds;
        record_modules(tr, modules, &ids);
    }
}

/// Writes the mappings of `modules` not written before (with the build ids
/// of their files) to the side file.
fn record_modules(tr: &mut Tracer, modules: Vec<Module>, ids: &std::collections::BTreeMap<String, String>) {
    for m in modules {
        if tr.modules.contains(&m) {
            continue;
        }
        if !tr.modules.iter().any(|o| o.path == m.path) {
            if let Some(id) = ids.get(&m.path) {
                tr.write_side(&SideEntry::BuildId { path: m.path.clone(), build_id: id.clone() });
            }
        }
        tr.write_side(&SideEntry::Module(m.clone()));
        tr.modules.push(m);
    }
}

/// The executable mappings and the build ids of their files, by path.
fn module_map() -> (Vec<Module>, std::collections::BTreeMap<String, String>) {
    let modules = modules();
    let ranges = build_ids();
    let ids = modules
        .iter()
        .filter_map(|m| {
            let (_, _, id) = ranges.iter().find(|(lo, hi, _)| (*lo..*hi).contains(&m.start))?;
            Some((m.path.clone(), id.clone()))
        })
        .collect();
    (modules, ids)
}

/// GNU build ids of the loaded objects, with the address range of each of
/// their loadable segments: (start, end, id in lower-case hex).
fn build_ids() -> Vec<(u64, u64, String)> {
    unsafe extern "C" fn collect_build_ids(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut std::ffi::c_void,
    ) -> c_int {
        // SAFETY: `data` is the vector passed below; the loader passes a
        // valid `dl_phdr_info` whose program headers and note segments are
        // mapped at `dlpi_addr + p_vaddr` while the callback runs.
        unsafe {
            let out = &mut *data.cast::<Vec<(u64, u64, String)>>();
            let info = &*info;
            if info.dlpi_phdr.is_null() {
                return 0;
            }
            let phdrs = std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize);
            let base = info.dlpi_addr;
            let id = phdrs.iter().filter(|p| p.p_type == libc::PT_NOTE && p.p_memsz > 0).find_map(|p| {
                let notes = std::slice::from_raw_parts((base + p.p_vaddr) as *const u8, p.p_memsz as usize);
                gnu_build_id(notes, if p.p_align == 8 { 8 } else { 4 })
            });
            if let Some(id) = id {
                for p in phdrs.iter().filter(|p| p.p_type == libc::PT_LOAD) {
                    let lo = base + p.p_vaddr;
                    out.push((lo, lo + p.p_memsz, id.clone()));
                }
            }
        }
        0
    }
    let mut out: Vec<(u64, u64, String)> = Vec::new();
    // SAFETY: the callback only reads what the loader hands it and appends
    // to `out`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(collect_build_ids), (&mut out as *mut Vec<(u64, u64, String)>).cast()) };
    out
}

/// The GNU build id in a note segment whose entries are padded to `align`.
fn gnu_build_id(mut notes: &[u8], align: usize) -> Option<String> {
    const NT_GNU_BUILD_ID: u32 = 3;
    let pad = |n: usize| n.div_ceil(align) * align;
    let word = |b: &[u8], i: usize| -> Option<u32> { Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?)) };
    while notes.len() >= 12 {
        let (namesz, descsz, kind) = (word(notes, 0)? as usize, word(notes, 4)? as usize, word(notes, 8)?);
        let name = notes.get(12..12 + namesz)?;
        let desc_at = 12 + pad(namesz);
        let desc = notes.get(desc_at..desc_at + descsz)?;
        if kind == NT_GNU_BUILD_ID && name == b"GNU\0" {
            return Some(desc.iter().map(|b| format!("{b:02x}")).collect());
        }
        notes = notes.get(desc_at + pad(descsz)..)?;
    }
    None
}

/// The communicators of the clock synchronization: ranks sharing a node
/// (they share CLOCK_MONOTONIC), and the node leaders. With
/// `MPITRACE_CLOCK_PER_RANK=1` every rank counts as its own node.
fn sync_comms(rank: c_int) -> (c_int, c_int) {
    let mut node = abi::MPI_COMM_NULL;
    let mut leaders = abi::MPI_COMM_NULL;
    let per_rank = std::env::var("MPITRACE_CLOCK_PER_RANK").is_ok_and(|v| v == "1");
    let mut local = 0;
    // SAFETY: collective calls on the shim's world with live out pointers.
    unsafe {
        if per_rank {
            pmpi::MPI_Comm_split(world(), rank, 0, &mut node);
        } else {
            pmpi::MPI_Comm_split_type(world(), abi::MPI_COMM_TYPE_SHARED, rank, abi::MPI_INFO_NULL, &mut node);
        }
        if node == abi::MPI_COMM_NULL {
            return (node, leaders);
        }
        pmpi::MPI_Comm_rank(node, &mut local);
        let color = if local == 0 { 0 } else { abi::MPI_UNDEFINED };
        pmpi::MPI_Comm_split(world(), color, rank, &mut leaders);
    }
    (node, leaders)
}

/// Offset of this process's clock against world rank 0: node leaders
/// ping-pong with the first leader (best of several round trips), then
/// every leader broadcasts its offset on its node.
fn measure_offset((node, leaders): (c_int, c_int)) -> SyncPoint {
    let now = || clock::mono_ns() as i64;
    let mut result = [0i64; 2];
    if node == abi::MPI_COMM_NULL {
        return SyncPoint { local_ns: now(), offset_ns: 0, rtt_ns: -1 };
    }
    if leaders != abi::MPI_COMM_NULL {
        let (mut leader_rank, mut leader_count) = (0, 0);
        // SAFETY: `leaders` is the shim's own communicator; the out pointers
        // are live locals.
        unsafe {
            pmpi::MPI_Comm_rank(leaders, &mut leader_rank);
            pmpi::MPI_Comm_size(leaders, &mut leader_count);
        }
        if leader_rank == 0 {
            // The first leader answers every ping with its clock.
            for peer in 1..leader_count {
                for _ in 0..SYNC_ROUNDS {
                    recv_i64(peer, leaders);
                    send_i64(now(), peer, leaders);
                }
            }
        } else {
            let mut best_round_trip = i64::MAX;
            for _ in 0..SYNC_ROUNDS {
                let sent_at = now();
                send_i64(sent_at, 0, leaders);
                let first_leader_clock = recv_i64(0, leaders);
                let received_at = now();
                if received_at - sent_at < best_round_trip {
                    best_round_trip = received_at - sent_at;
                    result = [first_leader_clock - (sent_at + received_at) / 2, best_round_trip];
                }
            }
        }
    }
    // SAFETY: collective on the node communicator, two i64 per rank.
    unsafe { pmpi::MPI_Bcast(result.as_mut_ptr() as *mut _, 2, abi::MPI_INT64_T, 0, node) };
    SyncPoint { local_ns: now(), offset_ns: result[0], rtt_ns: result[1] }
}

/// Sends one i64 of the clock synchronization to `peer` of `comm`.
fn send_i64(value: i64, peer: c_int, comm: c_int) {
    // SAFETY: a buffer of one MPI_INT64_T that outlives the blocking send.
    unsafe { pmpi::MPI_Send((&value as *const i64).cast(), 1, abi::MPI_INT64_T, peer, SYNC_TAG, comm) };
}

/// Receives one i64 of the clock synchronization from `peer` of `comm`.
fn recv_i64(peer: c_int, comm: c_int) -> i64 {
    let mut value: i64 = 0;
    // SAFETY: a buffer of one MPI_INT64_T that outlives the blocking
    // receive; MPI_STATUS_IGNORE is the standard's "no status" pointer.
    unsafe {
        pmpi::MPI_Recv(
            (&mut value as *mut i64).cast(),
            1,
            abi::MPI_INT64_T,
            peer,
            SYNC_TAG,
            comm,
            abi::MPI_STATUS_IGNORE as *mut abi::MPI_Status,
        )
    };
    value
}

/// Before `PMPI_Finalize`: second clock measurement, and rank 0 writes
/// `meta.json` from every rank's metadata (gathered).
pub fn before_finalize() {
    let (modules, build_ids) = module_map();
    let (comms, rank, meta) = {
        let g = state();
        let Some(tr) = g.as_ref() else { return };
        (
            tr.sync_comms,
            tr.rank,
            RankMeta {
                process: tr.process.clone(),
                sync_init: tr.sync_init,
                sync_finalize: None,
                finalized: true,
                modules,
                build_ids,
                paths: crate::callpath::table(),
                counters: crate::counters::names(),
            },
        )
    };
    let p = measure_offset(comms);
    let mut meta = meta;
    meta.sync_finalize = Some(p);
    if let Some(tr) = state().as_mut() {
        // Libraries loaded since MPI_Init (dlopen), for the conversion.
        record_modules(tr, meta.modules.clone(), &meta.build_ids);
        tr.write_side(&SideEntry::Sync { phase: "finalize".into(), point: p });
    }
    let mine = serde_json::to_vec(&meta).unwrap_or_default();
    let len = mine.len() as c_int;
    let size = meta.process.size.max(1) as usize;
    let mut lens = vec![0 as c_int; if rank == 0 { size } else { 1 }];
    // SAFETY: gather of one int per rank into `lens` (size ints at the root).
    unsafe {
        pmpi::MPI_Gather(
            &len as *const c_int as *const _,
            1,
            abi::MPI_INT,
            lens.as_mut_ptr() as *mut _,
            1,
            abi::MPI_INT,
            0,
            world(),
        )
    };
    let mut displs = vec![0 as c_int; lens.len()];
    for i in 1..lens.len() {
        displs[i] = displs[i - 1] + lens[i - 1];
    }
    let total = if rank == 0 { displs.last().copied().unwrap_or(0) + lens.last().copied().unwrap_or(0) } else { 1 };
    let mut all = vec![0u8; total.max(1) as usize];
    // SAFETY: counts and displacements describe `all` at the root.
    unsafe {
        pmpi::MPI_Gatherv(
            mine.as_ptr() as *const _,
            len,
            abi::MPI_CHAR,
            all.as_mut_ptr() as *mut _,
            lens.as_ptr(),
            displs.as_ptr(),
            abi::MPI_CHAR,
            0,
            world(),
        )
    };
    let (mut node, mut leaders) = comms;
    // SAFETY: freeing our own communicators.
    unsafe {
        if node != abi::MPI_COMM_NULL {
            pmpi::MPI_Comm_free(&mut node);
        }
        if leaders != abi::MPI_COMM_NULL {
            pmpi::MPI_Comm_free(&mut leaders);
        }
    }
    if rank != 0 {
        return;
    }
    let ranks: Vec<RankMeta> = lens
        .iter()
        .zip(&displs)
        .filter_map(|(&l, &d)| serde_json::from_slice(&all[d as usize..(d + l) as usize]).ok())
        .collect();
    let mut m = Meta::from_ranks(ranks, "finalize");
    m.launch_command =
        std::env::var("MPITRACE_LAUNCH").ok().and_then(|s| serde_json::from_str(&s).ok()).unwrap_or_default();
    let dir = TRACE_OUTPUT.get().map(|(d, _)| d.clone()).unwrap_or_default();
    if let Err(e) = m.write(&dir.join(layout::META)) {
        eprintln!("mpitrace: {e}");
    }
}

/// After `PMPI_Finalize`: stops tracing and converts this rank's journals.
pub fn after_finalize() {
    let prev = MODE.swap(mode::DONE, Ordering::Relaxed);
    if prev != mode::ON && prev != mode::PAUSED {
        return;
    }
    let Some((dir, rank)) = TRACE_OUTPUT.get().cloned() else {
        return;
    };
    if let Some(tr) = state().as_mut() {
        tr.clock_point();
        tr.write_side(&SideEntry::Finalized);
        tr.side = None;
    }
    *crate::state::SHARED_SIDE.lock().unwrap_or_else(|p| p.into_inner()) = None;
    if std::env::var("MPITRACE_NO_CONVERT").is_ok_and(|v| v == "1") {
        return;
    }
    let keep = std::env::var("MPITRACE_KEEP_JOURNALS").is_ok_and(|v| v == "1");
    // The level-of-detail cache too, from the same reading, so a viewer's
    // first frame of the trace needs no reading of it.
    if let Err(e) = trace_lod::convert::convert_rank(&dir, rank, keep) {
        eprintln!(
            "mpitrace: rank {rank}: converting the journals failed: {e}; `mpitrace record` converts them after the job (`mpitrace convert DIR` later)"
        );
    }
}
