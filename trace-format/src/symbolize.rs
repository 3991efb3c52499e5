//! Call sites to function, source file and line.
//!
//! The `site` column holds the return address of the application's call
//! into `MPI_X`, an address of the traced process. The module map of each
//! rank ([`RankMeta::modules`], from `/proc/self/maps` at `MPI_Init`) says
//! which file was mapped there; a [`Symbolizer`] reads that file (or its
//! separate debug file: by build id under `/usr/lib/debug/.build-id/`, or
//! as its `.gnu_debuglink` names it) and turns the
//! address into the function and `file:line` of the call from the DWARF
//! line tables, or into the nearest symbol when the file has no debug
//! information, or into `module+offset` when even that is missing.
//!
//! ```no_run
//! # use trace_format::{Trace, symbolize::Symbolizer};
//! let trace = Trace::open(std::path::Path::new("trace"))?;
//! let mut sym = Symbolizer::new();
//! for r in trace.ranks.values() {
//!     let Some(meta) = &r.meta else { continue };
//!     for e in r.events.iter().filter(|e| e.is_call("MPI_Send")) {
//!         println!("{}", sym.site(meta, e.site.unwrap_or(0)));
//!     }
//! }
//! # Ok::<(), trace_format::Error>(())
//! ```
//!
//! Files are read when first needed and kept open; results are cached per
//! (file, address), so symbolizing every row of a trace costs one lookup per
//! distinct call site. The files must still be there (and unchanged) when
//! the trace is symbolized: a rebuilt executable gives wrong lines, which is
//! detected when the trace recorded the build id of the file that ran.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection, ObjectSegment};

use crate::meta::RankMeta;
use crate::side::Module;

/// A call site, symbolized as far as the files allow.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Site {
    /// The file mapped at the address (executable or shared object); empty
    /// when no module of the rank contains it.
    pub module: String,
    /// The address of the call within the module, as a virtual address of
    /// the file (what `addr2line -e MODULE` takes); the raw address when
    /// the module is unknown.
    pub address: u64,
    /// The function containing the call (the innermost inlined one), from
    /// the debug information or else the symbol table; C++ and Rust names
    /// demangled.
    pub function: Option<String>,
    /// Source file of the call (as the compiler recorded it).
    pub file: Option<String>,
    pub line: Option<u32>,
    pub column: Option<u32>,
    /// Why the site could not be (fully) symbolized, if something went
    /// wrong beyond a mere lack of debug information: the file is missing
    /// or unreadable, or it is not the build that ran.
    pub problem: Option<String>,
}

impl Site {
    /// The file name of the module, without directories.
    pub fn module_name(&self) -> &str {
        self.module.rsplit('/').next().unwrap_or(&self.module)
    }

    /// `file:line` when known.
    pub fn file_line(&self) -> Option<String> {
        let f = self.file.as_deref()?;
        Some(match self.line {
            Some(l) => format!("{f}:{l}"),
            None => f.to_string(),
        })
    }
}

impl fmt::Display for Site {
    /// `main (app.c:19)`, `solve (libsolver.so)`, `libfoo.so+0x1234`, or
    /// `0x7f...` for an address in no known module.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.function, self.file_line()) {
            (Some(func), Some(fl)) => write!(f, "{func} ({fl})"),
            (None, Some(fl)) => write!(f, "{fl}"),
            (Some(func), None) => write!(f, "{func} ({})", self.module_name()),
            (None, None) if self.module.is_empty() => write!(f, "{:#x}", self.address),
            (None, None) => write!(f, "{}+{:#x}", self.module_name(), self.address),
        }
    }
}

/// One file, loaded for symbolization.
struct Loaded {
    /// DWARF and symbols (of the separate debug file when there is one).
    loader: addr2line::Loader,
    /// Loadable segments of the file: (file offset, size in the file,
    /// virtual address).
    segments: Vec<(u64, u64, u64)>,
    /// The GNU build id of the file on disk, lower-case hex.
    build_id: Option<String>,
}

/// Turns call sites into functions and source lines; see the module docs.
#[derive(Default)]
pub struct Symbolizer {
    files: HashMap<String, Result<Loaded, String>>,
    cache: HashMap<(String, u64), Site>,
    /// Build ids the trace recorded, by path (see [`Symbolizer::expect_build_ids`]).
    expected: HashMap<String, String>,
    /// Directory of separate debug files (`.build-id/xx/yyyy.debug`).
    debug_dir: Option<PathBuf>,
}

impl fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Symbolizer").field("files", &self.files.len()).field("cached", &self.cache.len()).finish()
    }
}

