//! `mpicc` and `mpicxx`: run the C or C++ compiler with the include and
//! library options of this MPI.

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
}

impl Language {
    fn tool(self) -> &'static str {
        match self {
            Language::C => "mpicc",
            Language::Cxx => "mpicxx",
        }
    }

    /// Environment variables naming the compiler, in order of preference,
    /// and the fallback.
    fn compiler_vars(self) -> (&'static [&'static str], &'static str) {
        match self {
            Language::C => (&["MPICH_CC", "MPICC_CC"], "cc"),
            Language::Cxx => (&["MPICH_CXX", "MPICXX_CXX"], "c++"),
        }
    }

    /// The option that overrides the compiler on the command line.
    fn override_flag(self) -> &'static str {
        match self {
            Language::C => "-cc=",
            Language::Cxx => "-cxx=",
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
    let mut user: Vec<OsString> = Vec::new();
    for arg in args {
        let bytes = arg.as_bytes();
        match bytes {
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
    command.extend(user);
    command.push(flag("-I", inc));
    if links {
        command.push(flag("-L", lib));
        command.push(flag("-Wl,-rpath,", lib));
        command.push("-lmpi".into());
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
  --help, -help         print this text

The compiler is ${vars} (first one set) or '{fallback}'.
",
        what = if lang == Language::C { "C" } else { "C++" },
        ovr = lang.override_flag(),
        vars = vars.join(" or $"),
        inc = inc.display(),
        lib = lib.display(),
    )
}

/// The wrapper's `main`; returns the exit status when it does not replace
/// itself with the compiler.
pub fn main(lang: Language) -> i32 {
    let tool = lang.tool();
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let (inc, lib): (PathBuf, PathBuf) = match paths::exe_dir() {
        Ok(dir) => paths::include_and_lib_dirs(&dir),
        Err(e) => {
            eprintln!("{tool}: {e}");
            return 1;
        }
    };
    let plan = plan(lang, &args, &|k| std::env::var(k).ok(), &inc, &lib);
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
    fn quoting() {
        assert_eq!(shell_quote(OsStr::new("-DX=1")), "-DX=1");
        assert_eq!(shell_quote(OsStr::new("a b")), "'a b'");
        assert_eq!(shell_quote(OsStr::new("it's")), "'it'\\''s'");
        assert_eq!(shell_quote(OsStr::new("")), "''");
    }
}
