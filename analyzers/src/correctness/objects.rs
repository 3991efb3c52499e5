//! MPI objects a rank made and did not free before `MPI_Finalize` (groups,
//! datatypes, windows, files, info objects), and send buffers changed
//! while their nonblocking send ran (`--check-buffers`).
//!
//! Which calls make and free which object comes from the API table: a call
//! with an output handle of the kind makes one, a call with an in-out
//! handle frees one (`MPI_Type_commit` excepted). The shim records the
//! handle in `aux` (groups, datatypes, info objects) or `seq` (windows,
//! files).

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use mpi_api::abi;
use mpi_api::table::Dir;
use trace_format::record::Kind;
use trace_format::Trace;

use super::SiteFn;
use crate::live::base_name;

/// Kinds of objects checked, with their rule and their name in findings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Obj {
    Group,
    Datatype,
    Window,
    File,
    Info,
}

impl Obj {
    pub fn rule(self) -> &'static str {
        match self {
            Obj::Group => "group-not-freed",
            Obj::Datatype => "datatype-not-freed",
            Obj::Window => "window-not-freed",
            Obj::File => "file-not-closed",
            Obj::Info => "info-not-freed",
        }
    }

    fn noun(self) -> (&'static str, &'static str) {
        match self {
            Obj::Group => ("group", "groups"),
            Obj::Datatype => ("datatype", "datatypes"),
            Obj::Window => ("window", "windows"),
            Obj::File => ("file", "files"),
            Obj::Info => ("info object", "info objects"),
        }
    }

    fn freed(self) -> &'static str {
        if self == Obj::File {
            "closed"
        } else {
            "freed"
        }
    }

    fn of_kind(kind: &str) -> Option<Obj> {
        Some(match kind {
            "GROUP" => Obj::Group,
            "DATATYPE" => Obj::Datatype,
            "WINDOW" => Obj::Window,
            "FILE" => Obj::File,
            "INFO" => Obj::Info,
            _ => return None,
        })
    }
}

/// What a call does to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Effect {
    Make(Obj),
    Free(Obj),
}

/// Calls that make or free a checked object, from the API table.
fn effects() -> &'static HashMap<&'static str, Effect> {
    static MAP: OnceLock<HashMap<&'static str, Effect>> = OnceLock::new();
    MAP.get_or_init(|| {
        // Handles MPI hands out that the program must not free (predefined
        // in all but name), or several outputs of which the shim keeps one.
        const NOT_OWNED: &[&str] = &[
            "MPI_Type_match_size",
            "MPI_Type_get_value_index",
            "MPI_Type_get_contents",
            "MPI_File_get_view",
            "MPI_Type_commit",
        ];
        let mut m = HashMap::new();
        for p in mpi_api::table::procedures() {
            let base = p.name.strip_suffix("_c").unwrap_or(p.name);
            if NOT_OWNED.contains(&base)
                || ["MPI_Type_create_f90", "MPI_T_", "MPI_Abi_"].iter().any(|x| base.starts_with(x))
            {
                continue;
            }
            let effect = p.params.iter().filter(|q| q.suffix.is_empty()).find_map(|q| match q.dir {
                Dir::Out => Obj::of_kind(q.kind).map(Effect::Make),
                Dir::InOut => Obj::of_kind(q.kind).map(Effect::Free),
                Dir::In => None,
            });
            if let Some(e) = effect {
                m.insert(p.name, e);
            }
        }
        m
    })
}

/// Handles that are predefined objects (never made, never freed).
fn predefined(obj: Obj, h: i64) -> bool {
    let Ok(h32) = i32::try_from(h) else { return false };
    match obj {
        Obj::Group => abi::predefined_name(abi::CType::Group, h32).is_some(),
        Obj::Datatype => abi::builtin_type_size(h32).is_some(),
        Obj::Info => abi::predefined_name(abi::CType::Info, h32).is_some(),
        Obj::Window | Obj::File => false,
    }
}

