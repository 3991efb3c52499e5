//! Collective algorithms, each appending one rank's part to a schedule.
//!
//! All buffers are packed bytes. Reductions always combine "lower ranks op
//! higher ranks" where the operation may not commute, and compute each piece
//! of an Allreduce result exactly once (or identically on every rank), so
//! every rank gets the same bits.
//!
//! Non-power-of-two sizes in the recursive algorithms are handled by folding:
//! of the first `2 * rem` ranks (`rem = size - pof2`), each even rank hands
//! its data to the odd rank above it and waits for the result, so `pof2`
//! ranks with contiguous blocks of original ranks remain.

use std::ptr::null_mut;

use super::sched::{Packed, Sched};

/// Algorithm choices and thresholds (bytes), from the environment.
#[derive(Clone, Debug)]
pub struct Tune {
    pub allreduce: Option<String>,
    pub allreduce_short: usize,
    pub allreduce_ring: usize,
    pub allreduce_direct: usize,
    pub bcast: Option<String>,
    pub bcast_long: usize,
    pub bcast_linear: usize,
    pub reduce: Option<String>,
    pub reduce_short: usize,
    pub allgather: Option<String>,
    pub allgather_short: usize,
    pub alltoall: Option<String>,
    pub alltoall_short: usize,
    pub alltoall_medium: usize,
    pub gather_short: usize,
    /// Segment of the pipelined broadcast and reduction.
    pub segment: usize,
    /// With more ranks than cores, communicators up to this size use the
    /// one-round ("linear", "direct") algorithms.
    pub linear_max: usize,
    /// Largest message per rank of blocking collectives done in shared
    /// memory (see `flat`).
    pub shm_max: usize,
    /// Largest message of a blocking Allreduce done in shared memory in
    /// pieces of the large buffers (above them; with a core per rank, or
    /// also with more ranks than cores when `shm_pieces_oversub`).
    pub shm_pieces: usize,
    pub shm_pieces_oversub: bool,
    /// Smallest block of a blocking Allgather or Alltoall read straight from
    /// the other ranks' buffers (`process_vm_readv`), with a core per rank
    /// (0: never).
    pub shm_direct: usize,
}

fn env_size(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

fn env_alg(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|v| v.trim().to_ascii_lowercase()).filter(|v| !v.is_empty() && v != "auto")
}

impl Default for Tune {
    fn default() -> Self {
        Tune {
            allreduce: env_alg("MPICORE_COLL_ALLREDUCE"),
            allreduce_short: env_size("MPICORE_COLL_ALLREDUCE_SHORT", 4096),
            allreduce_ring: env_size("MPICORE_COLL_ALLREDUCE_RING", 1 << 20),
            allreduce_direct: env_size("MPICORE_COLL_ALLREDUCE_DIRECT", 64 << 10),
            bcast: env_alg("MPICORE_COLL_BCAST"),
            bcast_long: env_size("MPICORE_COLL_BCAST_LONG", 512 << 10),
            bcast_linear: env_size("MPICORE_COLL_BCAST_LINEAR", 16 << 10),
            reduce: env_alg("MPICORE_COLL_REDUCE"),
            reduce_short: env_size("MPICORE_COLL_REDUCE_SHORT", 8192),
            allgather: env_alg("MPICORE_COLL_ALLGATHER"),
            allgather_short: env_size("MPICORE_COLL_ALLGATHER_SHORT", 64 << 10),
            alltoall: env_alg("MPICORE_COLL_ALLTOALL"),
            alltoall_short: env_size("MPICORE_COLL_ALLTOALL_SHORT", 256),
            alltoall_medium: env_size("MPICORE_COLL_ALLTOALL_MEDIUM", 32 << 10),
            gather_short: env_size("MPICORE_COLL_GATHER_SHORT", 16 << 10),
            segment: env_size("MPICORE_COLL_SEGMENT", 64 << 10),
            linear_max: env_size("MPICORE_COLL_LINEAR_MAX", 16),
            shm_max: env_size("MPICORE_COLL_SHM_MAX", super::flat::BIG),
            shm_pieces: env_size("MPICORE_COLL_SHM_PIECES", 1 << 20),
            shm_pieces_oversub: env_size("MPICORE_COLL_SHM_PIECES_OVERSUB", 0) != 0,
            shm_direct: env_size("MPICORE_COLL_SHM_DIRECT", 16 << 10),
        }
    }
}

/// Largest power of two not above `n` (n > 0).
fn pof2(n: usize) -> usize {
    1 << (usize::BITS - 1 - n.leading_zeros())
}

/// Block `i` of `parts` near-equal blocks of `units` units: (offset, length).
fn split(units: usize, parts: usize, i: usize) -> (usize, usize) {
    let (q, r) = (units / parts, units % parts);
    (i * q + i.min(r), q + usize::from(i < r))
}

fn at(p: Packed, off: usize) -> Packed {
    p.wrapping_add(off)
}

// ----- barrier and broadcast ---------------------------------------------------

/// Dissemination barrier: ceil(log2 n) rounds of zero-byte messages.
pub fn barrier(s: &mut Sched) {
    let (r, n) = (s.rank, s.size);
    let mut k = 1;
    while k < n {
        s.send(null_mut(), 0, (r + k) % n);
        s.recv(null_mut(), 0, (r + n - k) % n);
        s.fence();
        k <<= 1;
    }
}

