//! The TCP transport, on one machine: `MPICORE_FAKE_HOSTS=k` splits the ranks
//! into k "hosts" that talk over TCP (loopback and the machine's addresses)
//! instead of shared memory. (Real multi-host runs use network namespaces;
//! see `multihost.rs`.)

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use system_tests::{bin_dir, compile, run, Compiler, Launcher};

const T: Duration = Duration::from_secs(120);

fn over_tcp(name: &str, sizes: &[usize], expect: &str) {
    let exe = compile(name, Compiler::Ours);
    for &n in sizes {
        for hosts in ["2", "3"] {
            run(Launcher::Ours, n, &exe, &[], &[("MPICORE_FAKE_HOSTS", hosts)], T).assert_ok(expect);
        }
    }
}

#[test]
fn point_to_point_over_tcp() {
    over_tcp("p2p_basic", &[3, 4], "p2p_basic OK");
    over_tcp("modes", &[4], "modes OK");
    over_tcp("probe", &[3], "probe OK");
    over_tcp("cancel", &[3], "cancel OK");
    over_tcp("waitsome", &[4], "waitsome OK");
    over_tcp("p2p_mpi4", &[3], "p2p_mpi4 OK");
}

/// The blocking receive that reads a remote peer's socket directly: the
/// cases of the shared-memory fast path (tags out of order, a posted Irecv
/// first, truncation, synchronous, rendezvous, zero bytes, a long ping-pong)
/// between hosts, then shared-memory and TCP peers mixed (ANY_SOURCE, a local
/// message arriving during a remote wait, a wait only this rank's own
/// progress can end, cancel and probe, records partly written).
#[test]
fn direct_receive_from_remote_peers() {
    over_tcp("p2p_direct", &[2, 4], "p2p_direct OK");
    // The eager limit between hosts (64 KiB by default) moved: the 80000-byte
    // message eager (read whole from the socket), or even 12 bytes by
    // rendezvous.
    let exe = compile("p2p_direct", Compiler::Ours);
    for limit in ["100000", "8"] {
        let env = [("MPICORE_FAKE_HOSTS", "2"), ("MPICORE_TCP_EAGER_LIMIT", limit)];
        run(Launcher::Ours, 2, &exe, &[], &env, T).assert_ok("p2p_direct OK");
    }
    let exe = compile("tcp_direct", Compiler::Ours);
    for env in [&[("MPICORE_FAKE_HOSTS", "2")][..], &[("MPICORE_FAKE_HOSTS", "2"), ("MPICORE_NO_CMA", "1")]] {
        run(Launcher::Ours, 4, &exe, &[], env, T).assert_ok("tcp_direct OK");
    }
}

/// Both ranks of every pair connect at once (bursts to every remote rank
/// before anyone receives): the higher rank moves to the lower one's
/// connection in the middle of its burst, every burst arrives complete and
/// in order, and afterwards each pair shares one connection. Beyond one
/// socket per remote peer a rank holds the listener, the wake socket and
/// the launcher's socket (open twice on some ranks): 4 or 5. With a
/// connection per direction the 6-rank run has 8 or 9.
#[test]
fn simultaneous_connects_end_with_one_connection_per_pair() {
    let exe = compile("tcp_switch", Compiler::Ours);
    for (n, hosts) in [(2, "2"), (4, "2"), (6, "3")] {
        let r = run(Launcher::Ours, n, &exe, &[], &[("MPICORE_FAKE_HOSTS", hosts)], T);
        r.assert_ok("tcp_switch OK");
        let line = r.stdout.lines().find(|l| l.contains("tcp_switch OK")).unwrap();
        let most: usize = line.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(most <= 5, "{n} ranks: up to {most} sockets beyond one per remote peer: {line}");
    }
}

#[test]
fn large_messages_stream_over_tcp() {
    over_tcp("large", &[2], "large OK");
    over_tcp("persistent", &[3], "persistent OK");
}

#[test]
fn collectives_over_tcp() {
    over_tcp("coll_basic", &[3, 5], "coll_basic OK");
    over_tcp("coll_nb", &[4], "coll_nb OK");
}

