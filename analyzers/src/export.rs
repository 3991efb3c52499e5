//! Export to the Chrome/Perfetto trace-event JSON format.
//!
//! One process per rank (`pid` = rank, named "rank N"), one track. Every
//! MPI call is a complete ("X") event with its arguments; user regions are
//! begin/end ("B"/"E") events. Every matched message is an arrow: an
//! instant event at the send's start on the sender and one at the end of
//! the completing call on the receiver, tied by a flow ("s"/"f", bound to
//! the enclosing slice) with a unique id. Times are microseconds from the
//! start of the trace. The JSON is written directly (no per-event
//! allocation), so exports of large traces stream.

use std::io::{self, Write};

use crate::matching::Matching;
use crate::model::Model;

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o
}

/// Counts of what was written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exported {
    pub slices: u64,
    pub messages: u64,
}

/// Writes the trace-event JSON of `m` (with the message arrows of `mt`).
pub fn write_chrome(m: &Model, mt: &Matching, w: &mut impl Write) -> io::Result<Exported> {
    let (t0, _) = m.span();
    let us = |t: i64| (t - t0) as f64 / 1000.0;
    let names: Vec<String> = m.names.iter().map(|n| esc(n)).collect();
    let mut n = Exported::default();
    w.write_all(b"{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"mpitrace\"},\"traceEvents\":[\n")?;
    let mut first = true;
    let mut sep = |w: &mut dyn Write| -> io::Result<()> {
        if !first {
            w.write_all(b",\n")?;
        }
        first = false;
        Ok(())
    };
    for r in &m.ranks {
        sep(w)?;
        write!(w, "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{0},\"tid\":0,\"args\":{{\"name\":\"rank {0}\"}}}}", r.rank)?;
        sep(w)?;
        write!(w, "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{0},\"tid\":0,\"args\":{{\"sort_index\":{0}}}}}", r.rank)?;
        for c in &r.calls {
            sep(w)?;
            write!(
                w,
                "{{\"ph\":\"X\",\"cat\":\"mpi\",\"name\":\"{}\",\"pid\":{},\"tid\":0,\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"site\":\"{}\"}}}}",
                names[c.name as usize],
                r.rank,
                us(c.t_start),
                (c.t_end - c.t_start) as f64 / 1000.0,
                m.site_label(c.site)
            )?;
            n.slices += 1;
        }
        for e in &r.regions {
            sep(w)?;
            write!(
                w,
                "{{\"ph\":\"{}\",\"cat\":\"region\",\"name\":\"{}\",\"pid\":{},\"tid\":0,\"ts\":{:.3}}}",
                if e.begin { "B" } else { "E" },
                names[e.name as usize],
                r.rank,
                us(e.t)
            )?;
        }
    }
    for msg in mt.messages(m) {
        let Some(end) = msg.recv_end else { continue };
        let (src, d) = (msg.send.rank, msg.recv.rank);
        let send = &m.ranks[src as usize].sends[msg.send.idx as usize];
        let ts = us(msg.send_start);
        let tr = us(end).max(ts);
        n.messages += 1;
        let id = n.messages;
        let args = format!("{{\"bytes\":{},\"tag\":{},\"from\":{src},\"to\":{d}}}", send.bytes, send.tag);
        sep(w)?;
        write!(w, "{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"message\",\"name\":\"send\",\"pid\":{src},\"tid\":0,\"ts\":{ts:.3},\"args\":{args}}}")?;
        sep(w)?;
        write!(w, "{{\"ph\":\"s\",\"cat\":\"message\",\"name\":\"message\",\"id\":{id},\"pid\":{src},\"tid\":0,\"ts\":{ts:.3}}}")?;
        sep(w)?;
        write!(w, "{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"message\",\"name\":\"recv\",\"pid\":{d},\"tid\":0,\"ts\":{tr:.3},\"args\":{args}}}")?;
        sep(w)?;
        write!(w, "{{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"message\",\"name\":\"message\",\"id\":{id},\"pid\":{d},\"tid\":0,\"ts\":{tr:.3}}}")?;
    }
    w.write_all(b"\n]}\n")?;
    Ok(n)
}
