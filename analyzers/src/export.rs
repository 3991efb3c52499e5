//! Exports for other tools: Chrome/Perfetto trace-event JSON
//! ([`write_chrome`]) and CSV tables of calls and messages
//! ([`write_calls_csv`], [`write_messages_csv`]) for spreadsheets, pandas,
//! DuckDB and the like.
//!
//! Chrome/Perfetto:
//! One process per rank (`pid` = rank, named "rank N"), one track per
//! thread that made MPI calls (`tid` = the thread's number). Every
//! MPI call is a complete ("X") event with its arguments; user regions are
//! begin/end ("B"/"E") events. Every matched message is an arrow: an
//! instant event at the send's start on the sender and one at the end of
//! the completing call on the receiver, tied by a flow ("s"/"f", bound to
//! the enclosing slice) with a unique id. Times are microseconds from the
//! start of the trace. The JSON is written directly (no per-event
//! allocation), so exports of large traces stream.

use std::io::{self, Write};

use crate::matching::Matching;
use crate::model::{Model, RankData};

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

/// The part of a trace an export writes: the calls that overlap a time
/// range (ns from the start of the trace, both ends included; calls are
/// written whole) of a set of ranks, and the messages between the calls
/// written. The default selects everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    pub from: Option<i64>,
    pub to: Option<i64>,
    /// Sorted world ranks; `None` for all.
    pub ranks: Option<Vec<i32>>,
    /// The start of the trace, found once (finding it reads every call).
    pub t0: std::cell::OnceCell<i64>,
}

impl Selection {
    pub fn rank(&self, r: i32) -> bool {
        self.ranks.as_ref().is_none_or(|v| v.binary_search(&r).is_ok())
    }
    /// Whether a call from `start` to `end` (absolute times) overlaps the range.
    pub fn call(&self, m: &Model, start: i64, end: i64) -> bool {
        if self.from.is_none() && self.to.is_none() {
            return true;
        }
        let t0 = *self.t0.get_or_init(|| m.span().0);
        self.from.is_none_or(|f| end - t0 >= f) && self.to.is_none_or(|t| start - t0 <= t)
    }
    /// Whether an instant (absolute time) is in the range.
    pub fn instant(&self, m: &Model, t: i64) -> bool {
        self.call(m, t, t)
    }
    /// Whether call `call` of rank index `rank` is selected.
    pub fn call_of(&self, m: &Model, rank: usize, call: usize) -> bool {
        let r = &m.ranks[rank];
        match r.calls.get(call) {
            Some(c) => self.rank(r.rank) && self.call(m, c.t_start, c.t_end),
            None => false,
        }
    }
}

/// Parses a rank list: `0-3,7,12-15`.
pub fn parse_ranks(s: &str) -> Result<Vec<i32>, String> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("`{part}` is not a rank or a range of ranks (0-3,7)");
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<i32>().map_err(|_| bad())?, b.trim().parse::<i32>().map_err(|_| bad())?),
            None => {
                let r = part.parse::<i32>().map_err(|_| bad())?;
                (r, r)
            }
        };
        if a < 0 || b < a {
            return Err(bad());
        }
        if (b - a) as usize > 1 << 24 {
            return Err(format!("`{part}`: too many ranks"));
        }
        v.extend(a..=b);
    }
    if v.is_empty() {
        return Err("no ranks given".into());
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// Counts of what was written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exported {
    pub slices: u64,
    pub messages: u64,
}