/// 32 ranks on 8 "hosts", everyone talking to everyone: each rank holds at
/// most one connection per remote peer and direction (plus a few fixed
/// descriptors) and no thread per connection.
#[test]
fn many_ranks_bounded_fds_and_threads() {
    let exe = compile("tcp_many", Compiler::Ours);
    let r = run(Launcher::Ours, 32, &exe, &[], &[("MPICORE_FAKE_HOSTS", "8")], T);
    r.assert_ok("tcp_many OK on 32 ranks");
    let line = r.stdout.lines().find(|l| l.contains("tcp_many OK")).unwrap();
    let num = |key: &str| -> usize {
        line.split(key)
            .nth(1)
            .unwrap()
            .trim_start()
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (fds, threads) = (num("max fds"), num("max threads"));
    let remote_peers = 32 - 32 / 8;
    assert!(fds <= 2 * remote_peers + 16, "{fds} descriptors for {remote_peers} remote peers: {line}");
    assert!(fds >= remote_peers, "fewer descriptors ({fds}) than peers talked to: {line}");
    assert!(threads <= 2, "{threads} threads: {line}");
}

#[test]
fn threads_over_tcp() {
    over_tcp("threads", &[2], "threads OK");
}

/// A job of 4 ranks on 2 fake hosts running `exe` with `args`, its stderr
/// read by a thread, and the address of rank 2's listener (host 1 of 2)
/// as `ip:port`.
struct Watched {
    child: std::process::Child,
    stderr: std::thread::JoinHandle<String>,
    addr: String,
}

fn start_watched(exe: &std::path::Path, args: &[&str]) -> Watched {
    let mut child = Command::new(bin_dir().join("mpirun"))
        .args(["-n", "4"])
        .arg(exe)
        .args(args)
        .env("MPICORE_FAKE_HOSTS", "2")
        .env("MPICORE_TCP_VERBOSE", "1")
        .env("MPIEXEC_TIMEOUT", "60")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let start = Instant::now();
    let card = loop {
        let line = rx.recv_timeout(Duration::from_secs(30)).expect("no listener line from rank 2");
        if let Some(rest) = line.strip_prefix("mpi-core: rank 2 on ") {
            break rest.split(" listens on ").nth(1).unwrap().to_string();
        }
        assert!(start.elapsed() < Duration::from_secs(30));
    };
    let (ips, port) = card.rsplit_once(':').unwrap();
    let ip = ips.split(',').next().unwrap();
    Watched { child, stderr: reader, addr: format!("{ip}:{port}") }
}

/// A process outside the job connects to a rank's port and sends forged
/// records: the rank drops the connection (and says so), the job's results
/// are unchanged.
#[test]
fn forged_connections_are_rejected() {
    let exe = compile("tcp_guard", Compiler::Ours);
    let Watched { child, stderr: reader, addr } = start_watched(&exe, &[]);
    // Forged authentication claiming to be rank 1, then an eager record of
    // tag 5 with a bogus value, then garbage.
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    let mut auth = b"mpicore1".to_vec();
    auth.extend_from_slice(&1u32.to_le_bytes());
    auth.extend_from_slice(&[0x42; 32]);
    let mut hdr = [0u8; 48];
    hdr[8] = 1; // EAGER
    hdr[12..16].copy_from_slice(&4u32.to_le_bytes()); // payload
    hdr[16..20].copy_from_slice(&1i32.to_le_bytes()); // src
    hdr[20..24].copy_from_slice(&5i32.to_le_bytes()); // tag
    auth.extend_from_slice(&hdr);
    auth.extend_from_slice(&666i32.to_le_bytes());
    auth.extend_from_slice(&[0xff; 200]);
    s.write_all(&auth).unwrap();
    // A second one that says nothing sensible at all.
    let mut g = std::net::TcpStream::connect(&addr).unwrap();
    let _ = g.write_all(b"GET / HTTP/1.0\r\n\r\n....................................................");
    let out = child.wait_with_output().unwrap();
    let err = reader.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "job failed:\n{stdout}\n{err}");
    assert!(stdout.contains("tcp_guard OK on 4 ranks"), "{stdout}\n{err}");
    assert!(
        err.matches("rejected a connection").count() >= 2 && err.contains("failed authentication"),
        "rejections not reported:\n{err}"
    );
}

/// Whether a process runs the program at `exe` (its command line starts
/// with the path).
fn still_running(exe: &std::path::Path) -> bool {
    let out = Command::new("pgrep").arg("-f").arg(exe).output().expect("run pgrep");
    !String::from_utf8_lossy(&out.stdout).trim().is_empty()
}

