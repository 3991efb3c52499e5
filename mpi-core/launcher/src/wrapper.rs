//! `mpicc`, `mpicxx` and `mpifort` (also `mpif90`, `mpif77`): run the C,
//! C++ or Fortran compiler with the include and library options of this MPI.
//! For Fortran, the `mpi` module is compiled from its source (`mpi.f90` next
//! to `mpif.h`) by the program's own compiler on first use, since a `.mod`
//! file can be read only by the compiler (and version) that wrote it.
//!
//! `-mpi-abi` (also `-mpi_abi`; the wrappers `mpicc_abi` and `mpicxx_abi`
//! imply it) builds against the MPI-5 standard ABI instead, as MPICH's
//! wrappers do: `mpi.h` is then the standard ABI's header
//! (`include/mpi_abi/mpi.h`, also installed as `include/mpi_abi.h`) and the
//! program links `libmpi_abi.so.1`. `-mpich-abi` selects the default.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use crate::paths;

/// Which wrapper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    C,
    Cxx,
    Fortran,
}

impl Language {
    fn tool(self) -> &'static str {
        match self {
            Language::C => "mpicc",
            Language::Cxx => "mpicxx",
            Language::Fortran => "mpifort",
        }
    }

    /// Environment variables naming the compiler, in order of preference,
    /// and the fallback.
    fn compiler_vars(self) -> (&'static [&'static str], &'static str) {
        match self {
            Language::C => (&["MPICH_CC", "MPICC_CC"], "cc"),
            Language::Cxx => (&["MPICH_CXX", "MPICXX_CXX"], "c++"),
            Language::Fortran => (&["MPICH_FC", "MPICH_F90", "MPIFORT_FC"], "gfortran"),
        }
    }

    /// The option that overrides the compiler on the command line.
    fn override_flag(self) -> &'static str {
        match self {
            Language::C => "-cc=",
            Language::Cxx => "-cxx=",
            Language::Fortran => "-fc=",
        }
    }
}

/// What the wrapper was asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Run the compiler.
    Run,
    /// Print the command instead (`-show`).
    Show,
    /// Print the command for compiling only (`-compile_info`).
    CompileInfo,
    /// Print the command for compiling and linking (`-link_info`).
    LinkInfo,
    /// Print the usage text.
    Help,
}

/// A compiler command, ready to run or print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub action: Action,
    pub command: Vec<OsString>,
}

/// Arguments that mean "do not link".
const NO_LINK: [&str; 6] = ["-c", "-E", "-S", "-M", "-MM", "-fsyntax-only"];

/// Builds the compiler command from the wrapper's arguments.
/// `getenv` reads the environment; `inc` and `lib` are the MPI directories.
pub fn plan(
    lang: Language,
    args: &[OsString],
    getenv: &dyn Fn(&str) -> Option<String>,
    inc: &Path,
    lib: &Path,
) -> Plan {
    let (vars, fallback) = lang.compiler_vars();
    let mut compiler =
        vars.iter().find_map(|v| getenv(v).filter(|c| !c.trim().is_empty())).unwrap_or_else(|| fallback.to_string());
    let mut action = Action::Run;
    let mut std_abi = false;
    let mut user: Vec<OsString> = Vec::new();
    for arg in args {
        let bytes = arg.as_bytes();
        match bytes {
            b"-mpi-abi" | b"-mpi_abi" => std_abi = true,
            b"-mpich-abi" | b"-mpich_abi" => std_abi = false,
            b"-show" | b"-showme" | b"--showme" => action = Action::Show,
            b"-compile_info" | b"-compile-info" | b"-showme:compile" | b"--showme:compile" => {
                action = Action::CompileInfo
            }
            b"-link_info" | b"-link-info" | b"-showme:link" | b"--showme:link" => action = Action::LinkInfo,
            b"--help" | b"-help" => action = Action::Help,
            _ => {
                if let Some(cc) = bytes.strip_prefix(lang.override_flag().as_bytes()) {
                    compiler = String::from_utf8_lossy(cc).into_owned();
                } else {
                    user.push(arg.clone());
                }
            }
        }
    }
    let links = match action {
        Action::CompileInfo => false,
        Action::LinkInfo => true,
        _ => !user.iter().any(|a| NO_LINK.iter().any(|n| OsStr::new(n) == a)),
    };
    let mut command: Vec<OsString> = compiler.split_whitespace().map(OsString::from).collect();
    if command.is_empty() {
        command.push(fallback.into());
    }
    // gfortran 10 and later refuse calls of one external procedure with
    // different argument types, which every `mpif.h` program makes (choice
    // buffers); MPICH's wrapper passes the same option.
    if lang == Language::Fortran && command[0].to_string_lossy().contains("gfortran") {
        command.push("-fallow-argument-mismatch".into());
    }
    command.extend(user);
    if std_abi {
        // First on the include path: its `mpi.h` is the standard ABI's.
        command.push(flag("-I", &inc.join("mpi_abi")));
    }
    command.push(flag("-I", inc));
    if links {
        command.push(flag("-L", lib));
        command.push(flag("-Wl,-rpath,", lib));
        command.push(if std_abi { "-lmpi_abi" } else { "-lmpi" }.into());
    }
    Plan { action, command }
}