/// Writes the trace-event JSON of `m` (with the message arrows of `mt`).
pub fn write_chrome(m: &Model, mt: &Matching, sel: &Selection, w: &mut impl Write) -> io::Result<Exported> {
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
    for r in m.ranks.iter().filter(|r| sel.rank(r.rank)) {
        sep(w)?;
        write!(
            w,
            "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{0},\"tid\":0,\"args\":{{\"name\":\"rank {0}\"}}}}",
            r.rank
        )?;
        sep(w)?;
        write!(
            w,
            "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{0},\"tid\":0,\"args\":{{\"sort_index\":{0}}}}}",
            r.rank
        )?;
        let mut threads: Vec<u16> = (0..r.calls.kinds() as u32).map(|k| r.calls.kind_thread(k)).collect();
        threads.sort_unstable();
        threads.dedup();
        for t in threads {
            sep(w)?;
            write!(
                w,
                "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{t},\"args\":{{\"name\":\"thread {t}\"}}}}",
                r.rank
            )?;
        }
        for c in r.calls.iter().filter(|c| sel.call(m, c.t_start, c.t_end)) {
            sep(w)?;
            write!(
                w,
                "{{\"ph\":\"X\",\"cat\":\"mpi\",\"name\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"site\":\"{}\"}}}}",
                names[c.name as usize],
                r.rank,
                c.thread,
                us(c.t_start),
                (c.t_end - c.t_start) as f64 / 1000.0,
                m.site_label(c.site)
            )?;
            n.slices += 1;
        }
        for e in r.regions.iter().filter(|e| sel.instant(m, e.t)) {
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
        if !message_selected(m, sel, &msg) {
            continue;
        }
        let (src, d) = (msg.send.rank, msg.recv.rank);
        let send = &m.ranks[src as usize].sends.at(msg.send.idx as usize);
        // The threads of the call that posted the send and of the one
        // that completed the receive.
        let thread_of =
            |rank: u32, call: u32| m.ranks[rank as usize].calls.get(call as usize).map(|c| c.thread).unwrap_or(0);
        let (ts_tid, tr_tid) =
            (thread_of(src, send.post), thread_of(d, m.ranks[d as usize].recvs.at(msg.recv.idx as usize).done));
        let ts = us(msg.send_start);
        let tr = us(end).max(ts);
        n.messages += 1;
        let id = n.messages;
        let args = format!("{{\"bytes\":{},\"tag\":{},\"from\":{src},\"to\":{d}}}", send.bytes, send.tag);
        sep(w)?;
        write!(w, "{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"message\",\"name\":\"send\",\"pid\":{src},\"tid\":{ts_tid},\"ts\":{ts:.3},\"args\":{args}}}")?;
        sep(w)?;
        write!(w, "{{\"ph\":\"s\",\"cat\":\"message\",\"name\":\"message\",\"id\":{id},\"pid\":{src},\"tid\":{ts_tid},\"ts\":{ts:.3}}}")?;
        sep(w)?;
        write!(w, "{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"message\",\"name\":\"recv\",\"pid\":{d},\"tid\":{tr_tid},\"ts\":{tr:.3},\"args\":{args}}}")?;
        sep(w)?;
        write!(w, "{{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"message\",\"name\":\"message\",\"id\":{id},\"pid\":{d},\"tid\":{tr_tid},\"ts\":{tr:.3}}}")?;
    }
    w.write_all(b"\n]}\n")?;
    Ok(n)
}

/// Whether both ends of a matched message are in calls `sel` selects (a
/// receive that never completed counts by its posting call).
fn message_selected(m: &Model, sel: &Selection, msg: &crate::matching::Message) -> bool {
    let (s, d) = (msg.send.rank as usize, msg.recv.rank as usize);
    let post = m.ranks[s].sends.at(msg.send.idx as usize).post;
    let recv = m.ranks[d].recvs.at(msg.recv.idx as usize);
    let done = if recv.done == crate::model::NONE { recv.post } else { recv.done };
    sel.call_of(m, s, post as usize) && sel.call_of(m, d, done as usize)
}

/// A CSV field, quoted when it holds a comma, quote or line break.
fn csv(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\"")).into()
    } else {
        s.into()
    }
}

/// What a call posted: (peer, tag, bytes, communicator).
pub(crate) type Posted = (i32, Option<i32>, i64, u32);

/// What each call of `r` posted, by call index: the first send or receive
/// it posted, or the collective it took part in.
pub(crate) fn posted_by_call(r: &RankData) -> Vec<Option<Posted>> {
    let mut posted: Vec<Option<Posted>> = vec![None; r.calls.len()];
    for p in r.sends.iter().chain(&r.recvs) {
        if let Some(e) = posted.get_mut(p.post as usize) {
            if e.is_none() {
                *e = Some((p.peer, Some(p.tag), p.bytes, p.comm));
            }
        }
    }
    for c in &r.colls {
        if let Some(e) = posted.get_mut(c.post as usize) {
            *e = Some((c.root, None, c.bytes.max(c.recv_bytes), c.comm));
        }
    }
    posted
}

