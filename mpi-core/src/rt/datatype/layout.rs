//! The layout of a datatype: where the bytes of one element are, as a
//! small tree of [`Node`]s, and the walks over it that packing drives.

use std::sync::Arc;

/// A repetition of a flat run list is expanded into runs while it stays
/// below this many runs; larger ones stay a repetition node.
pub(super) const EXPAND_LIMIT: usize = 256;

/// Where the bytes of one element are (offsets relative to the buffer).
#[derive(Debug, Clone)]
pub struct Node {
    /// Bytes of data below this node.
    pub(super) size: usize,
    pub(super) kind: Kind,
}

#[derive(Debug, Clone)]
pub(super) enum Kind {
    /// Contiguous runs `(offset, len)` in type-map order.
    Runs(Vec<(isize, usize)>),
    /// `count` copies of `child`, the i-th displaced by `off + i * stride`.
    Rep { off: isize, count: usize, stride: isize, child: Arc<Node> },
    /// The children, one after the other in type-map order.
    Seq(Vec<Node>),
}

/// Appends a run, merging it with the previous one if they touch.
pub(super) fn push_run(v: &mut Vec<(isize, usize)>, o: isize, l: usize) {
    if l == 0 {
        return;
    }
    if let Some(last) = v.last_mut() {
        if last.0.wrapping_add(last.1 as isize) == o {
            last.1 += l;
            return;
        }
    }
    v.push((o, l));
}

/// Bytes still to skip and to visit in a partial walk.
pub(super) struct Cursor {
    pub(super) skip: usize,
    pub(super) left: usize,
}

impl Node {
    pub(super) fn empty() -> Node {
        Node { size: 0, kind: Kind::Runs(Vec::new()) }
    }

    pub(super) fn from_runs(runs: impl IntoIterator<Item = (isize, usize)>) -> Node {
        let mut v = Vec::new();
        for (o, l) in runs {
            push_run(&mut v, o, l);
        }
        Node { size: v.iter().map(|r| r.1).sum(), kind: Kind::Runs(v) }
    }

    /// `n` copies of `node`, the i-th displaced by `disp + i * sp`.
    pub(super) fn place(node: &Arc<Node>, disp: isize, n: usize, sp: isize) -> Node {
        if n == 0 || node.size == 0 {
            return Node::empty();
        }
        match &node.kind {
            Kind::Runs(r) if r.len() == 1 && sp == r[0].1 as isize => {
                return Node::from_runs([(disp.wrapping_add(r[0].0), n * r[0].1)]);
            }
            Kind::Runs(r) if n.saturating_mul(r.len()) <= EXPAND_LIMIT => {
                let mut v = Vec::with_capacity(n * r.len());
                for i in 0..n {
                    let d = disp.wrapping_add((i as isize).wrapping_mul(sp));
                    for &(o, l) in r {
                        push_run(&mut v, d.wrapping_add(o), l);
                    }
                }
                return Node { size: node.size * n, kind: Kind::Runs(v) };
            }
            Kind::Rep { off, count, stride, child } if n == 1 => {
                return Node {
                    size: node.size,
                    kind: Kind::Rep {
                        off: off.wrapping_add(disp),
                        count: *count,
                        stride: *stride,
                        child: child.clone(),
                    },
                };
            }
            _ => {}
        }
        if n == 1 && disp == 0 {
            return (**node).clone();
        }
        Node { size: node.size * n, kind: Kind::Rep { off: disp, count: n, stride: sp, child: node.clone() } }
    }

    /// The nodes one after the other: nested sequences are flattened and
    /// neighbouring run lists joined.
    pub(super) fn seq(parts: Vec<Node>) -> Node {
        let mut out: Vec<Node> = Vec::new();
        let push = |n: Node, out: &mut Vec<Node>| {
            if n.size == 0 {
                return;
            }
            if let (Kind::Runs(r), Some(Node { kind: Kind::Runs(last), size })) = (&n.kind, out.last_mut()) {
                for &(o, l) in r {
                    push_run(last, o, l);
                }
                *size += n.size;
                return;
            }
            out.push(n);
        };
        for p in parts {
            match p.kind {
                Kind::Seq(children) => {
                    for c in children {
                        push(c, &mut out);
                    }
                }
                _ => push(p, &mut out),
            }
        }
        match out.len() {
            0 => Node::empty(),
            1 => out.pop().expect("one node"),
            _ => Node { size: out.iter().map(|n| n.size).sum(), kind: Kind::Seq(out) },
        }
    }

    /// Number of runs one walk visits (saturating).
    pub(super) fn run_count(&self) -> usize {
        match &self.kind {
            Kind::Runs(r) => r.len(),
            Kind::Rep { count, child, .. } => count.saturating_mul(child.run_count()),
            Kind::Seq(c) => c.iter().fold(0usize, |a, n| a.saturating_add(n.run_count())),
        }
    }