/// Objects each rank that called `MPI_Finalize` made and did not free,
/// per kind; those made at one call site by one rank are counted in one
/// finding.
pub(super) fn objects_left(t: &Trace, site: &mut SiteFn) -> BTreeMap<Obj, Vec<String>> {
    let mut out: BTreeMap<Obj, Vec<String>> = BTreeMap::new();
    for (&r, rt) in &t.ranks {
        let mut rows: Vec<&trace_format::Event> = rt.events.iter().filter(|e| e.kind == Kind::Call).collect();
        rows.sort_by_key(|e| e.t_start);
        let mut made: HashMap<(Obj, i64), &trace_format::Event> = HashMap::new();
        let mut finalized = false;
        for e in rows {
            let name = base_name(&e.call);
            if name == "MPI_Finalize" {
                finalized = true;
                break;
            }
            if e.rc != Some(0) {
                continue;
            }
            let Some(&effect) = effects().get(&*e.call) else { continue };
            let (Effect::Make(obj) | Effect::Free(obj)) = effect;
            let handle = match obj {
                Obj::Window | Obj::File => e.seq,
                _ => e.aux.map(i64::from),
            };
            let Some(h) = handle.filter(|&h| !predefined(obj, h)) else { continue };
            match effect {
                Effect::Make(_) => {
                    made.insert((obj, h), e);
                }
                Effect::Free(_) => {
                    made.remove(&(obj, h));
                }
            }
        }
        if !finalized {
            continue;
        }
        // (kind, call, site) -> how many, first made.
        let mut groups: BTreeMap<(Obj, String, String), (usize, i64)> = BTreeMap::new();
        for ((obj, _), e) in made {
            let g = groups.entry((obj, e.call.to_string(), site(r, e))).or_insert((0, e.t_start));
            g.0 += 1;
            g.1 = g.1.min(e.t_start);
        }
        let mut list: Vec<_> = groups.into_iter().collect();
        list.sort_by_key(|((obj, ..), (_, t))| (*obj, *t));
        for ((obj, call, at), (n, _)) in list {
            let (one, many) = obj.noun();
            let text = if n == 1 {
                format!("rank {r}: the {one} made by {call}{at} was not {}", obj.freed())
            } else {
                format!("rank {r}: {n} {many} made by {call}{at} were not {}", obj.freed())
            };
            out.entry(obj).or_default().push(text);
        }
    }
    out
}

/// Nonblocking sends and collectives whose send buffer changed between
/// their start and their completion: the shim (with `MPITRACE_CHECK_BUFFERS=1`) sets `aux` of
/// the completion row to 1 when the checksums differ, 0 when they agree.
pub(super) fn send_buffers_modified(
    t: &Trace,
    comms: &HashMap<u64, trace_format::side::CommInfo>,
    site: &mut SiteFn,
) -> Vec<String> {
    let mut out = Vec::new();
    for (&r, rt) in &t.ranks {
        // The row that started each request (per thread, in order).
        let mut started: HashMap<(i32, i32), &trace_format::Event> = HashMap::new();
        // The call whose completion rows follow (the Wait or Test).
        let mut last_call: Option<&trace_format::Event> = None;
        for e in &rt.events {
            match e.kind {
                Kind::Call => {
                    if let Some(h) = e.request {
                        let name = base_name(&e.call);
                        let sends = crate::live::is_send(name)
                            || name.ends_with("send_init")
                            || name == "MPI_Isendrecv"
                            || crate::live::is_collective(e);
                        if sends {
                            started.insert((e.thread, h), e);
                        }
                    }
                    last_call = Some(e);
                }
                Kind::Completion if e.aux == Some(1) => {
                    let Some(h) = e.request else { continue };
                    let Some(s) = started.get(&(e.thread, h)) else { continue };
                    let waited = last_call.map(|w| format!(" (found at {}{})", w.call, site(r, w))).unwrap_or_default();
                    let (whose, what) =
                        if crate::live::is_collective(s) { ("send buffer", "collective") } else { ("buffer", "send") };
                    out.push(format!(
                        "rank {r}: the {whose} of {}{} was written to before the {what} completed{waited}",
                        crate::hang::describe(s, comms),
                        site(r, s)
                    ));
                }
                _ => {}
            }
        }
    }
    out
}
