//! Prints a trace as text: `cargo run -p trace-format --example dump -- DIR`.

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}

fn main() {
    let dir = std::env::args().nth(1).expect("usage: dump TRACE_DIR");
    let trace = match trace_format::Trace::open(std::path::Path::new(&dir)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    println!(
        "{} ranks, mpi {:?}, written by {}",
        trace.meta.ranks,
        trace.meta.mpi_library.lines().next(),
        trace.meta.written_by
    );
    for p in &trace.problems {
        println!("problem: {p}");
    }
    for c in trace.comms.values() {
        println!(
            "comm {:x} parent {:?} {} inter={} members={:?} remote={:?}",
            c.id,
            c.parent.map(|p| format!("{p:x}")),
            c.call,
            c.inter,
            c.members,
            c.remote
        );
    }
    let mut sym = trace_format::Symbolizer::new();
    for r in trace.ranks.values() {
        println!("rank {} {:?} {:?} {} events", r.rank, r.completeness, r.source, r.events.len());
        for e in &r.events {
            println!(
                "  {:>2} {:<12} {:<22} t={} dur={} rc={} comm={} peer={} tag={} count={} bytes={} seq={} req={} root={} op={} aux={} rb={} fl={} site={}",
                e.thread, e.kind.name(), e.call, e.t_start, opt(e.t_end.map(|t| t - e.t_start)), opt(e.rc),
                opt(e.comm.map(|c| format!("{c:x}"))), opt(e.peer), opt(e.tag), opt(e.count), opt(e.bytes), opt(e.seq),
                opt(e.request.map(|r| format!("{r:x}"))), opt(e.root), opt(e.op.map(|r| format!("{r:x}"))), opt(e.aux), opt(e.recv_bytes), e.flags,
                opt(e.site.map(|s| match &r.meta {
                    Some(m) => sym.site(m, s).to_string(),
                    None => format!("{s:#x}"),
                }))
            );
        }
    }
}
