//! The command line of `mpirun`/`mpiexec`, in the spellings users bring from
//! MPICH (hydra) and Open MPI.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};

/// One program of the job (several with MPMD `:` separators).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct App {
    /// Number of ranks running this program.
    pub nprocs: usize,
    /// Program and arguments.
    pub argv: Vec<String>,
    /// `-env K V` for this program only.
    pub env: Vec<(String, String)>,
    /// Working directory (`-wdir`), if not the launcher's.
    pub wdir: Option<PathBuf>,
}

/// Which of the launcher's own environment variables the ranks inherit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvMode {
    /// All of them (default, `-genvall`).
    All,
    /// None (`-genvnone`).
    None,
    /// Only these (`-genvlist a,b`).
    List(Vec<String>),
}

/// A parsed command line that runs a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The programs, in rank order.
    pub apps: Vec<App>,
    /// Variables set for every rank (`-genv`, `-x`).
    pub genv: Vec<(String, String)>,
    /// Which of the launcher's variables pass through.
    pub env_mode: EnvMode,
    /// Hosts named with `-host`/`-hosts`/`-hostfile`.
    pub hosts: Vec<String>,
    /// Prefix output lines with `[rank] `.
    pub tag_output: bool,
    /// Kill the job after this long (`-timeout`, `MPIEXEC_TIMEOUT`).
    pub timeout: Option<Duration>,
    /// Leave `LD_LIBRARY_PATH` alone (`--no-libpath`, `MPIRUN_NO_LIBPATH=1`).
    pub no_libpath: bool,
    /// Print the PMI traffic and launch details on stderr.
    pub verbose: bool,
    /// Ranks per host (`-ppn`), instead of the slots of the host list.
    pub ppn: Option<usize>,
    /// How remote proxies are started: `ssh`, `rsh` or `fork` (`-launcher`).
    pub launcher: Option<String>,
    /// The launch agent program (`-launcher-exec`), run as `AGENT HOST COMMAND...`.
    pub launcher_exec: Option<String>,
}

impl Options {
    /// Total number of ranks.
    pub fn size(&self) -> usize {
        self.apps.iter().map(|a| a.nprocs).sum()
    }
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Help,
    Version,
    Run(Options),
}

/// The usage text; it names every option the parser accepts.
pub fn usage(prog: &str) -> String {
    format!(
        "\
Usage: {prog} [options] program [args...] [: [options] program [args...]]...

Starts the ranks of an MPI job, on this machine or on other hosts, and serves them
PMI-1 (and PMI-2).

Process count and placement:
  -n N, -np N, -c N, --n N, --np N   number of ranks (default 1, or the number of host slots)
  -host H1,H2, -hosts H1,H2, --host H1,H2, -H H1,H2
                                     hosts to run on ('host:slots' gives a host several
                                     consecutive ranks; the list is used round robin)
  -hostfile F, -f F, -machinefile F  read hosts from a file (one per line, 'host:slots')
  -ppn N, -npernode N                N consecutive ranks per host
  -launcher ssh|rsh|fork, -bootstrap X
                                     how proxies start on other hosts (default ssh)
  -launcher-exec P, -bootstrap-exec P
                                     the launch agent, run as 'P HOST COMMAND ARGS...'
  --oversubscribe                    accepted (more ranks than cores is always allowed)
  --bind-to X, -bind-to X, --map-by X, --rank-by X
                                     accepted and ignored
  --allow-run-as-root                accepted
  -disable-auto-cleanup              a rank that fails does not end the job: the others
                                     see MPIX_ERR_PROC_FAILED and may revoke, shrink and go on
                                     (sets MPICORE_ULFM=1 for the ranks)

Environment:
  -genv K V                          set K=V for every rank (also -genv K=V)
  -env K V                           set K=V for the ranks of this program only
  -x K, -x K=V                       pass K (from this environment) or set K=V for every rank
  -genvall                           pass the whole environment (default)
  -genvnone                          pass none of this environment, only what is set explicitly
  -genvlist A,B                      pass only these variables of this environment
  --no-libpath                       do not prepend the MPI library directory to LD_LIBRARY_PATH
                                     (same as MPIRUN_NO_LIBPATH=1)

Output and directories:
  -l, -prepend-rank, --tag-output    prefix every output line of rank R with '[R] '
  -wdir DIR, --wdir DIR, -wd DIR     working directory of the ranks (default: the current one)

Job control:
  -timeout S, --timeout S            kill the job after S seconds (same as MPIEXEC_TIMEOUT=S);
                                     the launcher then exits with status 124
  -v, -verbose, --verbose            print the PMI traffic on stderr
  -h, -help, --help                  print this text
  --version, -version, -V            print the version

Remote hosts: a proxy ('mpirun --proxy', started by the launch agent) runs the ranks of
each host and connects back to one of this machine's addresses (MPIRUN_LAUNCHER_ADDR=a,b
chooses them); it proves itself with a one-time token written on the agent's stdin.

The launcher's stdin goes to rank 0, on this machine or through its proxy on another
host; the other ranks read /dev/null.

Each rank gets PMI_FD, PMI_RANK, PMI_SIZE, MPI_LOCALNRANKS, MPI_LOCALRANKID and
MPICORE_JOB_SECRET. Exit status: 0 when every rank exits 0; the exit code of the first
rank that fails (128+N if killed by signal N); the code given to MPI_Abort; 124 after a
timeout; 128+N when the launcher itself is stopped by signal N.
"
    )
}

