//! Several hosts on one machine: network namespaces `mpins1..4` joined by a
//! bridge (10.77.0.1 in the root namespace, 10.77.0.11-14 in the
//! namespaces), each with a host name of its own (`tests/netns/setup.sh`,
//! `tests/netns/agent.sh`). Ranks in different namespaces talk over TCP,
//! ranks in one namespace over shared memory. `mpins4` is the one whose link
//! a test takes down (and up again), so the others stay usable meanwhile.
//!
//! Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2, and for the
//! test over the real ssh client openssh-client and openssh-server (it
//! starts its own sshd in the namespaces): without them the tests fail and
//! say so. The namespaces and the bridge are left in
//! place (setup is idempotent); `tests/netns/setup.sh --remove` deletes them.
//!
//! The namespaces share this machine's cores, so the ranks get
//! `MPICORE_FAKE_HOSTS=1`: the library then counts every rank of the job
//! against this machine's CPUs (no pinning, no busy polling when they are
//! oversubscribed) while host names still differ per namespace.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use system_tests::{bin_dir, compile, root, run_command, Compiler, Run};

const T: Duration = Duration::from_secs(120);

/// Creates the namespaces once; returns the launch agent.
fn agent() -> PathBuf {
    static READY: OnceLock<Result<(), String>> = OnceLock::new();
    let ready = READY.get_or_init(|| {
        let script = root().join("tests/netns/setup.sh");
        match Command::new("sh").arg(&script).arg("4").output() {
            Ok(o) if o.status.success() => Ok(()),
            Ok(o) => Err(String::from_utf8_lossy(&o.stderr).into_owned()),
            Err(e) => Err(format!("cannot run {}: {e}", script.display())),
        }
    });
    if let Err(e) = ready {
        panic!(
            "the multi-host tests need network namespaces: run them as root (CAP_NET_ADMIN, CAP_SYS_ADMIN) \
             with iproute2 installed (apt-get install iproute2); tests/netns/setup.sh said:\n{e}"
        );
    }
    root().join("tests/netns/agent.sh")
}

/// Our mpirun across `hosts` (comma-separated namespaces; empty: the hosts
/// come from `extra`).
fn mpirun(hosts: &str, n: usize, extra: &[&str], prog: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin_dir().join("mpirun"));
    cmd.arg("-launcher-exec").arg(agent()).args(["-n", &n.to_string()]);
    if !hosts.is_empty() {
        cmd.args(["-host", hosts]);
    }
    cmd.args(["-genv", "MPICORE_FAKE_HOSTS", "1"]).args(extra).arg(compile(prog, Compiler::Ours)).args(args);
    cmd.env("MPIEXEC_TIMEOUT", T.as_secs().to_string());
    cmd
}

/// Debian's hydra across `hosts`; its proxies reach it on the bridge.
fn hydra(hosts: &str, n: usize, prog: &str) -> Command {
    let mut cmd = Command::new("mpiexec.mpich");
    cmd.args(["-launcher", "ssh", "-launcher-exec"]).arg(agent());
    cmd.args(["-iface", "mpibr0", "-hosts", hosts, "-n", &n.to_string()]);
    cmd.arg("-genv").arg("LD_LIBRARY_PATH").arg(bin_dir());
    cmd.args(["-genv", "MPICORE_FAKE_HOSTS", "1"]).arg(compile(prog, Compiler::Ours));
    cmd.env("MPIEXEC_TIMEOUT", T.as_secs().to_string());
    cmd
}

/// The p2p and collective programs, the ranks spread over the namespaces.
const PROGRAMS: [(&str, usize, &str); 6] = [
    ("p2p_basic", 4, "p2p_basic OK"),
    ("modes", 4, "modes OK"),
    ("large", 2, "large OK"),
    ("coll_basic", 4, "coll_basic OK"),
    ("coll_nb", 4, "coll_nb OK"),
    ("coll_basic", 3, "coll_basic OK"),
];

