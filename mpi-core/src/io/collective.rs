//! The collective forms of data access (`_all`). Reads are each process's
//! own (a strided view costs a few large sieving reads, see
//! `File::read_pieces`). A collective write whose pieces are many and
//! small (interleaved views) goes through aggregators ("two-phase" I/O):
//! the file is cut into one domain per process, each process sends its
//! pieces and their data to the domains' owners, and each owner writes its
//! domain in a few large runs. Other writes, and all in atomic mode, with
//! "external32" or a registered representation, are each process's own.

use mpi_api::abi::*;

use super::access::{access, status_of, user_rep, At, Buf, Direction};
use super::group::{agree, bytes_i64, group_view_of};
use super::view::Segment;
use super::{lock, FileRef};
use crate::bail;
use crate::rt::agree::View;
use crate::rt::buf::UserBuf;
use crate::rt::error::MpiResult;

/// Average pieces per process from which a collective access goes through
/// aggregators instead of every process doing its own small transfers.
const TWO_PHASE_MIN_PIECES: u64 = 4;
/// Average piece size (bytes) below which a collective write is aggregated.
const TWO_PHASE_MAX_PIECE: u64 = 32 << 10;
/// A run of adjacent data an aggregator writes in one piece at most.
const MAX_RUN: usize = 16 << 20;

/// The `romio_cb_write` hint (ROMIO's name): whether to aggregate.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Aggregation {
    Automatic = 0,
    Enable = 1,
    Disable = 2,
}

/// One process's part of a collective write.
struct Plan {
    start: i64,
    buf: Buf,
    /// The file ranges of its data, in stream order.
    segs: Vec<Segment>,
    hint: Aggregation,
}

/// A collective access (`MPI_File_read_all`, `_write_at_all`, ...).
pub(crate) fn access_all(file: &FileRef, dir: Direction, at: At, user: &UserBuf) -> MpiResult<MPI_Status> {
    let v = group_view_of(file)?;
    if v.size() == 1 || dir == Direction::Read {
        return access(file, dir, at, user);
    }
    let plan = (|| -> MpiResult<Option<Plan>> {
        let f = lock(file);
        f.writable()?;
        f.random_access()?;
        let buf = Buf::new(user, &f.view)?;
        let start = match at {
            At::Offset(o) if o < 0 => bail!(MPI_ERR_ARG, "offset {o} is negative"),
            At::Offset(o) => o,
            At::Mine => f.pos,
            At::Shared => bail!(MPI_ERR_INTERN, "a collective access with the shared file pointer"),
        };
        if f.atomic || f.view.datarep == "external32" || user_rep(&f.view).is_some() {
            return Ok(None);
        }
        let segs = f.view.segments(start * f.view.esize(), buf.bytes() as i64);
        // ROMIO's hint: "enable" aggregates always, "disable" never.
        let hint = match crate::rt::info::get(&f.hints, "romio_cb_write") {
            Some("enable") => Aggregation::Enable,
            Some("disable") => Aggregation::Disable,
            _ => Aggregation::Automatic,
        };
        Ok(Some(Plan { start, buf, segs, hint }))
    })();
    // Everybody's eligibility, piece count and range decide, the same way
    // everywhere, whether to aggregate.
    let (flag, nseg, lo, hi) = match &plan {
        Err(_) => (0u8, 0u64, 0i64, 0i64),
        Ok(None) => (1, 0, 0, 0),
        Ok(Some(p)) => {
            let lo = p.segs.iter().map(|s| s.0).min().unwrap_or(0);
            let hi = p.segs.iter().map(|s| s.0 + s.1 as i64).max().unwrap_or(0);
            (2, p.segs.len() as u64, lo, hi)
        }
    };
    let planned = plan.as_ref().ok().and_then(Option::as_ref);
    let hint = planned.map_or(Aggregation::Automatic, |p| p.hint);
    let mut msg = vec![flag];
    msg.extend_from_slice(&nseg.to_ne_bytes());
    msg.extend_from_slice(&lo.to_ne_bytes());
    msg.extend_from_slice(&hi.to_ne_bytes());
    msg.extend_from_slice(&(planned.map_or(0, |p| p.buf.bytes()) as u64).to_ne_bytes());
    msg.push(hint as u8);
    let all = v.allgather_vec(&msg)?;
    let field = |m: &[u8], k: usize| i64::from_ne_bytes(m[1 + 8 * k..9 + 8 * k].try_into().unwrap());
    let total: u64 = all.iter().map(|m| field(m, 0) as u64).sum();
    let bytes: u64 = all.iter().map(|m| field(m, 3) as u64).sum();
    let fragmented = total >= TWO_PHASE_MIN_PIECES * v.size() as u64 && bytes / total.max(1) < TWO_PHASE_MAX_PIECE;
    // A process's hint decides for all: "disable" first, then "enable".
    let hint_of = |m: &[u8]| m[33];
    let aggregate = if all.iter().any(|m| hint_of(m) == Aggregation::Disable as u8) {
        false
    } else {
        fragmented || all.iter().any(|m| hint_of(m) == Aggregation::Enable as u8)
    };
    if !all.iter().all(|m| m[0] == 2) || !aggregate || total == 0 {
        drop(plan);
        return access(file, dir, at, user);
    }
    let Some(p) = plan? else { bail!(MPI_ERR_INTERN, "collective access plan missing") };
    let with_data = all.iter().filter(|m| field(m, 0) > 0);
    let gmin = with_data.clone().map(|m| field(m, 1)).min().unwrap_or(0);
    let gmax = with_data.map(|m| field(m, 2)).max().unwrap_or(0);
    let doms = Domains { lo: gmin, chunk: ((gmax - gmin + v.size() as i64 - 1) / v.size() as i64).max(1), n: v.size() };
    let done = two_phase_write(file, &v, &p, &doms)?;
    let mut f = lock(file);
    if let At::Mine = at {
        f.pos = p.start + done as i64 / f.view.esize();
    }
    Ok(status_of(done))
}