impl Symbolizer {
    /// A symbolizer that looks for separate debug files under `/usr/lib/debug`.
    pub fn new() -> Self {
        Symbolizer { debug_dir: Some(PathBuf::from("/usr/lib/debug")), ..Default::default() }
    }

    /// Looks for separate debug files under `dir` instead (`None`: only
    /// next to the file, by its `.gnu_debuglink`).
    pub fn with_debug_dir(dir: Option<&Path>) -> Self {
        Symbolizer { debug_dir: dir.map(Path::to_path_buf), ..Default::default() }
    }

    /// Remembers the build ids a trace recorded (path, id), e.g. from
    /// [`RankMeta::build_ids`] of every rank, so that lookups without an
    /// explicit id ([`Symbolizer::call_at`]) still notice rebuilt files.
    pub fn expect_build_ids<'a>(&mut self, ids: impl IntoIterator<Item = (&'a String, &'a String)>) {
        for (path, id) in ids {
            self.expected.entry(path.clone()).or_insert_with(|| id.clone());
        }
    }

    /// Symbolizes the call whose return address is at file offset
    /// `return_offset` of `path` (what [`RankMeta::locate`] gives for a
    /// `site` value): the byte before it is looked up.
    pub fn call_at(&mut self, path: &str, return_offset: u64) -> Site {
        self.at_offset(path, return_offset.saturating_sub(1), None)
    }

    /// Symbolizes `site`, a value of the `site` column of a rank whose
    /// metadata is `meta`.
    pub fn site(&mut self, meta: &RankMeta, site: u64) -> Site {
        match call_in(&meta.modules, site) {
            Some((path, off)) => {
                let id = meta.build_ids.get(path).map(String::as_str);
                self.at_offset(path, off, id)
            }
            None => self.in_modules(&[], site),
        }
    }

    /// Symbolizes the return address `site` of a process whose executable
    /// mappings were `modules`. The call instruction is the byte before the
    /// return address, so that is what is looked up.
    pub fn in_modules(&mut self, modules: &[Module], site: u64) -> Site {
        match call_in(modules, site) {
            Some((path, off)) => self.at_offset(path, off, None),
            None => Site { address: site, ..Default::default() },
        }
    }

    /// Symbolizes the byte at file offset `offset` of the file `path` (whose
    /// build id was `build_id`, if known; else the one given to
    /// [`Symbolizer::expect_build_ids`], if any).
    pub fn at_offset(&mut self, path: &str, offset: u64, build_id: Option<&str>) -> Site {
        let build_id = build_id.map(str::to_string).or_else(|| self.expected.get(path).cloned());
        let build_id = build_id.as_deref();
        let debug_dir = self.debug_dir.clone();
        let loaded = self.files.entry(path.to_string()).or_insert_with(|| load(Path::new(path), debug_dir.as_deref()));
        let mut site = Site { module: path.to_string(), address: offset, ..Default::default() };
        let l = match loaded {
            Ok(l) => l,
            Err(e) => {
                site.problem = Some(e.clone());
                return site;
            }
        };
        let Some(addr) = l.svma(offset) else {
            site.problem = Some(format!("{path}: offset {offset:#x} is in no loadable segment"));
            return site;
        };
        site.address = addr;
        if let Some(s) = self.cache.get(&(path.to_string(), addr)) {
            return s.clone();
        }
        if let (Some(want), Some(have)) = (build_id, &l.build_id) {
            if !want.eq_ignore_ascii_case(have) {
                site.problem = Some(format!(
                    "{path}: rebuilt since the trace was taken (build id {have}, trace {want}); lines may be wrong"
                ));
            }
        }
        lookup(&l.loader, addr, &mut site);
        self.cache.insert((path.to_string(), addr), site.clone());
        site
    }
}

/// The module containing return address `site` and the file offset of the
/// byte before it (in the call instruction).
fn call_in(modules: &[Module], site: u64) -> Option<(&str, u64)> {
    let m = modules.iter().find(|m| (m.start..m.end).contains(&site))?;
    Some((&m.path, (site - m.start + m.offset).saturating_sub(1)))
}

impl Loaded {
    /// The virtual address of file offset `off`.
    fn svma(&self, off: u64) -> Option<u64> {
        self.segments.iter().find(|&&(o, size, _)| off >= o && off - o < size).map(|&(o, _, vaddr)| off - o + vaddr)
    }
}