    /// The single run of this node, if it is one.
    pub(super) fn single_run(&self) -> Option<(isize, usize)> {
        match &self.kind {
            Kind::Runs(r) if r.len() == 1 => Some(r[0]),
            Kind::Runs(r) if r.is_empty() => Some((0, 0)),
            _ => None,
        }
    }

    /// Calls `f(offset, len)` for every run, in order.
    pub(super) fn walk_all<S: Sink>(&self, base: isize, f: &mut S) {
        match &self.kind {
            Kind::Runs(r) => {
                for &(o, l) in r {
                    f.run(base.wrapping_add(o), l);
                }
            }
            Kind::Rep { off, count, stride, child } => walk_reps(base.wrapping_add(*off), *count, *stride, child, f),
            Kind::Seq(c) => {
                for n in c {
                    n.walk_all(base, f);
                }
            }
        }
    }

    /// Like [`Node::walk_all`], for the bytes `[cur.skip, cur.skip + cur.left)`
    /// of the packed form only; advances the cursor.
    pub(super) fn walk_part<S: Sink>(&self, base: isize, cur: &mut Cursor, f: &mut S) {
        if cur.left == 0 {
            return;
        }
        if cur.skip >= self.size {
            cur.skip -= self.size;
            return;
        }
        if cur.skip == 0 && cur.left >= self.size {
            self.walk_all(base, f);
            cur.left -= self.size;
            return;
        }
        match &self.kind {
            Kind::Runs(r) => {
                for &(o, l) in r {
                    if cur.skip >= l {
                        cur.skip -= l;
                        continue;
                    }
                    let take = (l - cur.skip).min(cur.left);
                    f.run(base.wrapping_add(o).wrapping_add(cur.skip as isize), take);
                    cur.skip = 0;
                    cur.left -= take;
                    if cur.left == 0 {
                        return;
                    }
                }
            }
            // child.size > 0 here: otherwise self.size == 0 <= skip.
            Kind::Rep { off, count, stride, child } => {
                walk_reps_part(base.wrapping_add(*off), *count, *stride, child, cur, f)
            }
            Kind::Seq(c) => {
                for n in c {
                    n.walk_part(base, cur, f);
                    if cur.left == 0 {
                        return;
                    }
                }
            }
        }
    }
}

/// Walks the range of `cur` over `count` copies of `child`, `stride` bytes
/// apart from `b` (`child.size > 0`): the copy it starts inside, the whole
/// copies in bulk (the strided fast path), then the copy it ends inside.
pub(super) fn walk_reps_part<S: Sink>(
    b: isize,
    count: usize,
    stride: isize,
    child: &Node,
    cur: &mut Cursor,
    f: &mut S,
) {
    let mut i = cur.skip / child.size;
    cur.skip -= i * child.size;
    let mut bi = b.wrapping_add((i as isize).wrapping_mul(stride));
    if cur.skip > 0 {
        child.walk_part(bi, cur, f);
        i += 1;
        bi = bi.wrapping_add(stride);
        if cur.left == 0 || i >= count {
            return;
        }
    }
    let whole = (cur.left / child.size).min(count.saturating_sub(i));
    if whole > 0 {
        walk_reps(bi, whole, stride, child, f);
        cur.left -= whole * child.size;
        i += whole;
        bi = bi.wrapping_add((whole as isize).wrapping_mul(stride));
    }
    if cur.left > 0 && i < count {
        child.walk_part(bi, cur, f);
    }
}

/// Walks `count` whole copies of `child`, `stride` bytes apart from `b`.
pub(super) fn walk_reps<S: Sink>(b: isize, count: usize, stride: isize, child: &Node, f: &mut S) {
    match &child.kind {
        // The strided fast path: one run per copy.
        Kind::Runs(r) if r.len() == 1 => {
            let (o, l) = r[0];
            f.strided(b.wrapping_add(o), stride, count, l);
        }
        Kind::Runs(r) => {
            let mut bi = b;
            for _ in 0..count {
                for &(o, l) in r {
                    f.run(bi.wrapping_add(o), l);
                }
                bi = bi.wrapping_add(stride);
            }
        }
        _ => {
            let mut bi = b;
            for _ in 0..count {
                child.walk_all(bi, f);
                bi = bi.wrapping_add(stride);
            }
        }
    }
}

/// Receives the runs of a walk, in order.
pub(super) trait Sink {
    /// `len` bytes at `off`.
    fn run(&mut self, off: isize, len: usize);
    /// `count` runs of `len` bytes at `off + i * stride`.
    fn strided(&mut self, off: isize, stride: isize, count: usize, len: usize) {
        let mut a = off;
        for _ in 0..count {
            self.run(a, len);
            a = a.wrapping_add(stride);
        }
    }
}

impl<F: FnMut(isize, usize)> Sink for F {
    fn run(&mut self, off: isize, len: usize) {
        self(off, len)
    }
}