#[test]
fn programs_across_namespaces_with_our_mpirun() {
    for (prog, n, expect) in PROGRAMS {
        let hosts = if n == 3 { "mpins1,mpins2,mpins3" } else { "mpins1,mpins2" };
        run_command(mpirun(hosts, n, &[], prog, &[]), T).assert_ok(expect);
    }
    // Blocks of ranks per host: -ppn, and a host file.
    run_command(mpirun("mpins1,mpins2", 4, &["-ppn", "2"], "p2p_basic", &[]), T).assert_ok("p2p_basic OK");
    let file = bin_dir().join(format!("multihost-{}.hosts", std::process::id()));
    std::fs::write(&file, "mpins1:2\nmpins3 slots=2\n").unwrap();
    let r = run_command(mpirun("", 4, &["-hostfile", file.to_str().unwrap()], "coll_nb", &[]), T);
    let _ = std::fs::remove_file(&file);
    r.assert_ok("coll_nb OK");
}

#[test]
fn programs_across_namespaces_under_hydra() {
    for (prog, n, expect) in PROGRAMS {
        let hosts = if n == 3 { "mpins1,mpins2,mpins3" } else { "mpins1,mpins2" };
        run_command(hydra(hosts, n, prog), T).assert_ok(expect);
    }
}

/// Pids printed by `die` as "rank R pid P ppid Q on HOST": (pid, ppid, host).
fn ranks_in(text: &str) -> Vec<(i32, i32, String)> {
    text.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let at = w.iter().position(|&x| x == "rank")?;
            match &w[at..] {
                ["rank", _, "pid", p, "ppid", q, "on", h, ..] => {
                    Some((p.parse().ok()?, q.parse().ok()?, h.to_string()))
                }
                _ => None,
            }
        })
        .collect()
}