pub fn bcast(s: &mut Sched, t: &Tune, buf: Packed, n: usize, root: usize) {
    if s.size == 1 {
        return;
    }
    let alg = match t.bcast.as_deref() {
        Some(a @ ("binomial" | "scatter_allgather" | "linear" | "pipeline")) => a,
        // More ranks than cores, messages sent eagerly: one round, in which
        // every rank takes its copy whenever it runs, instead of log2(p)
        // rounds that each need the forwarding ranks to be scheduled.
        // (Larger messages are read from the sender's memory; many readers
        // of the same pages at once contend in the kernel.)
        _ if s.oversub && s.size <= t.linear_max && n <= t.bcast_linear => "linear",
        // Scatter + allgather moves more bytes in total: only worth it with
        // a core per rank.
        _ if n >= t.bcast_long && s.size > 2 && !s.oversub => "scatter_allgather",
        // A core per rank: forwarding a segment overlaps receiving the next.
        _ if n >= 2 * t.segment && s.size > 2 && !s.oversub => "pipeline",
        _ => "binomial",
    };
    match alg {
        "linear" => bcast_linear(s, buf, n, root),
        "pipeline" => bcast_pipeline(s, buf, n, root, t.segment.max(1)),
        "scatter_allgather" => bcast_scatter_allgather(s, buf, n, root),
        _ => bcast_binomial(s, buf, n, root),
    }
}

/// A binomial tree rooted at `root` (relative rank 0): this rank's parent
/// (None at the root) and children, nearest subtree first.
fn tree(rank: usize, size: usize, root: usize) -> (Option<usize>, Vec<usize>) {
    let rel = (rank + size - root) % size;
    let abs = |x: usize| (x + root) % size;
    let low = if rel == 0 { size.next_power_of_two() } else { rel & rel.wrapping_neg() };
    let parent = (rel != 0).then(|| abs(rel - low));
    let mut children = Vec::new();
    let mut m = 1;
    while m < low && rel + m < size {
        children.push(abs(rel + m));
        m <<= 1;
    }
    (parent, children)
}

/// Segments of `seg` bytes (the last shorter) of `n` bytes: (offset, length).
fn segments(n: usize, seg: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n.div_ceil(seg)).map(move |i| (i * seg, seg.min(n - i * seg)))
}

/// Binomial tree in segments: a rank forwards segment i to its children
/// while it receives segment i + 1.
fn bcast_pipeline(s: &mut Sched, buf: Packed, n: usize, root: usize, seg: usize) {
    let (parent, children) = tree(s.rank, s.size, root);
    let segs: Vec<(usize, usize)> = segments(n, seg).collect();
    let Some(parent) = parent else {
        for &(o, l) in &segs {
            for &c in children.iter().rev() {
                s.send(at(buf, o), l, c);
            }
        }
        return;
    };
    if let Some(&(o, l)) = segs.first() {
        s.recv(at(buf, o), l, parent);
        s.fence();
    }
    for (i, &(o, l)) in segs.iter().enumerate() {
        if let Some(&(no, nl)) = segs.get(i + 1) {
            s.recv(at(buf, no), nl, parent);
        }
        for &c in children.iter().rev() {
            s.send(at(buf, o), l, c);
        }
        s.fence();
    }
}

/// The root sends to every other rank at once.
fn bcast_linear(s: &mut Sched, buf: Packed, n: usize, root: usize) {
    if s.rank != root {
        s.recv(buf, n, root);
        return;
    }
    for k in 1..s.size {
        s.send(buf, n, (root + k) % s.size);
    }
}