/// Fills the function and location of `addr` into `site`.
fn lookup(loader: &addr2line::Loader, addr: u64, site: &mut Site) {
    if let Ok(mut frames) = loader.find_frames(addr) {
        // The first frame is the innermost (inlined) function: the one
        // whose code makes the call.
        if let Ok(Some(frame)) = frames.next() {
            site.function = frame.function.as_ref().and_then(|f| f.demangle().ok()).map(|n| n.into_owned());
            if let Some(loc) = frame.location {
                site.file = loc.file.map(str::to_string);
                site.line = loc.line;
                site.column = loc.column;
            }
        }
    }
    if site.file.is_none() {
        if let Ok(Some(loc)) = loader.find_location(addr) {
            site.file = loc.file.map(str::to_string);
            site.line = loc.line;
            site.column = loc.column;
        }
    }
    if site.function.is_none() {
        site.function = loader.find_symbol(addr).map(|n| addr2line::demangle_auto(n.into(), None).into_owned());
    }
}

/// Opens `path` for symbolization, with the separate debug file of its build
/// id when the file itself has no DWARF.
fn load(path: &Path, debug_dir: Option<&Path>) -> Result<Loaded, String> {
    let bytes = map(path)?;
    let file = object::File::parse(&*bytes).map_err(|e| format!("{}: not an object file: {e}", path.display()))?;
    let segments = file
        .segments()
        .filter_map(|s| {
            let (off, size) = s.file_range();
            (size > 0).then_some((off, size, s.address()))
        })
        .collect();
    let build_id = file.build_id().ok().flatten().map(|id| id.iter().map(|b| format!("{b:02x}")).collect::<String>());
    let has_dwarf = file.section_by_name(".debug_info").is_some_and(|s| s.size() > 0);
    let debug_file = if has_dwarf { None } else { separate_debug_file(path, &file, build_id.as_deref(), debug_dir) };
    drop(file);
    let target = debug_file.as_deref().unwrap_or(path);
    let loader = addr2line::Loader::new(target).map_err(|e| format!("{}: {e}", target.display()))?;
    Ok(Loaded { loader, segments, build_id })
}

/// The separate debug file of `path` (whose object is `file`): by build id
/// under `debug_dir/.build-id/`, or the file its `.gnu_debuglink` names
/// (with a matching CRC) next to it, in `.debug/` next to it, or under
/// `debug_dir` followed by its directory, as gdb looks for them.
fn separate_debug_file(
    path: &Path,
    file: &object::File,
    build_id: Option<&str>,
    debug_dir: Option<&Path>,
) -> Option<PathBuf> {
    if let (Some(id), Some(dir)) = (build_id, debug_dir) {
        if id.len() > 2 {
            let p = dir.join(".build-id").join(&id[..2]).join(format!("{}.debug", &id[2..]));
            if p.exists() {
                return Some(p);
            }
        }
    }
    let (name, crc) = file.gnu_debuglink().ok()??;
    let name = std::str::from_utf8(name).ok()?;
    let dir = path.parent()?;
    let mut candidates = vec![dir.join(name), dir.join(".debug").join(name)];
    if let Some(d) = debug_dir {
        candidates.push(d.join(dir.strip_prefix("/").unwrap_or(dir)).join(name));
    }
    candidates.into_iter().filter(|c| c != path).find(|c| map(c).is_ok_and(|bytes| crc32fast::hash(&bytes) == crc))
}

/// `path` mapped read-only (only the pages looked at are read).
fn map(path: &Path) -> Result<memmap2::Mmap, String> {
    // Module paths come from the trace: a FIFO or device named there is
    // refused rather than opened (or mapped).
    let (f, _) = crate::files::open_regular(path).map_err(|e| e.to_string())?;
    // SAFETY: the mapping is private and read-only; a file truncated by
    // someone else while it is parsed could fault, which is the same risk
    // every debugger and addr2line take with the files they read.
    unsafe { memmap2::Mmap::map(&f) }.map_err(|e| format!("{}: {e}", path.display()))
}