/// The file cut into `n` domains of `chunk` bytes from `lo`, one per process.
struct Domains {
    lo: i64,
    chunk: i64,
    n: usize,
}

/// A piece of one process's data that falls into one domain.
struct DomainPiece {
    owner: usize,
    offset: i64,
    len: usize,
    /// Where the piece starts in the process's packed data.
    stream_pos: usize,
}

impl Domains {
    /// Splits ranges at domain boundaries.
    fn split(&self, segs: &[Segment]) -> Vec<DomainPiece> {
        let mut out = Vec::with_capacity(segs.len());
        let mut pos = 0usize;
        for &(off, len) in segs {
            let (mut o, mut l) = (off, len as i64);
            while l > 0 {
                let owner = (((o - self.lo) / self.chunk) as usize).min(self.n - 1);
                let end =
                    if owner == self.n - 1 { o + l } else { (self.lo + (owner as i64 + 1) * self.chunk).min(o + l) };
                let k = end - o;
                out.push(DomainPiece { owner, offset: o, len: k as usize, stream_pos: pos });
                pos += k as usize;
                o += k;
                l -= k;
            }
        }
        out
    }
}

/// Encodes ranges (and, for a write, their data after them).
fn encode_ranges(ranges: &[(i64, usize)], data: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(8 + 16 * ranges.len() + data.len());
    m.extend_from_slice(&(ranges.len() as u64).to_ne_bytes());
    for &(o, l) in ranges {
        m.extend_from_slice(&o.to_ne_bytes());
        m.extend_from_slice(&(l as u64).to_ne_bytes());
    }
    m.extend_from_slice(data);
    m
}

/// Decodes what [`encode_ranges`] made: the ranges and the data after them.
fn decode_ranges(m: &[u8]) -> (Vec<(i64, usize)>, &[u8]) {
    let n = bytes_i64(m) as usize;
    let ranges = (0..n)
        .map(|i| {
            let at = 8 + 16 * i;
            (bytes_i64(&m[at..]), bytes_i64(&m[at + 8..]) as usize)
        })
        .collect();
    (ranges, &m[(8 + 16 * n).min(m.len())..])
}

fn two_phase_write(file: &FileRef, v: &View, p: &Plan, doms: &Domains) -> MpiResult<usize> {
    let data = p.buf.packed();
    let mut ranges = vec![Vec::new(); doms.n];
    let mut bytes = vec![Vec::new(); doms.n];
    for piece in doms.split(&p.segs) {
        ranges[piece.owner].push((piece.offset, piece.len));
        bytes[piece.owner].extend_from_slice(&data[piece.stream_pos..piece.stream_pos + piece.len]);
    }
    let out: Vec<Vec<u8>> = ranges.iter().zip(&bytes).map(|(r, d)| encode_ranges(r, d)).collect();
    drop(bytes);
    let inb = v.alltoall_vec(&out)?;
    drop(out);
    // This process's domain: every piece sent to it, by offset (later
    // senders' bytes win where pieces overlap), written in runs.
    let mut pieces: Vec<(i64, usize, &[u8])> = Vec::new();
    for m in &inb {
        let (rs, mut d) = decode_ranges(m);
        for (o, l) in rs {
            pieces.push((o, l, &d[..l]));
            d = &d[l..];
        }
    }
    pieces.sort_by_key(|x| x.0);
    let mine = (|| {
        let f = lock(file);
        let mut run: Vec<u8> = Vec::new();
        let mut run_lo = 0i64;
        for (o, l, d) in pieces {
            let run_hi = run_lo + run.len() as i64;
            let joins = !run.is_empty() && o <= run_hi && !(o == run_hi && run.len() >= MAX_RUN);
            if !joins {
                if !run.is_empty() {
                    f.write_at(&run, run_lo)?;
                }
                run.clear();
                run_lo = o;
            }
            let at = (o - run_lo) as usize;
            if run.len() < at + l {
                run.resize(at + l, 0);
            }
            run[at..at + l].copy_from_slice(d);
        }
        if !run.is_empty() {
            f.write_at(&run, run_lo)?;
        }
        Ok(())
    })();
    agree(v, mine)?;
    Ok(p.buf.bytes())
}