/// Binomial tree rooted at `root`.
fn bcast_binomial(s: &mut Sched, buf: Packed, n: usize, root: usize) {
    let size = s.size;
    let rel = (s.rank + size - root) % size;
    let abs = |x: usize| (x + root) % size;
    let mut mask = 1;
    while mask < size {
        if rel & mask != 0 {
            s.recv(buf, n, abs(rel - mask));
            s.fence();
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if rel + mask < size {
            s.send(buf, n, abs(rel + mask));
        }
        mask >>= 1;
    }
}

/// Binomial scatter of `size` pieces, then a ring allgather of them.
fn bcast_scatter_allgather(s: &mut Sched, buf: Packed, n: usize, root: usize) {
    let size = s.size;
    let rel = (s.rank + size - root) % size;
    let abs = |x: usize| (x + root) % size;
    let chunk = n.div_ceil(size);
    let range = |a: usize, b: usize| {
        let (x, y) = ((a * chunk).min(n), (b * chunk).min(n));
        (x, y - x)
    };
    let low = if rel == 0 { size.next_power_of_two() } else { rel & rel.wrapping_neg() };
    if rel != 0 {
        let (o, l) = range(rel, rel + low);
        s.recv(at(buf, o), l, abs(rel - low));
        s.fence();
    }
    let mut m = low >> 1;
    while m > 0 {
        if rel + m < size {
            let (o, l) = range(rel + m, rel + 2 * m);
            s.send(at(buf, o), l, abs(rel + m));
        }
        m >>= 1;
    }
    s.fence();
    let (left, right) = (abs((rel + size - 1) % size), abs((rel + 1) % size));
    for k in 0..size - 1 {
        let sb = (rel + size - k) % size;
        let rb = (rel + 2 * size - k - 1) % size;
        let (so, sl) = range(sb, sb + 1);
        let (ro, rl) = range(rb, rb + 1);
        s.send(at(buf, so), sl, right);
        s.recv(at(buf, ro), rl, left);
        s.fence();
    }
}

// ----- reductions ----------------------------------------------------------------

fn commutative(s: &Sched) -> bool {
    s.red.as_ref().is_some_and(|r| r.commutative())
}

fn unit(s: &Sched) -> usize {
    s.red.as_ref().map_or(1, |r| r.unit())
}

/// Combines data of a partner into the result buffer `dst` (`n` bytes).
/// `mine` is where this rank's operand is: if it is `dst` itself, the
/// partner's data goes to `tmp` first; otherwise it is received straight
/// into `dst` and `mine` is folded in (saving a copy). `partner_lower` keeps
/// operands in rank order.
fn recv_reduce(s: &mut Sched, mine: Packed, dst: Packed, tmp: Packed, n: usize, from: usize, partner_lower: bool) {
    if mine == dst {
        s.recv(tmp, n, from);
        s.fence();
        // dst = tmp op dst if the partner is lower, else dst op tmp.
        s.reduce(tmp, dst, n, !partner_lower);
    } else {
        s.recv(dst, n, from);
        s.fence();
        // dst holds the partner's data: dst op mine if it is lower.
        s.reduce(mine, dst, n, partner_lower);
    }
}

/// The fold of non-power-of-two sizes. Returns this rank's new rank among
/// the remaining `pof2` (None for a rank that only waits for the result)
/// and where its data now is.
fn fold(s: &mut Sched, sbuf: Packed, rbuf: Packed, tmp: Packed, n: usize) -> (Option<usize>, Packed) {
    let (r, p2) = (s.rank, pof2(s.size));
    let rem = s.size - p2;
    if r >= 2 * rem {
        return (Some(r - rem), sbuf);
    }
    if r % 2 == 0 {
        s.send(sbuf, n, r + 1);
        s.fence();
        (None, sbuf)
    } else {
        recv_reduce(s, sbuf, rbuf, tmp, n, r - 1, true);
        (Some(r / 2), rbuf)
    }
}

/// Real rank of new rank `nr` after [`fold`].
fn unfolded(size: usize, nr: usize) -> usize {
    let rem = size - pof2(size);
    if nr < rem {
        2 * nr + 1
    } else {
        nr + rem
    }
}

/// The last step of a folded algorithm: odd ranks give the result back.
fn unfold(s: &mut Sched, rbuf: Packed, n: usize) {
    let (r, rem) = (s.rank, s.size - pof2(s.size));
    if r < 2 * rem {
        if r % 2 == 1 {
            s.send(rbuf, n, r - 1);
        } else {
            s.recv(rbuf, n, r + 1);
        }
    }
}

pub fn allreduce(s: &mut Sched, t: &Tune, sbuf: Packed, rbuf: Packed, n: usize) {
    if s.size == 1 {
        s.copy(sbuf, rbuf, n);
        return;
    }
    let units = n / unit(s);
    let p2 = pof2(s.size);
    let alg = match t.allreduce.as_deref() {
        Some(a @ ("recursive_doubling" | "reduce_bcast")) => a,
        Some("direct") if units >= s.size => "direct",
        Some(a @ ("rabenseifner" | "ring")) if commutative(s) && units >= s.size => a,
        // More ranks than cores: two rounds of messages all at once instead
        // of 2 log2(p) rounds that each need every rank scheduled.
        _ if s.oversub
            && n > t.allreduce_short
            && n <= t.allreduce_direct
            && units >= s.size
            && s.size <= t.linear_max =>
        {
            "direct"
        }
        _ if !commutative(s) || n <= t.allreduce_short || units < s.size => "recursive_doubling",
        _ if p2 != s.size && n >= t.allreduce_ring => "ring",
        _ => "rabenseifner",
    };
    match alg {
        "reduce_bcast" => {
            reduce_binomial(s, sbuf, rbuf, n, 0);
            s.fence();
            bcast_binomial(s, rbuf, n, 0);
        }
        "ring" => allreduce_ring(s, sbuf, rbuf, n),
        "direct" => allreduce_direct(s, sbuf, rbuf, n),
        "rabenseifner" => allreduce_rabenseifner(s, sbuf, rbuf, n),
        _ => allreduce_recdbl(s, sbuf, rbuf, n),
    }
}

/// Recursive doubling: log2(pof2) exchanges of the whole vector.
fn allreduce_recdbl(s: &mut Sched, sbuf: Packed, rbuf: Packed, n: usize) {
    let tmp = s.tmp(n);
    let (nr, cur) = fold(s, sbuf, rbuf, tmp, n);
    if let Some(nr) = nr {
        s.copy(cur, rbuf, n);
        let p2 = pof2(s.size);
        let mut mask = 1;
        while mask < p2 {
            let p = nr ^ mask;
            let pr = unfolded(s.size, p);
            s.send(rbuf, n, pr);
            s.recv(tmp, n, pr);
            s.fence();
            s.reduce(tmp, rbuf, n, p > nr);
            mask <<= 1;
        }
    }
    unfold(s, rbuf, n);
}

/// `pof2` near-equal blocks of whole units of a vector of `units` units.
struct Blocks {
    units: usize,
    unit: usize,
    parts: usize,
}

impl Blocks {
    /// Byte offset and length of blocks `a..b`.
    fn range(&self, a: usize, b: usize) -> (usize, usize) {
        let o = split(self.units, self.parts, a).0 * self.unit;
        let e = if b == self.parts { self.units * self.unit } else { split(self.units, self.parts, b).0 * self.unit };
        (o, e - o)
    }
}

/// One step of [`halving`]: its mask and the blocks held before it.
type Step = (usize, usize, usize);

/// Reduce-scatter by recursive halving among the ranks left by [`fold`]
/// (new rank `nr`): data starts at `cur`, partial results go to `acc`.
/// Returns the blocks this rank ends with and the steps (mask, blocks
/// before the step), for the allgather or gather that follows.
fn halving(s: &mut Sched, nr: usize, b: &Blocks, cur: Packed, acc: Packed, tmp: Packed) -> ((usize, usize), Vec<Step>) {
    let mut cur = cur;
    let (mut lo, mut hi) = (0, b.parts);
    let mut steps = Vec::new();
    let mut mask = 1;
    while mask < b.parts {
        let p = nr ^ mask;
        let pr = unfolded(s.size, p);
        let mid = (lo + hi) / 2;
        let (keep, give) = if nr < p { ((lo, mid), (mid, hi)) } else { ((mid, hi), (lo, mid)) };
        let (go, gl) = b.range(give.0, give.1);
        let (ko, kl) = b.range(keep.0, keep.1);
        s.send(at(cur, go), gl, pr);
        recv_reduce(s, at(cur, ko), at(acc, ko), at(tmp, ko), kl, pr, p < nr);
        steps.push((mask, lo, hi));
        (lo, hi) = keep;
        cur = acc;
        mask <<= 1;
    }
    ((lo, hi), steps)
}

/// Rabenseifner: reduce-scatter by recursive halving, then allgather by
/// recursive doubling, over `pof2` near-equal blocks.
fn allreduce_rabenseifner(s: &mut Sched, sbuf: Packed, rbuf: Packed, n: usize) {
    let u = unit(s);
    let tmp = s.tmp(n);
    let (nr, cur) = fold(s, sbuf, rbuf, tmp, n);
    if let Some(nr) = nr {
        let b = Blocks { units: n / u, unit: u, parts: pof2(s.size) };
        let ((mut lo, mut hi), steps) = halving(s, nr, &b, cur, rbuf, tmp);
        for &(mask, plo, phi) in steps.iter().rev() {
            let pr = unfolded(s.size, nr ^ mask);
            let sib = if lo == plo { (hi, phi) } else { (plo, lo) };
            let (mo, ml) = b.range(lo, hi);
            let (so, sl) = b.range(sib.0, sib.1);
            s.send(at(rbuf, mo), ml, pr);
            s.recv(at(rbuf, so), sl, pr);
            s.fence();
            (lo, hi) = (plo, phi);
        }
    }
    unfold(s, rbuf, n);
}

/// Direct: every rank sends block j of its vector to rank j and combines
/// the blocks it gets in rank order (so the op need not commute, and each
/// block is computed once), then sends its result block to every rank.
/// Two rounds of `p - 1` messages each, all posted at once.
fn allreduce_direct(s: &mut Sched, sbuf: Packed, rbuf: Packed, n: usize) {
    let (r, size, u) = (s.rank, s.size, unit(s));
    let units = n / u;
    let blk = |i: usize| {
        let (o, l) = split(units, size, i);
        (o * u, l * u)
    };
    let (mo, ml) = blk(r);
    // Block r of every rank, this rank's included, in rank order.
    let got = s.tmp(ml * size);
    s.copy(at(sbuf, mo), at(got, r * ml), ml);
    for k in 1..size {
        let from = (r + size - k) % size;
        s.recv(at(got, from * ml), ml, from);
    }
    for k in 1..size {
        let to = (r + k) % size;
        let (o, l) = blk(to);
        s.send(at(sbuf, o), l, to);
    }
    s.fence();
    let mine = at(rbuf, mo);
    s.copy(got, mine, ml);
    for i in 1..size {
        // mine = mine op block of rank i.
        s.reduce(at(got, i * ml), mine, ml, true);
    }
    for k in 1..size {
        let from = (r + size - k) % size;
        let (o, l) = blk(from);
        s.recv(at(rbuf, o), l, from);
    }
    for k in 1..size {
        s.send(mine, ml, (r + k) % size);
    }
}

/// Ring: reduce-scatter around the ring, then allgather around it.
fn allreduce_ring(s: &mut Sched, sbuf: Packed, rbuf: Packed, n: usize) {
    let (r, size, u) = (s.rank, s.size, unit(s));
    let units = n / u;
    let blk = |i: usize| {
        let (o, l) = split(units, size, i);
        (o * u, l * u)
    };
    let in_place = sbuf == rbuf;
    let tmp = if in_place { s.tmp(blk(0).1) } else { null_mut() };
    let (left, right) = ((r + size - 1) % size, (r + 1) % size);
    for k in 0..size - 1 {
        let sb = (r + size - k) % size;
        let rb = (r + 2 * size - k - 1) % size;
        let (so, sl) = blk(sb);
        let (ro, rl) = blk(rb);
        s.send(at(if k == 0 { sbuf } else { rbuf }, so), sl, right);
        recv_reduce(s, at(sbuf, ro), at(rbuf, ro), tmp, rl, left, true);
    }
    for k in 0..size - 1 {
        let sb = (r + 1 + size - k) % size;
        let rb = (r + size - k) % size;
        let (so, sl) = blk(sb);
        let (ro, rl) = blk(rb);
        s.send(at(rbuf, so), sl, right);
        s.recv(at(rbuf, ro), rl, left);
        s.fence();
    }
}

pub fn reduce(s: &mut Sched, t: &Tune, sbuf: Packed, rbuf: Packed, n: usize, root: usize) {
    if s.size == 1 {
        s.copy(sbuf, rbuf, n);
        return;
    }
    let units = n / unit(s);
    let seg = (t.segment / unit(s)).max(1) * unit(s);
    let alg = match t.reduce.as_deref() {
        Some("binomial") => "binomial",
        Some("pipeline") => "pipeline",
        Some("reduce_scatter_gather") if commutative(s) && units >= s.size => "reduce_scatter_gather",
        _ if commutative(s) && n > t.reduce_short && units >= s.size => "reduce_scatter_gather",
        // A core per rank: combining a segment overlaps receiving the next.
        _ if n >= 2 * seg && s.size > 2 && !s.oversub => "pipeline",
        _ => "binomial",
    };
    match alg {
        "reduce_scatter_gather" => reduce_scatter_gather(s, sbuf, rbuf, n, root),
        "pipeline" => reduce_pipeline(s, sbuf, rbuf, n, root, seg),
        _ => reduce_binomial(s, sbuf, rbuf, n, root),
    }
}

/// Binomial tree in segments of `seg` bytes (whole units): a rank combines
/// segment i of its children, then sends it on while it receives segment
/// i + 1. Rooted as [`reduce_binomial`], children combined in rank order.
fn reduce_pipeline(s: &mut Sched, sbuf: Packed, rbuf: Packed, n: usize, root: usize, seg: usize) {
    let rank = s.rank;
    let vroot = if commutative(s) { root } else { 0 };
    let (parent, children) = tree(rank, s.size, vroot);
    // Where the partial result builds up (a leaf sends its data as it is).
    let acc = if children.is_empty() {
        sbuf
    } else {
        let a = if rank == root { rbuf } else { s.tmp(n) };
        s.copy(sbuf, a, n);
        a
    };
    let tmps: Vec<Packed> = children.iter().map(|_| s.tmp(seg.min(n))).collect();
    for (o, l) in segments(n, seg) {
        for (&c, &t) in children.iter().zip(&tmps) {
            s.recv(t, l, c);
        }
        s.fence();
        for &t in &tmps {
            // acc = acc op (the next subtree, higher ranks).
            s.reduce(t, at(acc, o), l, true);
        }
        if let Some(p) = parent {
            s.send(at(acc, o), l, p);
        }
    }
    s.fence();
    if vroot != root {
        if rank == vroot {
            s.send(acc, n, root);
        } else if rank == root {
            s.recv(rbuf, n, vroot);
        }
    } else if rank == root {
        s.copy(acc, rbuf, n);
    }
}

/// Binomial tree. For a commutative op the tree is rooted at `root`;
/// otherwise at rank 0 (so every subtree is a contiguous range of ranks,
/// combined in order) and the result moves to `root` at the end.
fn reduce_binomial(s: &mut Sched, sbuf: Packed, rbuf: Packed, n: usize, root: usize) {
    let (size, rank) = (s.size, s.rank);
    let vroot = if commutative(s) { root } else { 0 };
    let rel = (rank + size - vroot) % size;
    let abs = |x: usize| (x + vroot) % size;
    // Where the partial result builds up: the root's result buffer, or a
    // temporary, allocated when a first child reports.
    let target = |s: &mut Sched| if rank == root { rbuf } else { s.tmp(n) };
    let mut acc = sbuf;
    let mut tmp: Packed = null_mut();
    let mut mask = 1;
    while mask < size {
        if rel & mask != 0 {
            s.send(acc, n, abs(rel - mask));
            s.fence();
            break;
        }
        if rel + mask < size {
            let child = abs(rel + mask);
            if acc == sbuf && sbuf != rbuf {
                let dst = target(s);
                recv_reduce(s, sbuf, dst, null_mut(), n, child, false);
                acc = dst;
            } else {
                if tmp.is_null() {
                    tmp = s.tmp(n);
                }
                recv_reduce(s, acc, acc, tmp, n, child, false);
            }
        }
        mask <<= 1;
    }
    if rel == 0 {
        if vroot == root {
            s.copy(acc, rbuf, n);
        } else {
            s.send(acc, n, root);
        }
    }
    if rank == root && vroot != root {
        s.recv(rbuf, n, vroot);
    }
}

/// Reduce-scatter by recursive halving, then a binomial gather of the
/// blocks to new rank 0, which hands the result to the root if needed.
fn reduce_scatter_gather(s: &mut Sched, sbuf: Packed, rbuf: Packed, n: usize, root: usize) {
    let (u, size, rank) = (unit(s), s.size, s.rank);
    let tmp = s.tmp(n);
    let acc = if rank == root { rbuf } else { s.tmp(n) };
    let (nr, cur) = fold(s, sbuf, acc, tmp, n);
    let head = unfolded(size, 0);
    if let Some(nr) = nr {
        let b = Blocks { units: n / u, unit: u, parts: pof2(size) };
        let ((mut lo, mut hi), steps) = halving(s, nr, &b, cur, acc, tmp);
        // Gather towards new rank 0: at each level the rank with the bit set
        // hands its range to its partner and is done.
        for &(mask, plo, phi) in steps.iter().rev() {
            let pr = unfolded(size, nr ^ mask);
            if nr & mask != 0 {
                let (mo, ml) = b.range(lo, hi);
                s.send(at(acc, mo), ml, pr);
                s.fence();
                break;
            }
            let sib = if lo == plo { (hi, phi) } else { (plo, lo) };
            let (so, sl) = b.range(sib.0, sib.1);
            s.recv(at(acc, so), sl, pr);
            s.fence();
            (lo, hi) = (plo, phi);
        }
        if nr == 0 && rank != root {
            s.send(acc, n, root);
        }
    }
    if rank == root && rank != head {
        s.recv(rbuf, n, head);
    }
}

/// Reduce-scatter with `counts[i]` bytes for rank i (each a whole number of
/// units). `sbuf` holds the whole input, `out` receives this rank's block.
pub fn reduce_scatter(s: &mut Sched, sbuf: Packed, out: Packed, counts: &[usize]) {
    let (size, rank) = (s.size, s.rank);
    let offs: Vec<usize> = counts
        .iter()
        .scan(0, |a, &c| {
            let o = *a;
            *a += c;
            Some(o)
        })
        .collect();
    let total: usize = counts.iter().sum();
    if size == 1 {
        s.copy(sbuf, out, total);
        return;
    }
    let range = |a: usize, b: usize| {
        let o = offs[a];
        let e = if b == size { total } else { offs[b] };
        (o, e - o)
    };
    if !commutative(s) {
        // In rank order at rank 0, then scattered.
        let acc = if rank == 0 { s.tmp(total) } else { null_mut() };
        reduce_binomial(s, sbuf, acc, total, 0);
        s.fence();
        let views: Vec<(Packed, usize)> = (0..size).map(|i| (at(acc, offs[i]), counts[i])).collect();
        scatterv(s, &views, out, counts[rank], 0, false);
        return;
    }
    let acc = s.tmp(total);
    let tmp = s.tmp(total);
    let mut cur = sbuf;
    if size.is_power_of_two() {
        // Recursive halving over ranges of ranks: rank r keeps block r.
        let (mut lo, mut hi) = (0, size);
        let mut mask = size / 2;
        while mask > 0 {
            let p = rank ^ mask;
            let mid = lo + mask;
            let (keep, give) = if rank < p { ((lo, mid), (mid, hi)) } else { ((mid, hi), (lo, mid)) };
            let (go, gl) = range(give.0, give.1);
            let (ko, kl) = range(keep.0, keep.1);
            s.send(at(cur, go), gl, p);
            recv_reduce(s, at(cur, ko), at(acc, ko), at(tmp, ko), kl, p, p < rank);
            (lo, hi) = keep;
            cur = acc;
            mask >>= 1;
        }
        s.copy(at(acc, offs[rank]), out, counts[rank]);
        return;
    }
    // Ring: at step k send block r-k-1, receive block r-k-2; block r comes last.
    let (left, right) = ((rank + size - 1) % size, (rank + 1) % size);
    for k in 0..size - 1 {
        let sb = (rank + 2 * size - k - 1) % size;
        let rb = (rank + 2 * size - k - 2) % size;
        let (so, sl) = range(sb, sb + 1);
        let (ro, rl) = range(rb, rb + 1);
        s.send(at(if k == 0 { sbuf } else { acc }, so), sl, right);
        recv_reduce(s, at(sbuf, ro), at(acc, ro), at(tmp, ro), rl, left, true);
    }
    s.copy(at(acc, offs[rank]), out, counts[rank]);
}

/// Inclusive (`exclusive == false`) or exclusive prefix reduction by
/// recursive doubling. `sbuf` may equal `rbuf`.
pub fn scan(s: &mut Sched, sbuf: Packed, rbuf: Packed, n: usize, exclusive: bool) {
    let (rank, size) = (s.rank, s.size);
    if size == 1 {
        if !exclusive {
            s.copy(sbuf, rbuf, n);
        }
        return;
    }
    let partial = s.tmp(n);
    let tmp = s.tmp(n);
    s.copy(sbuf, partial, n);
    let mut have = !exclusive;
    if have {
        s.copy(sbuf, rbuf, n);
    }
    let mut mask = 1;
    while mask < size {
        let p = rank ^ mask;
        if p < size {
            s.send(partial, n, p);
            s.recv(tmp, n, p);
            s.fence();
            if p < rank {
                if have {
                    s.reduce(tmp, rbuf, n, false);
                } else {
                    s.copy(tmp, rbuf, n);
                    have = true;
                }
                s.reduce(tmp, partial, n, false);
            } else {
                s.reduce(tmp, partial, n, true);
            }
        }
        mask <<= 1;
    }
}

// ----- gather, scatter, allgather, alltoall -----------------------------------------

/// Gather of `blk` bytes from every rank into `out` (packed, in rank
/// order, at the root only). `mine` is this rank's block (at the root it
/// may already be in place in `out`).
pub fn gather(s: &mut Sched, t: &Tune, mine: Packed, blk: usize, out: Packed, root: usize) {
    let (size, rank) = (s.size, s.rank);
    if blk * size > t.gather_short || size <= 2 {
        let views: Vec<(Packed, usize)> = (0..size).map(|i| (at(out, i * blk), blk)).collect();
        return gatherv(s, mine, blk, &views, root);
    }
    let rel = (rank + size - root) % size;
    let abs = |x: usize| (x + root) % size;
    let low = if rel == 0 { size.next_power_of_two() } else { rel & rel.wrapping_neg() };
    let have = low.min(size - rel);
    // Blocks of relative ranks rel.. in order; the root's buffer is rotated.
    let buf = if rel == 0 && root == 0 { out } else { s.tmp(have * blk) };
    s.copy(mine, buf, blk);
    let mut m = 1;
    while m < low && rel + m < size {
        let c = m.min(size - rel - m);
        s.recv(at(buf, m * blk), c * blk, abs(rel + m));
        m <<= 1;
    }
    s.fence();
    if rel != 0 {
        s.send(buf, have * blk, abs(rel - low));
    } else if buf != out {
        s.copy(buf, at(out, root * blk), (size - root) * blk);
        s.copy(at(buf, (size - root) * blk), out, root * blk);
    }
}

/// Gather of blocks of different sizes straight into their places.
pub fn gatherv(s: &mut Sched, mine: Packed, n: usize, views: &[(Packed, usize)], root: usize) {
    if s.rank != root {
        s.send(mine, n, root);
        return;
    }
    for (i, &(p, l)) in views.iter().enumerate() {
        if i == root {
            s.copy(mine, p, l.min(n));
        } else {
            s.recv(p, l, i);
        }
    }
}

/// Scatter of `blk` bytes to every rank from `src` (packed, rank order, at
/// the root) into `out`. `out` null at the root: nothing to copy (in place).
pub fn scatter(s: &mut Sched, t: &Tune, src: Packed, blk: usize, out: Packed, root: usize) {
    let (size, rank) = (s.size, s.rank);
    if blk * size > t.gather_short || size <= 2 {
        let views: Vec<(Packed, usize)> = (0..size).map(|i| (at(src, i * blk), blk)).collect();
        return scatterv(s, &views, out, blk, root, out.is_null());
    }
    let rel = (rank + size - root) % size;
    let abs = |x: usize| (x + root) % size;
    let low = if rel == 0 { size.next_power_of_two() } else { rel & rel.wrapping_neg() };
    let have = low.min(size - rel);
    let buf = if rel == 0 {
        if root == 0 {
            src
        } else {
            let b = s.tmp(size * blk);
            s.copy(at(src, root * blk), b, (size - root) * blk);
            s.copy(src, at(b, (size - root) * blk), root * blk);
            b
        }
    } else if have == 1 {
        out
    } else {
        s.tmp(have * blk)
    };
    if rel != 0 {
        s.recv(buf, have * blk, abs(rel - low));
        s.fence();
    }
    let mut m = low >> 1;
    while m > 0 {
        if rel + m < size {
            let c = m.min(size - rel - m);
            s.send(at(buf, m * blk), c * blk, abs(rel + m));
        }
        m >>= 1;
    }
    if !out.is_null() {
        s.copy(buf, out, blk);
    }
}

/// Scatter of blocks of different sizes from their places. `in_place`: the
/// root keeps its block where it is.
pub fn scatterv(s: &mut Sched, views: &[(Packed, usize)], out: Packed, n: usize, root: usize, in_place: bool) {
    if s.rank != root {
        s.recv(out, n, root);
        return;
    }
    for (i, &(p, l)) in views.iter().enumerate() {
        if i == root {
            if !in_place {
                s.copy(p, out, l.min(n));
            }
        } else {
            s.send(p, l, i);
        }
    }
}

/// Allgather of `blk` bytes per rank into `out` (packed, rank order). This
/// rank's block must already be at `out + rank * blk` or be given as `mine`.
pub fn allgather(s: &mut Sched, t: &Tune, mine: Packed, blk: usize, out: Packed) {
    let (size, rank) = (s.size, s.rank);
    let total = blk * size;
    let alg = match t.allgather.as_deref() {
        Some(a @ ("bruck" | "ring" | "linear")) => a,
        Some("recursive_doubling") if size.is_power_of_two() => "recursive_doubling",
        _ if total <= t.allgather_short && size.is_power_of_two() => "recursive_doubling",
        _ if total <= t.allgather_short => "bruck",
        // More ranks than cores: one round instead of p - 1.
        _ if s.oversub && size <= t.linear_max => "linear",
        _ => "ring",
    };
    if alg == "bruck" {
        let buf = s.tmp(total);
        s.copy(mine, buf, blk);
        let (mut cnt, mut dist) = (1, 1);
        while dist < size {
            let m = dist.min(size - cnt);
            s.send(buf, m * blk, (rank + size - dist) % size);
            s.recv(at(buf, cnt * blk), m * blk, (rank + dist) % size);
            s.fence();
            cnt += m;
            dist <<= 1;
        }
        // buf holds blocks rank, rank+1, ...: rotate into place.
        s.copy(buf, at(out, rank * blk), (size - rank) * blk);
        s.copy(at(buf, (size - rank) * blk), out, rank * blk);
        return;
    }
    s.copy(mine, at(out, rank * blk), blk);
    if alg == "recursive_doubling" {
        let mut mask = 1;
        while mask < size {
            let p = rank ^ mask;
            let (mb, pb) = (rank & !(mask - 1), p & !(mask - 1));
            s.send(at(out, mb * blk), mask * blk, p);
            s.recv(at(out, pb * blk), mask * blk, p);
            s.fence();
            mask <<= 1;
        }
        return;
    }
    let views: Vec<(Packed, usize)> = (0..size).map(|i| (at(out, i * blk), blk)).collect();
    if alg == "linear" {
        allgather_linear(s, &views);
    } else {
        allgather_ring(s, &views);
    }
}

/// Allgather over per-rank views, every block to every rank at once; this
/// rank's block is in place.
pub fn allgather_linear(s: &mut Sched, views: &[(Packed, usize)]) {
    let (size, rank) = (s.size, s.rank);
    for k in 1..size {
        let from = (rank + size - k) % size;
        s.recv(views[from].0, views[from].1, from);
    }
    for k in 1..size {
        s.send(views[rank].0, views[rank].1, (rank + k) % size);
    }
}

/// Ring allgather over per-rank views; this rank's block is in place.
pub fn allgather_ring(s: &mut Sched, views: &[(Packed, usize)]) {
    let (size, rank) = (s.size, s.rank);
    let (left, right) = ((rank + size - 1) % size, (rank + 1) % size);
    for k in 0..size - 1 {
        let sb = (rank + size - k) % size;
        let rb = (rank + 2 * size - k - 1) % size;
        s.send(views[sb].0, views[sb].1, right);
        s.recv(views[rb].0, views[rb].1, left);
        s.fence();
    }
}

/// Alltoall of `blk` bytes per pair between packed buffers.
pub fn alltoall(s: &mut Sched, t: &Tune, src: Packed, blk: usize, out: Packed) {
    let (size, rank) = (s.size, s.rank);
    let bruck = match t.alltoall.as_deref() {
        Some("bruck") => true,
        Some(_) => false,
        None => blk <= t.alltoall_short && size >= 8,
    };
    if !bruck {
        let sv: Vec<(Packed, usize)> = (0..size).map(|i| (at(src, i * blk), blk)).collect();
        let rv: Vec<(Packed, usize)> = (0..size).map(|i| (at(out, i * blk), blk)).collect();
        let pairwise = match t.alltoall.as_deref() {
            Some("pairwise") => true,
            Some(_) => false,
            // More ranks than cores: all at once (one round) up to
            // `linear_max` ranks.
            None => blk > t.alltoall_medium && !(s.oversub && size <= t.linear_max),
        };
        return alltoallv(s, &sv, &rv, pairwise);
    }
    // Bruck: rotate, log2(size) rounds of the blocks whose index has the
    // round's bit set, rotate back.
    let buf = s.tmp(size * blk);
    s.copy(at(src, rank * blk), buf, (size - rank) * blk);
    s.copy(src, at(buf, (size - rank) * blk), rank * blk);
    let half = size.div_ceil(2);
    let (pk, rk) = (s.tmp(half * blk), s.tmp(half * blk));
    let mut dist = 1;
    while dist < size {
        let idx: Vec<usize> = (0..size).filter(|i| i & dist != 0).collect();
        for (j, &i) in idx.iter().enumerate() {
            s.copy(at(buf, i * blk), at(pk, j * blk), blk);
        }
        s.send(pk, idx.len() * blk, (rank + dist) % size);
        s.recv(rk, idx.len() * blk, (rank + size - dist) % size);
        s.fence();
        for (j, &i) in idx.iter().enumerate() {
            s.copy(at(rk, j * blk), at(buf, i * blk), blk);
        }
        dist <<= 1;
    }
    for i in 0..size {
        s.copy(at(buf, i * blk), at(out, ((rank + size - i) % size) * blk), blk);
    }
}

/// Alltoall of per-peer views: all at once, or in `size - 1` pairwise steps.
pub fn alltoallv(s: &mut Sched, sv: &[(Packed, usize)], rv: &[(Packed, usize)], pairwise: bool) {
    let (size, rank) = (s.size, s.rank);
    s.copy(sv[rank].0, rv[rank].0, sv[rank].1.min(rv[rank].1));
    for k in 1..size {
        let (to, from) = ((rank + k) % size, (rank + size - k) % size);
        s.recv(rv[from].0, rv[from].1, from);
        s.send(sv[to].0, sv[to].1, to);
        if pairwise {
            s.fence();
        }
    }
}

/// In-place alltoall(v/w): pairs exchange through a temporary; at step i
/// rank r pairs with (i - r) mod size, so every pair meets exactly once.
pub fn alltoall_in_place(s: &mut Sched, views: &[(Packed, usize)]) {
    let (size, rank) = (s.size, s.rank);
    let max = views.iter().map(|v| v.1).max().unwrap_or(0);
    let tmp = s.tmp(max);
    for i in 0..size {
        let p = (i + size - rank) % size;
        if p == rank {
            continue;
        }
        let (v, l) = views[p];
        s.copy(v, tmp, l);
        s.send(tmp, l, p);
        s.recv(v, l, p);
        s.fence();
    }
}