/// A connection between two live ranks breaks (`cut`: shut down by one
/// end; `corrupt`: a record's length reads 0xffffffff). The rank that
/// finds out reports it in the progress loop, under the runtime's lock:
/// the job must still end at once (it hung when ending the job took that
/// lock again), naming both ranks and their hosts, with a non-zero status,
/// the ranks' buffered output flushed and no process left.
#[test]
fn broken_connection_ends_the_job() {
    let exe = compile("tcp_lost", Compiler::Ours);
    for mode in ["cut", "corrupt"] {
        let fault = format!("1:300:{mode}");
        let env = [("MPICORE_FAKE_HOSTS", "2"), ("MPICORE_TEST_TCP_FAULT", fault.as_str())];
        let r = run(Launcher::Ours, 4, &exe, &[], &env, Duration::from_secs(60));
        assert!(r.code.is_some_and(|c| c != 0), "{mode}: the job should fail: {r}");
        assert!(r.elapsed < Duration::from_secs(15), "{mode}: the job took too long to end: {r}");
        // A cut connection is noticed by whichever comes first: a read
        // (the peer hung up) or a write (broken pipe); both are reports.
        let why: &[&str] = if mode == "cut" {
            &["lost the connection with rank", "sending failed to rank"]
        } else {
            &["corrupt record"]
        };
        let line = r
            .stderr
            .lines()
            .find(|l| l.contains("mpi-core: rank") && why.iter().any(|w| l.contains(w)))
            .unwrap_or_else(|| panic!("{mode}: no report of the broken connection: {r}"));
        // Rank 1 is on fake host ~0, its peers there on ~1.
        assert!(line.contains("on host ") && line.contains("~0") && line.contains("~1"), "{mode}: hosts: {line}");
        assert!(line.contains("rank 1") && (line.contains("rank 2") || line.contains("rank 3")), "{mode}: {line}");
        assert!(r.stdout.contains("tcp_lost: rank 1 buffered line"), "{mode}: buffered output lost: {r}");
        assert!(!r.stdout.contains("UNREACHABLE"), "{r}");
        std::thread::sleep(Duration::from_millis(500));
        assert!(!still_running(&exe), "{mode}: ranks left running after the job ended");
    }
}

/// Strangers at a rank's port while the job runs: 200 connections that
/// never say anything, one that sends a well-formed greeting from an
/// unknown process of "another job" and then streams zeros, one that stops
/// half-way through its answer. The rank holds at most 48 bytes of each
/// (it grew to 2 GB reading the flood), keeps at most 64 waiting after
/// their first 2 s (the oldest go), drops the flood and the half answer after 10 s with a line
/// each, and the job's results are unchanged.
#[test]
fn unauthenticated_connections_have_a_budget() {
    let exe = compile("tcp_flood", Compiler::Ours);
    let Watched { child, stderr: reader, addr } = start_watched(&exe, &["13"]);
    let mut idle = Vec::new();
    for i in 0..200 {
        match std::net::TcpStream::connect(&addr) {
            Ok(s) => idle.push(s),
            Err(e) => {
                let out = child.wait_with_output().unwrap();
                panic!("connection {i} to {addr}: {e}\n{:?}\n{}", out.status, reader.join().unwrap())
            }
        }
    }
    let mut half = std::net::TcpStream::connect(&addr).unwrap();
    half.write_all(b"mpicore1\x01\x00").unwrap();
    let flood_addr = addr.clone();
    let flood = std::thread::spawn(move || {
        let mut f = std::net::TcpStream::connect(&flood_addr).unwrap();
        f.set_write_timeout(Some(Duration::from_millis(500))).unwrap();
        let mut hello = b"mpicoreF".to_vec();
        hello.extend_from_slice(&0x1234_5678_9abc_def0u64.to_le_bytes());
        hello.extend_from_slice(&[0; 32]);
        f.write_all(&hello).unwrap();
        let zeros = vec![0u8; 1 << 20];
        let (start, mut sent) = (Instant::now(), 0usize);
        // Until the rank stops reading (the kernel's buffers are full) or
        // drops the connection.
        while start.elapsed() < Duration::from_secs(12) {
            match f.write(&zeros) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => break,
            }
        }
        sent
    });
    let out = child.wait_with_output().unwrap();
    let err = reader.join().unwrap();
    let sent = flood.join().unwrap();
    drop((idle, half));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "job failed:\n{stdout}\n{err}");
    assert!(stdout.contains("tcp_flood OK on 4 ranks"), "{stdout}\n{err}");
    // Only the kernel's socket buffers took the flood.
    assert!(sent < 256 << 20, "the rank read {sent} bytes of a stranger's flood");
    let peak: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("rank 2 peak RSS ")?.strip_suffix(" kB")?.parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS of rank 2:\n{stdout}"));
    assert!(peak < 96 << 10, "rank 2 peaked at {peak} kB with strangers connected:\n{stdout}");
    let rejected =
        |why: &str| err.lines().any(|l| l.starts_with("mpi-core: rank 2: rejected a connection") && l.contains(why));
    assert!(rejected("more than 64 connections were waiting to authenticate"), "cap not enforced:\n{err}");
    assert!(rejected("unknown process of another job"), "flood not dropped:\n{err}");
    assert!(rejected("no authentication within 10 s"), "half answer not dropped:\n{err}");
    let lines = err.lines().filter(|l| l.contains("rejected a connection")).count();
    assert!(lines < 40, "{lines} lines about rejected connections: one each is a flood of the log");
}