/// How many values an option takes.
enum Arity {
    Flag,
    One,
    Two,
}

/// Options a program segment can carry, normalized to one leading dash.
fn arity(name: &str) -> Option<Arity> {
    use Arity::*;
    Some(match name {
        "-n" | "-np" | "-c" | "-host" | "-hosts" | "-H" | "-hostfile" | "-f" | "-machinefile" | "-ppn"
        | "-npernode" | "-bind-to" | "-map-by" | "-rank-by" | "-x" | "-genvlist" | "-wdir" | "-wd" | "-gwdir"
        | "-timeout" | "-launcher" | "-bootstrap" | "-launcher-exec" | "-bootstrap-exec" => One,
        "-genv" | "-env" | "-mca" | "-gmca" => Two,
        "-oversubscribe"
        | "-allow-run-as-root"
        | "-genvall"
        | "-genvnone"
        | "-envall"
        | "-envnone"
        | "-l"
        | "-prepend-rank"
        | "-tag-output"
        | "-no-libpath"
        | "-v"
        | "-verbose"
        | "-h"
        | "-help"
        | "-version"
        | "-V"
        | "-report-bindings"
        | "-q"
        | "-quiet"
        | "-disable-auto-cleanup" => Flag,
        _ => return None,
    })
}

/// Normalizes `--opt` to `-opt` and splits `--opt=value`.
fn split_option(arg: &str) -> (String, Option<String>) {
    let name = if arg.starts_with("--") { &arg[1..] } else { arg };
    if let Some((n, v)) = name.split_once('=') {
        if matches!(arity(n), Some(Arity::One)) {
            return (n.to_string(), Some(v.to_string()));
        }
    }
    (name.to_string(), None)
}

/// The most ranks one job may have: far more than any machine here can
/// start, small enough that the launcher's per-rank tables fit in memory
/// (an absurd count must be a usage error, not a failed allocation).
pub const MAX_RANKS: usize = 1 << 20;

/// A positive count up to [`MAX_RANKS`]; `Err(true)` if it is larger,
/// `Err(false)` if it is no positive number.
fn bounded_count(v: &str) -> std::result::Result<usize, bool> {
    match v.trim().parse::<u128>() {
        Ok(n) if n > MAX_RANKS as u128 => Err(true),
        Ok(n) if n > 0 => Ok(n as usize),
        _ => Err(false),
    }
}