fn exists(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

fn assert_all_gone(pids: &[i32]) {
    let start = Instant::now();
    while pids.iter().any(|&p| exists(p)) {
        assert!(start.elapsed() < Duration::from_secs(5), "processes left behind: {pids:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Rank 2 is alone on mpins3 and kills itself: the job ends with its
/// signal, and mpirun names the rank and the host.
#[test]
fn a_rank_killed_on_a_remote_host_ends_the_job() {
    let r = run_command(mpirun("mpins1,mpins2,mpins3", 4, &[], "die", &["2"]), T);
    assert_eq!(r.code, Some(128 + 9), "{r}");
    assert!(r.stderr.contains("mpirun: rank 2 (pid "), "{r}");
    assert!(r.stderr.contains(") on host mpins3 killed by signal 9 (SIGKILL)"), "{r}");
    assert!(r.elapsed < Duration::from_secs(20), "{r}");
    let ranks = ranks_in(&r.stdout);
    assert_eq!(ranks.len(), 4, "{r}");
    assert_eq!(ranks.iter().filter(|(_, _, h)| h == "mpins3").count(), 1, "{r}");
    let mut pids: Vec<i32> = ranks.iter().map(|(p, _, _)| *p).collect();
    pids.extend(ranks.iter().map(|(_, q, _)| *q));
    assert_all_gone(&pids);
}

/// Runs `die` (nobody dies by itself) on `hosts`, calls `cut` with the
/// ranks and mpirun's pid once all have started, and waits for mpirun:
/// returns its run, the
/// time from the cut to its end, and the pids of the ranks and proxies.
fn cut_a_host(hosts: &str, cut: impl FnOnce(&[(i32, i32, String)], i32)) -> (Run, Duration, Vec<i32>) {
    let mut cmd = mpirun(hosts, 4, &[], "die", &[]);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let start = Instant::now();
    let mut child = cmd.spawn().expect("start mpirun");
    let group = child.id() as i32;
    let out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let err_text = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).ok();
        s
    });
    let mut lines = Vec::new();
    while ranks_in(&lines.join("\n")).len() < 4 {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(l) => lines.push(l),
            Err(_) => {
                // SAFETY: the process group this test created.
                unsafe { libc::kill(-group, libc::SIGKILL) };
                panic!("the ranks did not start: {lines:?}");
            }
        }
    }
    let ranks = ranks_in(&lines.join("\n"));
    let cut_at = Instant::now();
    cut(&ranks, group);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > T {
            // SAFETY: as above.
            unsafe { libc::kill(-group, libc::SIGKILL) };
            panic!("mpirun still running after the host was cut off");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = cut_at.elapsed();
    let r = Run {
        code: status.code(),
        stdout: lines.join("\n"),
        stderr: err_text.join().unwrap(),
        elapsed: start.elapsed(),
        pid: child.id(),
    };
    let mut pids: Vec<i32> = ranks.iter().map(|(p, _, _)| *p).collect();
    pids.extend(ranks.iter().map(|(_, q, _)| *q));
    (r, took, pids)
}

/// The proxy on mpins3 is killed: mpirun names the host and the rank that
/// ran there, ends the job with status 1, and no rank is left on any host.
#[test]
fn a_lost_proxy_ends_the_job() {
    let (r, took, pids) = cut_a_host("mpins1,mpins2,mpins3", |ranks, _| {
        let (_, proxy, _) = ranks.iter().find(|(_, _, h)| h == "mpins3").cloned().expect("a rank on mpins3");
        // SAFETY: the proxy this test's mpirun started on mpins3.
        unsafe { libc::kill(proxy, libc::SIGKILL) };
    });
    assert_eq!(r.code, Some(1), "{r}");
    assert!(r.stderr.contains("mpirun: lost the connection to host mpins3 ("), "{r}");
    assert!(r.stderr.contains("while rank(s) 2 ran there; terminating the job"), "{r}");
    assert!(took < Duration::from_secs(10), "{r}");
    assert_all_gone(&pids);
}

/// Host mpins4 goes silent (its link goes down): TCP keep-alive notices,
/// mpirun names the host and ends the job within seconds.
#[test]
fn a_host_that_goes_silent_ends_the_job() {
    let ip = |state: &str| {
        let st = Command::new("ip").args(["-n", "mpins4", "link", "set", "eth0", state]).status();
        assert!(st.is_ok_and(|s| s.success()), "ip -n mpins4 link set eth0 {state} failed");
    };
    agent();
    ip("up");
    let (r, took, pids) = cut_a_host("mpins1,mpins2,mpins4", |_, _| ip("down"));
    ip("up");
    assert_eq!(r.code, Some(1), "{r}");
    assert!(r.stderr.contains("mpirun: lost the connection to host mpins4 ("), "{r}");
    assert!(r.stderr.contains("while rank(s) 2 ran there; terminating the job"), "{r}");
    assert!(took < Duration::from_secs(30), "{r}");
    assert_all_gone(&pids);
}

/// mpirun itself is killed (SIGKILL): the proxies and the ranks on every
/// host go too.
#[test]
fn a_killed_mpirun_leaves_nothing_on_any_host() {
    let (r, _, pids) = cut_a_host("mpins1,mpins2", |_, mpirun| {
        // SAFETY: the mpirun this test started.
        unsafe { libc::kill(mpirun, libc::SIGKILL) };
    });
    assert_eq!(r.code, None, "{r}");
    assert_all_gone(&pids);
}

/// mpirun is killed (SIGKILL) while the first rank on a remote host has
/// made the node's shared-memory segment and waits for the other rank
/// there to map it (which waits first, `MPICORE_TEST_ATTACH_DELAY`): mpirun cannot remove
/// its name from that host's /dev/shm, the proxy there does when its ranks
/// are gone (every host's /dev/shm is its own; here they share one, so the
/// segment's name tells the job).
#[test]
fn a_killed_mpirun_leaves_no_segment_on_a_remote_host() {
    let mut cmd = mpirun("mpins1", 2, &["-genv", "MPICORE_TEST_ATTACH_DELAY", "60"], "coll_basic", &[]);
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).process_group(0);
    let mut child = cmd.spawn().expect("start mpirun");
    let pid = child.id() as i32;
    let ours = || {
        let tag = format!("kvs_{pid}_");
        system_tests::shm_leftovers().into_iter().filter(|n| n.contains(&tag)).collect::<Vec<_>>()
    };
    let start = Instant::now();
    while ours().is_empty() {
        if start.elapsed() > Duration::from_secs(60) || child.try_wait().unwrap().is_some() {
            // SAFETY: the process group this test made.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            panic!("rank 0 never made the node's segment");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: the mpirun this test started (only it: its proxy and ranks
    // must find out by themselves).
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let _ = child.wait();
    let start = Instant::now();
    while !ours().is_empty() {
        if start.elapsed() > Duration::from_secs(30) {
            // SAFETY: as above.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            panic!("left in /dev/shm 30 s after mpirun was killed: {:?}", ours());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A program (compiled from the source below with our `mpicc`) whose rank
/// 0 reads stdin to its end (or `argv[1]` lines) and prints the first three
/// lines back, then the number of lines and bytes and a hash of them; the
/// other ranks say whether their stdin was empty. Every rank names its host.
const STDIN_ECHO: &str = r#"#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    long max = argc > 1 ? atol(argv[1]) : -1;
    if (rank == 0) {
        static char line[1 << 16];
        unsigned long lines = 0, bytes = 0, hash = 0;
        while ((max < 0 || (long)lines < max) && fgets(line, sizeof line, stdin)) {
            size_t n = strlen(line);
            if (n > 0 && line[n - 1] == '\n') lines++;
            bytes += n;
            for (size_t i = 0; i < n; i++) hash = hash * 31 + (unsigned char)line[i];
            if (lines <= 3) printf("echo: %s", line);
        }
        printf("rank 0 on %s read %lu lines %lu bytes hash %lu\n", host, lines, bytes, hash);
    } else {
        printf("rank %d on %s stdin %s\n", rank, host, getchar() == EOF ? "empty" : "not empty");
    }
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
"#;

/// Builds [`STDIN_ECHO`] once.
fn stdin_echo() -> PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        // Compiling any test program builds the library and mpicc first.
        let dir = compile("p2p_basic", Compiler::Ours).parent().unwrap().to_path_buf();
        let src = dir.join(format!("mh_stdin_echo.{}.c", std::process::id()));
        let exe = dir.join("mh_stdin_echo");
        std::fs::write(&src, STDIN_ECHO).unwrap();
        let out =
            Command::new(bin_dir().join("mpicc")).arg("-O1").arg("-o").arg(&exe).arg(&src).output().expect("run mpicc");
        let _ = std::fs::remove_file(&src);
        assert!(out.status.success(), "mpicc failed:\n{}", String::from_utf8_lossy(&out.stderr));
        exe
    })
    .clone()
}

/// Runs `cmd` with `input` written to its stdin by a thread (over and over
/// when `endless`, until the launcher stops reading), in a process group of
/// its own that is killed after `T`.
fn run_with_input(mut cmd: Command, input: Vec<u8>, endless: bool) -> Run {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let start = Instant::now();
    let mut child = cmd.spawn().expect("start mpirun");
    let group = child.id() as i32;
    let mut pipe = child.stdin.take().unwrap();
    std::thread::spawn(move || {
        use std::io::Write;
        while pipe.write_all(&input).is_ok() && endless {}
    });
    let collect = |mut from: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            from.read_to_string(&mut text).ok();
            text
        })
    };
    let out = collect(Box::new(child.stdout.take().unwrap()));
    let err = collect(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > T {
            // SAFETY: the process group this test created.
            unsafe { libc::kill(-group, libc::SIGKILL) };
            let _ = child.wait();
            panic!("mpirun with input still running after {T:?}:\n{}\n{}", out.join().unwrap(), err.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        code: status.code(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        elapsed: start.elapsed(),
        pid: child.id(),
    }
}

/// Our mpirun across namespaces with [`stdin_echo`].
fn mpirun_echo(hosts: &str, n: usize, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin_dir().join("mpirun"));
    cmd.arg("-launcher-exec").arg(agent()).args(["-n", &n.to_string(), "-host", hosts]);
    cmd.args(["-genv", "MPICORE_FAKE_HOSTS", "1"]).arg(stdin_echo()).args(args);
    cmd.env("MPIEXEC_TIMEOUT", T.as_secs().to_string());
    cmd
}

/// Rank 0 runs in namespace mpins1, mpirun in the root namespace: what is
/// piped into mpirun reaches rank 0 through the proxy on mpins1 (all of it,
/// in order, more than the proxy's window of unacknowledged input, and
/// then the end of input), as with MPICH and Open MPI; the ranks on the
/// other hosts read an empty stdin. A rank 0 that reads two lines of
/// endless input and finishes ends the job normally.
#[test]
fn stdin_reaches_rank_0_on_a_remote_host() {
    let mut text = String::from("first line\nsecond line\nthird line\n");
    let mut i = 0;
    while text.len() < 1_200_000 {
        text.push_str(&format!("line {i} of the input, with some more words to make it longer\n"));
        i += 1;
    }
    let lines = text.lines().count();
    let hash = text.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    let r = run_with_input(mpirun_echo("mpins1,mpins2,mpins3", 3, &[]), text.clone().into_bytes(), false);
    assert_eq!(r.code, Some(0), "{r}");
    let got: Vec<&str> = r.stdout.lines().collect();
    let expect = [
        "echo: first line".to_string(),
        "echo: second line".into(),
        "echo: third line".into(),
        format!("rank 0 on mpins1 read {lines} lines {} bytes hash {hash}", text.len()),
    ];
    let rank0: Vec<&str> =
        got.iter().copied().filter(|l| l.starts_with("echo: ") || l.starts_with("rank 0 ")).collect();
    assert_eq!(rank0, expect, "{r}");
    assert!(got.contains(&"rank 1 on mpins2 stdin empty") && got.contains(&"rank 2 on mpins3 stdin empty"), "{r}");
    assert_eq!(got.len(), 6, "{r}");

    let r = run_with_input(mpirun_echo("mpins2,mpins1", 2, &["2"]), b"endless\ninput\n".to_vec(), true);
    assert_eq!(r.code, Some(0), "{r}");
    let mut got: Vec<&str> = r.stdout.lines().collect();
    got.sort();
    let h = "endless\ninput\n".bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    assert_eq!(
        got,
        [
            "echo: endless",
            "echo: input",
            &format!("rank 0 on mpins2 read 2 lines 14 bytes hash {h}"),
            "rank 1 on mpins1 stdin empty"
        ],
        "{r}"
    );
}

/// sshd (OpenSSH) running in network namespaces, for launching over the
/// real `ssh` client: a host key, a user key authorized for root and the
/// configurations are generated in a directory of their own; every sshd
/// listens on a port of this test process (the namespaces are shared with
/// other test runs) and runs in its namespace under that host name (through
/// the agent). Dropping it stops the daemons and removes the directory.
struct Sshd {
    dir: PathBuf,
    daemons: Vec<std::process::Child>,
}

impl Sshd {
    fn start(namespaces: &[(&str, &str)]) -> Sshd {
        for (tool, pkg) in [
            ("/usr/bin/ssh", "openssh-client"),
            ("/usr/bin/ssh-keygen", "openssh-client"),
            ("/usr/sbin/sshd", "openssh-server"),
        ] {
            assert!(
                std::path::Path::new(tool).exists(),
                "the test over real ssh needs {tool}: apt-get install {pkg} (tests/run-all.sh installs it)"
            );
        }
        let agent = agent();
        let dir = std::env::temp_dir().join(format!("mpicore-sshd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // sshd's privilege separation directory.
        std::fs::create_dir_all("/run/sshd").unwrap();
        let mut sshd = Sshd { dir: dir.clone(), daemons: Vec::new() };
        for key in ["host_key", "user_key"] {
            let out = Command::new("/usr/bin/ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-C", key, "-f"])
                .arg(dir.join(key))
                .output()
                .expect("run ssh-keygen");
            assert!(out.status.success(), "ssh-keygen failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).unwrap();
        let port = 20000 + std::process::id() % 20000;
        let d = dir.display();
        let config = format!(
            "Port {port}\nListenAddress 0.0.0.0\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
             PermitRootLogin prohibit-password\nPubkeyAuthentication yes\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile none\nLogLevel VERBOSE\n"
        );
        std::fs::write(dir.join("sshd_config"), config).unwrap();
        let mut client = String::new();
        for (ns, addr) in namespaces {
            client.push_str(&format!("Host {ns}\n  HostName {addr}\n"));
        }
        client.push_str(&format!(
            "Host *\n  Port {port}\n  User root\n  IdentityFile {d}/user_key\n  IdentitiesOnly yes\n  BatchMode yes\n  \
             StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  GlobalKnownHostsFile /dev/null\n  LogLevel ERROR\n"
        ));
        std::fs::write(dir.join("ssh_config"), client).unwrap();
        // The launch agent: the real ssh client with this configuration.
        let wrapper = dir.join("ssh");
        std::fs::write(&wrapper, format!("#!/bin/sh\nexec /usr/bin/ssh -F {d}/ssh_config \"$@\"\n")).unwrap();
        std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        for (ns, _) in namespaces {
            let log = std::fs::File::create(dir.join(format!("sshd-{ns}.log"))).unwrap();
            let child = Command::new(&agent)
                .arg(ns)
                .args(["/usr/sbin/sshd", "-D", "-e", "-f"])
                .arg(dir.join("sshd_config"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .process_group(0)
                .spawn()
                .expect("start sshd");
            sshd.daemons.push(child);
        }
        // Ready when every daemon answers with its SSH banner.
        for (ns, addr) in namespaces {
            let start = Instant::now();
            loop {
                let banner = std::net::TcpStream::connect((*addr, port as u16)).ok().and_then(|s| {
                    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
                    let mut line = String::new();
                    BufReader::new(s).read_line(&mut line).ok()?;
                    Some(line)
                });
                if banner.as_deref().is_some_and(|b| b.starts_with("SSH-2.0-")) {
                    break;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(15),
                    "sshd in {ns} does not answer on {addr}:{port}\n{}",
                    sshd.logs()
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        sshd
    }

    /// The agent to give mpirun and hydra: `ssh` with the generated options.
    fn agent(&self) -> PathBuf {
        self.dir.join("ssh")
    }

    fn logs(&self) -> String {
        let mut s = String::new();
        for e in std::fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".log") {
                s.push_str(&format!("--- {name} ---\n{}\n", std::fs::read_to_string(e.path()).unwrap_or_default()));
            }
        }
        s
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        for d in &mut self.daemons {
            // SAFETY: the process group of a daemon this test started.
            unsafe { libc::kill(-(d.id() as i32), libc::SIGTERM) };
            let _ = d.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The real `ssh` client as the launch agent, sshd in mpins1 and mpins2:
/// our mpirun starts its proxies over ssh (the token travels on ssh's
/// stdin; rank 0's stdin too), and hydra starts its proxies the same way.
#[test]
fn launch_over_real_ssh() {
    let sshd = Sshd::start(&[("mpins1", "10.77.0.11"), ("mpins2", "10.77.0.12")]);
    let ssh = sshd.agent();
    // A command over plain ssh runs in the namespace, under its name.
    let out = Command::new(&ssh).args(["mpins2", "hostname"]).stdin(Stdio::null()).output().expect("run ssh");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "mpins2", "ssh mpins2 hostname: {out:?}\n{}", sshd.logs());

    let mut cmd = Command::new(bin_dir().join("mpirun"));
    cmd.args(["-launcher", "ssh", "-launcher-exec"]).arg(&ssh).args(["-host", "mpins1,mpins2", "-n", "3"]);
    cmd.args(["-genv", "MPICORE_FAKE_HOSTS", "1"]).arg(stdin_echo());
    cmd.env("MPIEXEC_TIMEOUT", T.as_secs().to_string());
    let r = run_with_input(cmd, b"over ssh\n".to_vec(), false);
    assert_eq!(r.code, Some(0), "{r}\n{}", sshd.logs());
    let mut got: Vec<&str> = r.stdout.lines().collect();
    got.sort();
    let h = "over ssh\n".bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    assert_eq!(
        got,
        [
            "echo: over ssh",
            &format!("rank 0 on mpins1 read 1 lines 9 bytes hash {h}"),
            "rank 1 on mpins2 stdin empty",
            "rank 2 on mpins1 stdin empty"
        ],
        "{r}"
    );

    let mut cmd = Command::new(bin_dir().join("mpirun"));
    cmd.args(["-launcher", "ssh", "-launcher-exec"]).arg(&ssh).args(["-host", "mpins1,mpins2", "-n", "4"]);
    cmd.args(["-genv", "MPICORE_FAKE_HOSTS", "1"]).arg(compile("coll_basic", Compiler::Ours));
    cmd.env("MPIEXEC_TIMEOUT", T.as_secs().to_string());
    run_command(cmd, T).assert_ok("coll_basic OK");

    let mut cmd = Command::new("mpiexec.mpich");
    cmd.args(["-launcher", "ssh", "-launcher-exec"]).arg(&ssh);
    cmd.args(["-iface", "mpibr0", "-hosts", "mpins1,mpins2", "-n", "4"]);
    cmd.arg("-genv").arg("LD_LIBRARY_PATH").arg(bin_dir());
    cmd.args(["-genv", "MPICORE_FAKE_HOSTS", "1"]).arg(compile("p2p_basic", Compiler::Ours));
    cmd.env("MPIEXEC_TIMEOUT", T.as_secs().to_string());
    run_command(cmd, T).assert_ok("p2p_basic OK");
}