fn flag(prefix: &str, dir: &Path) -> OsString {
    let mut s = OsString::from(prefix);
    s.push(dir.as_os_str());
    s
}

/// Quotes a word for a POSIX shell when it needs it.
pub fn shell_quote(word: &OsStr) -> String {
    let text = word.to_string_lossy();
    let plain = !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b));
    if plain {
        text.into_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

fn usage(lang: Language, inc: &Path, lib: &Path) -> String {
    let tool = lang.tool();
    let (vars, fallback) = lang.compiler_vars();
    format!(
        "\
Usage: {tool} [options] [compiler arguments...]

Runs the {what} compiler with the options needed to build MPI programs:
  <compiler> <arguments> -I{inc} [-L{lib} -Wl,-rpath,{lib} -lmpi]
The link options are left out with -c, -E, -S, -M, -MM or -fsyntax-only.

Options of the wrapper itself:
  -show, -showme        print the compiler command instead of running it
  -compile_info         print the command for compiling only
  -link_info            print the command for compiling and linking
  {ovr}COMPILER        use COMPILER
  -mpi-abi              build against the MPI-5 standard ABI (mpi_abi.h,
                        libmpi_abi.so.1), as `{tool}_abi` does
  -mpich-abi            build against the MPICH ABI (the default)
  --help, -help         print this text

The compiler is ${vars} (first one set) or '{fallback}'.
",
        what = match lang {
            Language::C => "C",
            Language::Cxx => "C++",
            Language::Fortran => "Fortran",
        },
        ovr = lang.override_flag(),
        vars = vars.join(" or $"),
        inc = inc.display(),
        lib = lib.display(),
    )
}

/// The wrapper's `main`; returns the exit status when it does not replace
/// itself with the compiler.
pub fn main(lang: Language) -> i32 {
    main_with(lang, std::env::args_os().skip(1).collect())
}

/// `mpicc_abi`, `mpicxx_abi`: the wrapper with `-mpi-abi` (MPICH's and
/// Open MPI's name for building against the standard ABI).
pub fn main_std_abi(lang: Language) -> i32 {
    let mut args: Vec<OsString> = vec!["-mpi-abi".into()];
    args.extend(std::env::args_os().skip(1));
    main_with(lang, args)
}

fn main_with(lang: Language, args: Vec<OsString>) -> i32 {
    let tool = lang.tool();
    if lang == Language::Fortran && args.iter().any(|a| a == "-mpi-abi" || a == "-mpi_abi") {
        eprintln!("{tool}: the standard ABI (-mpi-abi) is for C and C++; Fortran programs use the MPICH ABI");
        return 1;
    }
    let (inc, lib): (PathBuf, PathBuf) = match paths::exe_dir() {
        Ok(dir) => paths::include_and_lib_dirs(&dir),
        Err(e) => {
            eprintln!("{tool}: {e}");
            return 1;
        }
    };
    let mut plan = plan(lang, &args, &|k| std::env::var(k).ok(), &inc, &lib);
    if lang == Language::Fortran && plan.action != Action::Help {
        match module_dir(&plan.command[0], &inc) {
            Ok(dir) => {
                let at = plan.command.iter().position(|w| w == &flag("-I", &inc)).map_or(plan.command.len(), |i| i + 1);
                plan.command.insert(at, flag("-I", &dir));
                if let Some(at) = plan.command.iter().position(|w| w == "-lmpi") {
                    plan.command.insert(at, dir.join("mpi_f08.o").into_os_string());
                }
            }
            Err(e) => eprintln!("{tool}: warning: the `mpi` module is not available: {e}"),
        }
    }
    match plan.action {
        Action::Help => {
            print!("{}", usage(lang, &inc, &lib));
            0
        }
        Action::Show | Action::CompileInfo | Action::LinkInfo => {
            let line: Vec<String> = plan.command.iter().map(|w| shell_quote(w)).collect();
            println!("{}", line.join(" "));
            0
        }
        Action::Run => {
            if !inc.join("mpi.h").exists() {
                eprintln!("{tool}: warning: {} not found (build mpi-core first)", inc.join("mpi.h").display());
            }
            let err = std::process::Command::new(&plan.command[0]).args(&plan.command[1..]).exec();
            eprintln!("{tool}: cannot run '{}': {err}", plan.command[0].to_string_lossy());
            127
        }
    }
}

/// The directory holding `mpi.mod`, `mpi_f08.mod` and `mpi_f08.o` for
/// `compiler`, compiled from `inc/mpi.f90` and `inc/mpi_f08.f90` if they are
/// not there yet: `inc/fortran/<compiler>-<version>`,
/// or under `$XDG_CACHE_HOME` (`~/.cache`) when `inc` is read-only.
pub fn module_dir(compiler: &OsStr, inc: &Path) -> Result<PathBuf, String> {
    let src = inc.join("mpi.f90");
    if !src.exists() {
        return Err(format!("{} not found (build mpi-core first)", src.display()));
    }
    let version = std::process::Command::new(compiler)
        .arg("-dumpversion")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", compiler.to_string_lossy()))?;
    let name = Path::new(compiler).file_name().unwrap_or(compiler).to_string_lossy().into_owned();
    // The modules' sources are part of the name: a library built again
    // with other modules never uses the old ones.
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for file in ["mpi.f90", "mpi_f08.f90"] {
        let text =
            std::fs::read(inc.join(file)).map_err(|e| format!("cannot read {}: {e}", inc.join(file).display()))?;
        for b in text {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    let id = format!("{name}-{}-{hash:016x}", String::from_utf8_lossy(&version.stdout).trim());
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|c| c.join("mpi-core").join(inc.to_string_lossy().trim_start_matches('/').replace('/', "_")));
    let mut last = String::new();
    for base in std::iter::once(inc.join("fortran")).chain(cache) {
        let dir = base.join(&id);
        if dir.join("mpi_f08.o").exists() {
            return Ok(dir);
        }
        // Compiled in a private directory, then renamed into place: two
        // wrappers running at once both succeed, one rename wins.
        let tmp = base.join(format!(".{id}.{}", std::process::id()));
        if let Err(e) = std::fs::create_dir_all(&tmp) {
            last = format!("cannot create {}: {e}", tmp.display());
            continue;
        }
        // `mpi` declares only (its object is not needed); `mpi_f08` has the
        // handle comparisons, linked into every program (`mpi_f08.o`).
        for (source, object) in [(src.clone(), "mpi.o"), (inc.join("mpi_f08.f90"), "mpi_f08.o")] {
            let out = std::process::Command::new(compiler)
                .args(["-c", "-fallow-argument-mismatch"])
                .arg(&source)
                .arg("-J")
                .arg(&tmp)
                .arg("-o")
                .arg(tmp.join(object))
                .output()
                .map_err(|e| format!("cannot run {}: {e}", compiler.to_string_lossy()))?;
            if !out.status.success() {
                let _ = std::fs::remove_dir_all(&tmp);
                return Err(format!("compiling {} failed: {}", source.display(), String::from_utf8_lossy(&out.stderr)));
            }
        }
        let _ = std::fs::remove_file(tmp.join("mpi.o"));
        if std::fs::rename(&tmp, &dir).is_err() {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        if dir.join("mpi_f08.o").exists() {
            return Ok(dir);
        }
        last = format!("cannot write {}", dir.display());
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(p: &Plan) -> Vec<String> {
        p.command.iter().map(|w| w.to_string_lossy().into_owned()).collect()
    }

    fn mk(lang: Language, args: &[&str], env: &[(&str, &str)]) -> Plan {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        plan(
            lang,
            &args,
            &move |k| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()),
            Path::new("/p/include"),
            Path::new("/p/lib"),
        )
    }

    #[test]
    fn link_and_compile() {
        let p = mk(Language::C, &["-O2", "x.c", "-o", "x"], &[]);
        assert_eq!(p.action, Action::Run);
        assert_eq!(
            words(&p),
            ["cc", "-O2", "x.c", "-o", "x", "-I/p/include", "-L/p/lib", "-Wl,-rpath,/p/lib", "-lmpi"]
        );
        let p = mk(Language::C, &["-c", "x.c"], &[]);
        assert_eq!(words(&p), ["cc", "-c", "x.c", "-I/p/include"]);
        for flag in ["-E", "-S", "-M", "-MM"] {
            assert!(!words(&mk(Language::C, &[flag, "x.c"], &[])).contains(&"-lmpi".to_string()));
        }
    }

    #[test]
    fn compilers() {
        assert_eq!(words(&mk(Language::C, &["-show"], &[("MPICC_CC", "clang")]))[0], "clang");
        assert_eq!(words(&mk(Language::C, &[], &[("MPICH_CC", "gcc-12"), ("MPICC_CC", "clang")]))[0], "gcc-12");
        assert_eq!(words(&mk(Language::Cxx, &[], &[]))[0], "c++");
        assert_eq!(words(&mk(Language::Cxx, &[], &[("MPICH_CXX", "ccache g++")]))[..2], ["ccache", "g++"]);
        assert_eq!(words(&mk(Language::C, &["-cc=tcc", "a.c"], &[]))[..2], ["tcc", "a.c"]);
        assert_eq!(
            words(&mk(Language::Fortran, &["a.f90"], &[])),
            [
                "gfortran",
                "-fallow-argument-mismatch",
                "a.f90",
                "-I/p/include",
                "-L/p/lib",
                "-Wl,-rpath,/p/lib",
                "-lmpi"
            ]
        );
        assert_eq!(
            words(&mk(Language::Fortran, &["-fc=flang", "-c", "a.f90"], &[])),
            ["flang", "-c", "a.f90", "-I/p/include"]
        );
    }

    #[test]
    fn info_actions() {
        let p = mk(Language::C, &["-compile_info"], &[]);
        assert_eq!(p.action, Action::CompileInfo);
        assert_eq!(words(&p), ["cc", "-I/p/include"]);
        let p = mk(Language::C, &["-link_info"], &[]);
        assert_eq!(words(&p), ["cc", "-I/p/include", "-L/p/lib", "-Wl,-rpath,/p/lib", "-lmpi"]);
        assert_eq!(mk(Language::C, &["--help"], &[]).action, Action::Help);
    }

    #[test]
    fn standard_abi() {
        let p = mk(Language::C, &["-mpi-abi", "x.c"], &[]);
        assert_eq!(
            words(&p),
            ["cc", "x.c", "-I/p/include/mpi_abi", "-I/p/include", "-L/p/lib", "-Wl,-rpath,/p/lib", "-lmpi_abi"]
        );
        let p = mk(Language::C, &["-mpi_abi", "-c", "x.c"], &[]);
        assert_eq!(words(&p), ["cc", "-c", "x.c", "-I/p/include/mpi_abi", "-I/p/include"]);
        let p = mk(Language::Cxx, &["-mpi-abi", "-mpich-abi", "x.cc"], &[]);
        assert_eq!(words(&p).last().unwrap(), "-lmpi");
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote(OsStr::new("-DX=1")), "-DX=1");
        assert_eq!(shell_quote(OsStr::new("a b")), "'a b'");
        assert_eq!(shell_quote(OsStr::new("it's")), "'it'\\''s'");
        assert_eq!(shell_quote(OsStr::new("")), "''");
    }
}