/// The GNU build id of the ELF file at `path`, lower-case hex (`None` when
/// it has none or cannot be read).
pub fn build_id_of(path: &Path) -> Option<String> {
    let bytes = map(path).ok()?;
    let file = object::File::parse(&*bytes).ok()?;
    let id = file.build_id().ok()??;
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_addresses_and_files_say_so() {
        let mut s = Symbolizer::with_debug_dir(None);
        let site = s.in_modules(&[], 0x1234);
        assert_eq!((site.module.as_str(), site.address), ("", 0x1234));
        assert_eq!(site.to_string(), "0x1234");
        let m = Module { start: 0x1000, end: 0x2000, offset: 0, path: "/nonexistent/libgone.so".into() };
        let site = s.in_modules(&[m], 0x1801);
        assert_eq!(site.address, 0x800);
        assert!(site.problem.as_deref().unwrap().contains("/nonexistent/libgone.so"));
        assert_eq!(site.to_string(), "libgone.so+0x800");
        // A file that is not an object file.
        let text = std::env::temp_dir().join(format!("tf-sym-{}.txt", std::process::id()));
        std::fs::write(&text, "not an ELF file").unwrap();
        let m = Module { start: 0x1000, end: 0x2000, offset: 0, path: text.display().to_string() };
        let site = s.in_modules(&[m], 0x1801);
        let _ = std::fs::remove_file(&text);
        let problem = site.problem.as_deref().unwrap_or("");
        assert!(problem.contains("not an object file"), "{site:?}");
        assert_eq!((site.function, site.line), (None, None));
    }

    /// This test binary has DWARF (debug builds): a return address just
    /// after a call in this function resolves to this file and function.
    #[test]
    fn own_code_resolves_to_this_file() {
        let first = line!();
        let modules = own_modules();
        let here = own_code_resolves_to_this_file as *const () as usize as u64;
        let mut s = Symbolizer::with_debug_dir(None);
        let site = s.in_modules(&modules, here + 1);
        assert!(site.problem.is_none(), "{site:?}");
        assert_eq!(
            site.function.as_deref(),
            Some("trace_format::symbolize::tests::own_code_resolves_to_this_file"),
            "{site:?}"
        );
        assert!(site.file.as_deref().is_some_and(|f| f.ends_with("symbolize.rs")), "{site:?}");
        // The entry of the function is the line of its `fn`.
        assert_eq!(site.line, Some(first - 1), "{site:?}");
        // Cached: the same answer again.
        assert_eq!(s.in_modules(&modules, here + 1), site);
    }

    /// A file whose build id differs from the one the trace recorded is
    /// still symbolized, with a warning.
    #[test]
    fn rebuilt_file_is_reported() {
        let modules = own_modules();
        let here = rebuilt_file_is_reported as *const () as usize as u64;
        let m = modules.iter().find(|m| (m.start..m.end).contains(&here)).unwrap();
        let id = build_id_of(Path::new(&m.path)).expect("test binaries have a build id");
        let mut meta = RankMeta { modules: modules.clone(), ..Default::default() };
        meta.build_ids.insert(m.path.clone(), id);
        let good = Symbolizer::with_debug_dir(None).site(&meta, here + 1);
        assert_eq!(good.problem, None);
        meta.build_ids.insert(m.path.clone(), "00ff".into());
        let bad = Symbolizer::with_debug_dir(None).site(&meta, here + 1);
        assert!(bad.problem.as_deref().is_some_and(|p| p.contains("rebuilt")), "{bad:?}");
        assert_eq!((&bad.function, bad.line), (&good.function, good.line));
        // The same through the (path, offset) interface of the analyzers.
        let (path, off) = meta.locate(here + 1).unwrap();
        let mut s = Symbolizer::with_debug_dir(None);
        assert_eq!(s.call_at(path, off), good);
        let mut s = Symbolizer::with_debug_dir(None);
        s.expect_build_ids(&meta.build_ids);
        assert_eq!(s.call_at(path, off), bad);
    }

    /// A shared object without debug information (libc) falls back to its
    /// dynamic symbol table.
    #[test]
    fn symbols_without_dwarf() {
        let modules = own_modules();
        let f = libc::getpid as *const () as usize as u64;
        let mut s = Symbolizer::with_debug_dir(None);
        let site = s.in_modules(&modules, f + 1);
        assert!(site.module_name().starts_with("libc"), "{site:?}");
        assert!(site.function.as_deref().is_some_and(|n| n.contains("getpid")), "{site:?}");
        assert_eq!((site.file.as_deref(), site.problem.as_deref()), (None, None), "{site:?}");
        assert_eq!(site.to_string(), format!("{} ({})", site.function.as_deref().unwrap(), site.module_name()));
    }

    #[test]
    fn symbolizer_moves_between_threads() {
        fn send<T: Send>(_: &T) {}
        send(&Symbolizer::new());
    }

    /// The executable mappings of this process (as the shim records them).
    fn own_modules() -> Vec<Module> {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let (a, b) = f[0].split_once('-')?;
                (f.len() >= 6 && f[1].contains('x') && f[5].starts_with('/')).then(|| Module {
                    start: u64::from_str_radix(a, 16).unwrap(),
                    end: u64::from_str_radix(b, 16).unwrap(),
                    offset: u64::from_str_radix(f[2], 16).unwrap(),
                    path: f[5].to_string(),
                })
            })
            .collect()
    }
}
