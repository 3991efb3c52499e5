//! The signature of a datatype: the sequence of predefined types one
//! element carries, compressed like the layout.

use std::sync::Arc;

use mpi_api::abi::*;

use super::*;

/// The predefined types one element carries, in order.
#[derive(Debug)]
pub struct Sig {
    pub(super) bytes: usize,
    pub(super) elems: usize,
    pub(super) kind: SigKind,
}

#[derive(Debug)]
pub(super) enum SigKind {
    /// `n` consecutive values of predefined type `dt` of `size` bytes each.
    Basic {
        dt: MPI_Datatype,
        size: usize,
        n: usize,
    },
    Seq(Vec<Arc<Sig>>),
    Rep {
        n: usize,
        child: Arc<Sig>,
    },
}

impl Sig {
    pub(super) fn basic(dt: MPI_Datatype, size: usize, n: usize) -> Arc<Sig> {
        Arc::new(Sig { bytes: size * n, elems: n, kind: SigKind::Basic { dt, size, n } })
    }

    pub(super) fn empty() -> Arc<Sig> {
        Arc::new(Sig { bytes: 0, elems: 0, kind: SigKind::Seq(Vec::new()) })
    }

    pub(super) fn rep(n: usize, child: &Arc<Sig>) -> Arc<Sig> {
        if n == 0 || child.elems == 0 {
            return Sig::empty();
        }
        if n == 1 {
            return child.clone();
        }
        if let SigKind::Basic { dt, size, n: k } = child.kind {
            return Sig::basic(dt, size, k * n);
        }
        Arc::new(Sig { bytes: child.bytes * n, elems: child.elems * n, kind: SigKind::Rep { n, child: child.clone() } })
    }

    pub(super) fn seq(parts: Vec<Arc<Sig>>) -> Arc<Sig> {
        let mut out: Vec<Arc<Sig>> = Vec::new();
        let push = |s: Arc<Sig>, out: &mut Vec<Arc<Sig>>| {
            if s.elems == 0 {
                return;
            }
            if let (SigKind::Basic { dt, size, n }, Some(last)) = (&s.kind, out.last_mut()) {
                if let SigKind::Basic { dt: ldt, n: ln, .. } = last.kind {
                    if ldt == *dt {
                        *last = Sig::basic(*dt, *size, ln + n);
                        return;
                    }
                }
            }
            out.push(s);
        };
        for p in parts {
            match &p.kind {
                SigKind::Seq(children) => {
                    for c in children {
                        push(c.clone(), &mut out);
                    }
                }
                _ => push(p, &mut out),
            }
        }
        match out.len() {
            0 => Sig::empty(),
            1 => out.pop().expect("one part"),
            _ => Arc::new(Sig {
                bytes: out.iter().map(|s| s.bytes).sum(),
                elems: out.iter().map(|s| s.elems).sum(),
                kind: SigKind::Seq(out),
            }),
        }
    }

    /// Basic elements in the first `bytes` bytes (< or = `self.bytes`), or
    /// None if that cuts a basic element.
    pub(super) fn elems_in(&self, bytes: usize) -> Option<usize> {
        self.elems_within(bytes, false)
    }

    /// [`Sig::elems_in`]; `floor`: the whole elements when the bytes end
    /// inside one (never None then).
    pub(super) fn elems_within(&self, bytes: usize, floor: bool) -> Option<usize> {
        if bytes >= self.bytes {
            return Some(self.elems);
        }
        match &self.kind {
            SigKind::Basic { size, .. } => (floor || bytes.is_multiple_of(*size)).then_some(bytes / size),
            SigKind::Rep { child, .. } => {
                let whole = bytes / child.bytes;
                Some(whole * child.elems + child.elems_within(bytes - whole * child.bytes, floor)?)
            }
            SigKind::Seq(parts) => {
                let (mut acc, mut rest) = (0, bytes);
                for p in parts {
                    if rest >= p.bytes {
                        acc += p.elems;
                        rest -= p.bytes;
                    } else {
                        return Some(acc + p.elems_within(rest, floor)?);
                    }
                }
                Some(acc)
            }
        }
    }

    /// Bytes of the first `elems` basic elements (< or = `self.elems`).
    pub(super) fn bytes_of(&self, elems: usize) -> usize {
        if elems >= self.elems {
            return self.bytes;
        }
        match &self.kind {
            SigKind::Basic { size, .. } => elems * size,
            SigKind::Rep { child, .. } => {
                let whole = elems / child.elems;
                whole * child.bytes + child.bytes_of(elems - whole * child.elems)
            }
            SigKind::Seq(parts) => {
                let (mut acc, mut rest) = (0, elems);
                for p in parts {
                    if rest >= p.elems {
                        acc += p.bytes;
                        rest -= p.elems;
                    } else {
                        return acc + p.bytes_of(rest);
                    }
                }
                acc
            }
        }
    }

    /// Calls `f(dt, size, n)` for every run of equal predefined types.
    pub(super) fn for_each(&self, f: &mut impl FnMut(MPI_Datatype, usize, usize)) {
        match &self.kind {
            SigKind::Basic { dt, size, n } => f(*dt, *size, *n),
            SigKind::Rep { n, child } => {
                for _ in 0..*n {
                    child.for_each(f);
                }
            }
            SigKind::Seq(parts) => {
                for p in parts {
                    p.for_each(f);
                }
            }
        }
    }

    /// Bytes of one element in "external32".
    pub(super) fn ext_bytes(&self) -> usize {
        match &self.kind {
            SigKind::Basic { dt, size, n } => n * ext32(*dt, *size).0,
            SigKind::Rep { n, child } => n * child.ext_bytes(),
            SigKind::Seq(parts) => parts.iter().map(|p| p.ext_bytes()).sum(),
        }
    }
}