/// Header of [`write_calls_csv`].
pub const CALLS_CSV_HEADER: &str = "rank,call,start_ns,end_ns,duration_ns,site,function,module,peer,tag,bytes,comm";

/// Writes one CSV line per MPI call (times in ns from the start of the
/// trace, after clock correction): the call, its site (`file:line`,
/// `module+0xOFFSET` or the address), the function when symbolized, and for
/// point-to-point and collective calls the peer (destination of a send,
/// source of a receive; the root of a rooted collective), tag, bytes and
/// communicator (empty where they do not apply). Returns the number of lines.
pub fn write_calls_csv(m: &Model, sel: &Selection, w: &mut impl Write) -> io::Result<u64> {
    let (t0, _) = m.span();
    writeln!(w, "{CALLS_CSV_HEADER}")?;
    let site_text: Vec<(String, String, String)> = (0..m.sites.len() as u32)
        .map(|i| {
            let f = m.site_location(i).and_then(|l| l.function.clone()).unwrap_or_default();
            (
                csv(&m.site_label(i)).into_owned(),
                csv(&f).into_owned(),
                csv(&m.site_module_label(i).unwrap_or_default()).into_owned(),
            )
        })
        .collect();
    let mut n = 0;
    for r in &m.ranks {
        if !sel.rank(r.rank) {
            continue;
        }
        let posted = posted_by_call(r);
        for (i, c) in r.calls.iter().enumerate() {
            if !sel.call(m, c.t_start, c.t_end) {
                continue;
            }
            let (site, func, module) = &site_text[c.site as usize];
            write!(
                w,
                "{},{},{},{},{},{site},{func},{module},",
                r.rank,
                csv(m.name(c.name)),
                c.t_start - t0,
                c.t_end - t0,
                c.duration()
            )?;
            match posted[i] {
                Some((peer, tag, bytes, comm)) => {
                    let peer = if peer >= 0 { peer.to_string() } else { String::new() };
                    let tag = tag.filter(|&t| t != i32::MIN).map(|t| t.to_string()).unwrap_or_default();
                    let bytes = if bytes >= 0 { bytes.to_string() } else { String::new() };
                    writeln!(w, "{peer},{tag},{bytes},{}", csv(&m.comm_label(comm)))?
                }
                None => writeln!(w, ",,,")?,
            }
            n += 1;
        }
    }
    Ok(n)
}

/// Header of [`write_messages_csv`].
pub const MESSAGES_CSV_HEADER: &str = "src,dst,tag,comm,bytes,send_start_ns,recv_end_ns,transfer_ns";

/// Writes one CSV line per matched point-to-point message: sender,
/// receiver, tag, communicator, bytes, the start of the send and the end of
/// the call that completed the receive (ns from the start of the trace;
/// empty if it never completed) and their difference. Returns the number of
/// lines.
pub fn write_messages_csv(m: &Model, mt: &Matching, sel: &Selection, w: &mut impl Write) -> io::Result<u64> {
    let (t0, _) = m.span();
    writeln!(w, "{MESSAGES_CSV_HEADER}")?;
    let mut n = 0;
    for msg in mt.messages(m) {
        let send = &m.ranks[msg.send.rank as usize].sends.at(msg.send.idx as usize);
        if !message_selected(m, sel, &msg) {
            continue;
        }
        let (end, transfer) = match msg.recv_end {
            Some(e) => ((e - t0).to_string(), (e - msg.send_start).to_string()),
            None => (String::new(), String::new()),
        };
        writeln!(
            w,
            "{},{},{},{},{},{},{end},{transfer}",
            msg.send.rank,
            msg.recv.rank,
            send.tag,
            csv(&m.comm_label(send.comm)),
            send.bytes,
            msg.send_start - t0
        )?;
        n += 1;
    }
    Ok(n)
}