fn parse_count(opt: &str, v: &str) -> Result<usize> {
    bounded_count(v).map_err(|too_big| {
        Error::Usage(if too_big {
            format!("{opt} {v}: too many ranks (at most {MAX_RANKS} in one job)")
        } else {
            format!("{opt} needs a positive number of ranks, got '{v}'")
        })
    })
}

/// A host's slot count of `host:N`, bounded like a rank count (the launcher
/// lists each slot).
fn parse_slots(entry: &str, s: &str) -> Result<usize> {
    bounded_count(s).map_err(|too_big| {
        Error::Usage(if too_big {
            format!("host entry '{entry}': too many slots (at most {MAX_RANKS})")
        } else {
            format!("bad slot count in host entry '{entry}'")
        })
    })
}

/// Parses a number of seconds (`10`, `2.5`).
pub fn parse_timeout(what: &str, v: &str) -> Result<Duration> {
    match v.trim().parse::<f64>() {
        Ok(s) if s > 0.0 && s.is_finite() && s < 1e9 => Ok(Duration::from_secs_f64(s)),
        _ => Err(Error::Usage(format!("{what} needs a positive number of seconds, got '{v}'"))),
    }
}

/// Splits `K=V`; `None` when there is no `=`.
fn split_kv(s: &str) -> Option<(String, String)> {
    s.split_once('=').map(|(k, v)| (k.to_string(), v.to_string()))
}

fn check_var_name(opt: &str, k: &str) -> Result<()> {
    if k.is_empty() || k.contains('=') || k.contains('\0') {
        return Err(Error::Usage(format!("{opt}: '{k}' is not a valid variable name")));
    }
    Ok(())
}

/// Host names of a `-host` list: `a,b:2` gives `a` and `b` twice.
fn parse_hosts(list: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (host, slots) = match entry.rsplit_once(':') {
            Some((h, s)) if !h.is_empty() => (h, parse_slots(entry, s)?),
            _ => (entry, 1),
        };
        if out.len() + slots > MAX_RANKS {
            return Err(Error::Usage(format!("too many host slots (at most {MAX_RANKS})")));
        }
        out.extend(std::iter::repeat_n(host.to_string(), slots));
    }
    Ok(out)
}

/// Host names of a host file: one `host[:slots]` (or `host slots=N`) a line,
/// `#` comments.
fn parse_hostfile(path: &str) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(format!("cannot read host file '{path}'"), e))?;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or("");
        let slots = words.find_map(|w| w.strip_prefix("slots=")).map(|s| format!(":{s}")).unwrap_or_default();
        out.extend(parse_hosts(&format!("{first}{slots}"))?);
        if out.len() > MAX_RANKS {
            return Err(Error::Usage(format!("host file '{path}': too many slots (at most {MAX_RANKS})")));
        }
    }
    Ok(out)
}

/// The per-segment state while parsing.
#[derive(Default)]
struct Segment {
    nprocs: Option<usize>,
    env: Vec<(String, String)>,
    hosts: Vec<String>,
}

/// Parses the arguments after the program name. `getenv` looks up the
/// launcher's environment (for `-x K`, `MPIEXEC_TIMEOUT`, `MPIRUN_NO_LIBPATH`).
pub fn parse(args: &[String], getenv: &dyn Fn(&str) -> Option<String>) -> Result<Command> {
    let mut opts = Options {
        apps: Vec::new(),
        genv: Vec::new(),
        env_mode: EnvMode::All,
        hosts: Vec::new(),
        tag_output: false,
        timeout: None,
        no_libpath: getenv("MPIRUN_NO_LIBPATH").is_some_and(|v| !v.is_empty() && v != "0"),
        verbose: false,
        ppn: None,
        launcher: None,
        launcher_exec: None,
    };
    // As with MPICH, an empty or zero MPIEXEC_TIMEOUT means no limit.
    if let Some(t) = getenv("MPIEXEC_TIMEOUT").filter(|t| !t.trim().is_empty() && t.trim().parse::<f64>() != Ok(0.0)) {
        opts.timeout = Some(parse_timeout("MPIEXEC_TIMEOUT", &t)?);
    }
    let mut wdir: Option<PathBuf> = None;
    let mut seg = Segment::default();
    let mut after_colon = false;
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg == ":" {
            return Err(Error::Usage("':' must follow a program and its arguments".into()));
        }
        if !arg.starts_with('-') || arg == "-" {
            // The program: everything up to the next ':' is its command line.
            let end = args[i..].iter().position(|a| a == ":").map_or(args.len(), |p| i + p);
            let argv = args[i..end].to_vec();
            let seg_done = std::mem::take(&mut seg);
            let slots = if seg_done.hosts.is_empty() { opts.hosts.len() } else { seg_done.hosts.len() };
            opts.hosts.extend(seg_done.hosts);
            opts.apps.push(App {
                nprocs: seg_done.nprocs.unwrap_or(slots.max(1)),
                argv,
                env: seg_done.env,
                wdir: wdir.clone(),
            });
            i = end + 1;
            after_colon = end < args.len();
            continue;
        }
        if arg == "--" {
            i += 1;
            if i >= args.len() || args[i].starts_with('-') && args[i] != "-" {
                return Err(Error::Usage("'--' must be followed by the program to run".into()));
            }
            continue;
        }
        let (name, inline) = split_option(arg);
        let Some(ar) = arity(&name) else {
            return Err(Error::Usage(format!("unknown option '{arg}' (see --help)")));
        };
        let need = match ar {
            Arity::Flag => 0,
            Arity::One => usize::from(inline.is_none()),
            Arity::Two => 2,
        };
        if i + need >= args.len() {
            return Err(Error::Usage(format!("option '{arg}' needs {need} value(s)")));
        }
        let mut vals: Vec<String> = args[i + 1..i + 1 + need].to_vec();
        if let Some(v) = inline {
            vals.insert(0, v);
        }
        // `-genv K=V` / `-env K=V` in one word.
        if matches!(ar, Arity::Two) && (name == "-genv" || name == "-env") && vals[0].contains('=') {
            vals.truncate(1);
            i += 1 + 1;
        } else {
            i += 1 + need;
        }
        let v0 = vals.first().map(String::as_str).unwrap_or("");
        match name.as_str() {
            "-h" | "-help" => return Ok(Command::Help),
            "-version" | "-V" => return Ok(Command::Version),
            "-n" | "-np" | "-c" => seg.nprocs = Some(parse_count(arg, v0)?),
            "-host" | "-hosts" | "-H" => seg.hosts.extend(parse_hosts(v0)?),
            "-hostfile" | "-f" | "-machinefile" => seg.hosts.extend(parse_hostfile(v0)?),
            "-ppn" | "-npernode" => opts.ppn = Some(parse_count(arg, v0)?),
            "-launcher" | "-bootstrap" => match v0 {
                "ssh" | "rsh" | "fork" => opts.launcher = Some(v0.to_string()),
                _ => return Err(Error::Usage(format!("{arg}: unknown launcher '{v0}' (ssh, rsh or fork)"))),
            },
            "-launcher-exec" | "-bootstrap-exec" => opts.launcher_exec = Some(v0.to_string()),
            "-genv" | "-env" => {
                let (k, v) = match split_kv(v0) {
                    Some(kv) if vals.len() == 1 => kv,
                    _ => (v0.to_string(), vals.get(1).cloned().unwrap_or_default()),
                };
                check_var_name(arg, &k)?;
                if name == "-genv" { &mut opts.genv } else { &mut seg.env }.push((k, v));
            }
            "-x" => {
                let (k, v) = match split_kv(v0) {
                    Some(kv) => kv,
                    None => match getenv(v0) {
                        Some(v) => (v0.to_string(), v),
                        None => {
                            // Open MPI warns and goes on; so do we.
                            eprintln!("mpirun: warning: -x {v0}: the variable is not set here; not passed");
                            continue;
                        }
                    },
                };
                check_var_name(arg, &k)?;
                opts.genv.push((k, v));
            }
            "-genvall" | "-envall" => opts.env_mode = EnvMode::All,
            "-genvnone" | "-envnone" => opts.env_mode = EnvMode::None,
            "-genvlist" => {
                opts.env_mode =
                    EnvMode::List(v0.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect())
            }
            "-l" | "-prepend-rank" | "-tag-output" => opts.tag_output = true,
            "-wdir" | "-wd" | "-gwdir" => wdir = Some(PathBuf::from(v0)),
            "-timeout" => opts.timeout = Some(parse_timeout(arg, v0)?),
            "-no-libpath" => opts.no_libpath = true,
            "-v" | "-verbose" => opts.verbose = true,
            // Process failures tolerated (MPICH's option): the ranks learn it
            // from the variable, the launcher from the ranks' environment.
            "-disable-auto-cleanup" => opts.genv.push(("MPICORE_ULFM".into(), "1".into())),
            // Accepted for compatibility; nothing to do on one machine.
            _ => {}
        }
    }
    if after_colon {
        return Err(Error::Usage("no program after the last ':'".into()));
    }
    if opts.apps.is_empty() {
        return Err(Error::Usage("no program to run (see --help)".into()));
    }
    // Each program's count is bounded; so is their sum (`-n A prog : -n B prog`).
    let total = opts.apps.iter().try_fold(0usize, |t, a| t.checked_add(a.nprocs).filter(|&t| t <= MAX_RANKS));
    if total.is_none() {
        return Err(Error::Usage(format!("too many ranks in all (at most {MAX_RANKS} in one job)")));
    }
    Ok(Command::Run(opts))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &str) -> Options {
        match parse_env(args, &[]) {
            Ok(Command::Run(o)) => o,
            other => panic!("{args}: {other:?}"),
        }
    }

    fn parse_env(args: &str, env: &[(&str, &str)]) -> Result<Command> {
        let args: Vec<String> = args.split_whitespace().map(String::from).collect();
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        parse(&args, &move |k| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn disable_auto_cleanup_tolerates_failures() {
        let o = run("-disable-auto-cleanup -n 4 ./a.out");
        assert_eq!(o.size(), 4);
        assert!(o.genv.contains(&("MPICORE_ULFM".into(), "1".into())));
        assert!(run("--disable-auto-cleanup -n 2 prog").genv.iter().any(|(k, _)| k == "MPICORE_ULFM"));
        assert!(run("-n 2 prog").genv.is_empty());
    }

    #[test]
    fn counts_and_program() {
        let o = run("-n 4 ./a.out -n 2 x");
        assert_eq!(o.apps.len(), 1);
        assert_eq!(o.apps[0].nprocs, 4);
        assert_eq!(o.apps[0].argv, ["./a.out", "-n", "2", "x"]);
        assert_eq!(run("-np 3 prog").size(), 3);
        assert_eq!(run("--np=5 prog").size(), 5);
        assert_eq!(run("--n 2 prog").size(), 2);
        assert_eq!(run("prog").size(), 1);
        assert_eq!(run("--host localhost,localhost:2 prog").size(), 3);
        assert!(parse_env("-n 0 prog", &[]).is_err());
        // Absurd counts are usage errors (issue 20.5), never an allocation.
        assert_eq!(run(&format!("-n {MAX_RANKS} prog")).size(), MAX_RANKS);
        for bad in [
            "-n 99999999999 prog".to_string(),
            "-n 99999999999999999999999 prog".into(),
            format!("-n {} prog", MAX_RANKS + 1),
            format!("-n {MAX_RANKS} prog : -n 1 prog"),
            "--host a:99999999999 prog".into(),
            "-ppn 99999999999 prog".into(),
        ] {
            assert!(matches!(parse_env(&bad, &[]), Err(Error::Usage(m)) if m.contains("at most")), "{bad}");
        }
        assert!(parse_env("-n x prog", &[]).is_err());
        assert!(parse_env("-n", &[]).is_err());
        assert!(parse_env("-n 2", &[]).is_err());
        assert!(parse_env("--bogus prog", &[]).is_err());
    }

    #[test]
    fn environment_options() {
        let o = parse_env("-genv A 1 -genv B=2 -x C -x D=4 -x NOPE -env E 5 prog", &[("C", "3")]).unwrap();
        let Command::Run(o) = o else { panic!() };
        let genv: Vec<_> = o.genv.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(genv, ["A=1", "B=2", "C=3", "D=4"]);
        assert_eq!(o.apps[0].env, [("E".to_string(), "5".to_string())]);
        assert_eq!(o.env_mode, EnvMode::All);
        assert_eq!(run("-genvnone prog").env_mode, EnvMode::None);
        assert_eq!(run("-genvlist A,B prog").env_mode, EnvMode::List(vec!["A".into(), "B".into()]));
    }

    #[test]
    fn flags() {
        let o = run("-l --oversubscribe --allow-run-as-root --bind-to core -bind-to none -ppn 2 -wdir /tmp prog");
        assert!(o.tag_output);
        assert_eq!(o.apps[0].wdir, Some(PathBuf::from("/tmp")));
        assert!(run("--tag-output prog").tag_output);
        assert!(run("-prepend-rank prog").tag_output);
        assert_eq!(parse_env("--help", &[]).unwrap(), Command::Help);
        assert_eq!(parse_env("-h", &[]).unwrap(), Command::Help);
        assert_eq!(parse_env("--version", &[]).unwrap(), Command::Version);
    }

    #[test]
    fn mpmd() {
        let o = run("-n 2 -env A 1 a x : -n 3 b y z");
        assert_eq!(o.apps.len(), 2);
        assert_eq!(o.apps[0].argv, ["a", "x"]);
        assert_eq!(o.apps[1].argv, ["b", "y", "z"]);
        assert_eq!(o.apps[1].nprocs, 3);
        assert!(o.apps[1].env.is_empty());
        assert_eq!(o.size(), 5);
        assert!(parse_env("-n 2 a :", &[]).is_err());
        assert!(parse_env("-n 2 a : -n 1", &[]).is_err());
    }

    #[test]
    fn timeout_and_libpath() {
        let Command::Run(o) = parse_env("prog", &[("MPIEXEC_TIMEOUT", "7"), ("MPIRUN_NO_LIBPATH", "1")]).unwrap()
        else {
            panic!()
        };
        assert_eq!(o.timeout, Some(Duration::from_secs(7)));
        assert!(o.no_libpath);
        assert!(parse_env("prog", &[("MPIEXEC_TIMEOUT", "soon")]).is_err());
        let Command::Run(o) = parse_env("prog", &[("MPIEXEC_TIMEOUT", "0")]).unwrap() else { panic!() };
        assert_eq!(o.timeout, None);
        assert_eq!(run("-timeout 2.5 prog").timeout, Some(Duration::from_millis(2500)));
        assert!(run("--no-libpath prog").no_libpath);
    }

    #[test]
    fn usage_lists_options() {
        let text = usage("mpirun");
        for opt in [
            "-np",
            "-host",
            "-ppn",
            "-genv",
            "-env",
            "-x",
            "-genvall",
            "-genvnone",
            "-l",
            "-wdir",
            "--oversubscribe",
            "--allow-run-as-root",
            "--bind-to",
            "--version",
            "--help",
            "--tag-output",
            "-prepend-rank",
        ] {
            assert!(text.contains(opt), "{opt}");
        }
    }
}
