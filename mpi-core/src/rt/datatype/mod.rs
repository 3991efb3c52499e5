//! Datatypes (chapter 4 of the standard).
//!
//! A datatype is kept in two forms, both built once by the constructor:
//!
//! * a **layout**: where the bytes of one element are, as a small tree of
//!   [`Node`]s — flat lists of runs `(offset, len)` (merged where they touch),
//!   repetitions (`count` copies of a child at a fixed stride, so a vector of a
//!   million doubles is one node, not a million runs) and sequences. Packing
//!   is a loop of copies over that tree; a repetition of a single run is a
//!   tight strided loop with fixed-size copies for the common element sizes.
//! * a **signature** ([`Sig`]): the sequence of predefined types the element
//!   carries, compressed the same way. It answers `Get_elements` on partial
//!   messages and drives the conversion to the "external32" representation.
//!
//! Plus bounds: lower bound and upper bound, each either "natural" (from the
//! data, or the children's bounds) or an explicit marker (`MPI_LB`/`MPI_UB`
//! of the old interface, or `MPI_Type_create_resized`), which dominates.
//! Constructors reduce to "placements": `n` copies of a child at a
//! displacement and a spacing (see [`combine`]).
//!
//! Files: this one holds [`Dtype`], bounds, contents and [`combine`];
//! `layout` the tree and its walks, `copy` the copy loops packing drives,
//! `signature` the signatures, `pack` packing and unpacking (whole, by byte
//! range, in a representation), `external32` that representation,
//! `construct` the constructors (from resolved types, and from the C
//! procedures' arguments), `decode` envelope and contents, `predefined`
//! the predefined types, `table` the handles.

pub mod construct;
mod copy;
pub mod decode;
mod external32;
mod layout;
pub mod pack;
mod predefined;
mod signature;
mod table;

use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::error::{MpiError, MpiResult};
use crate::bail;
pub use construct::{contiguous, darray, hindexed, hvector, structure, subarray};
use copy::*;
use external32::*;
pub use layout::Node;
use layout::*;
use predefined::*;
pub use predefined::{builtin, is_predefined, match_size, pair_value_size, predefined_handles, value_index_pair};
pub use signature::Sig;
pub use table::{check_count, size_of, TypeTable};

// ---------------------------------------------------------------------------
// Datatypes

/// A lower or upper bound: from the data (natural), or an explicit marker,
/// which wins over natural bounds when types are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    None,
    Natural(isize),
    Marked(isize),
}

impl Bound {
    fn value(self) -> Option<isize> {
        match self {
            Bound::None => None,
            Bound::Natural(v) | Bound::Marked(v) => Some(v),
        }
    }
    fn shift(self, d: isize) -> MpiResult<Bound> {
        let add = |v: isize| v.checked_add(d).ok_or_else(overflow);
        Ok(match self {
            Bound::None => Bound::None,
            Bound::Natural(v) => Bound::Natural(add(v)?),
            Bound::Marked(v) => Bound::Marked(add(v)?),
        })
    }
    /// Combines two bounds, keeping the smaller (`min`) or larger value.
    fn join(self, other: Bound, min: bool) -> Bound {
        let pick = |a: isize, b: isize| if min { a.min(b) } else { a.max(b) };
        match (self, other) {
            (Bound::None, b) | (b, Bound::None) => b,
            (Bound::Marked(a), Bound::Marked(b)) => Bound::Marked(pick(a, b)),
            (Bound::Marked(a), Bound::Natural(_)) | (Bound::Natural(_), Bound::Marked(a)) => Bound::Marked(a),
            (Bound::Natural(a), Bound::Natural(b)) => Bound::Natural(pick(a, b)),
        }
    }
}

fn overflow() -> MpiError {
    MpiError::new(MPI_ERR_ARG, "the datatype's displacements or extent overflow the address range")
}

/// How a derived type was made (`MPI_Type_get_envelope`/`get_contents`).
/// Integers are kept wide; `large` tells that a `_c` constructor made it.
#[derive(Debug, Clone)]
pub struct Contents {
    pub combiner: c_int,
    pub ints: Vec<i64>,
    pub aints: Vec<i64>,
    pub types: Vec<Arc<Dtype>>,
    pub large: bool,
}

impl Contents {
    pub fn new(combiner: c_int, ints: Vec<i64>, aints: Vec<i64>, types: Vec<Arc<Dtype>>, large: bool) -> Contents {
        Contents { combiner, ints, aints, types, large }
    }

    /// The arguments as the large-count (`_c`) constructor takes them:
    /// (integers, large counts). Every count and displacement of a `_c`
    /// constructor is an `MPI_Count`; only the few `int` arguments (ndims,
    /// order, the darray process grid) stay integers.
    pub fn large_split(&self) -> (Vec<i64>, Vec<i64>) {
        if !self.large {
            return (self.ints.clone(), Vec::new());
        }
        let i = &self.ints;
        match self.combiner {
            MPI_COMBINER_SUBARRAY => (vec![i[0], i[i.len() - 1]], i[1..i.len() - 1].to_vec()),
            MPI_COMBINER_DARRAY => {
                let nd = i[2] as usize;
                let mut ints = i[..3].to_vec();
                ints.extend_from_slice(&i[3 + nd..]);
                (ints, i[3..3 + nd].to_vec())
            }
            _ => (Vec::new(), i.iter().chain(self.aints.iter()).copied().collect()),
        }
    }
}

/// A datatype as an operation holds it: a predefined one borrowed for the
/// life of the process, a derived one shared. Borrowing a predefined type
/// moves no reference count: on x86 each count change is a full barrier,
/// which would make every small send wait for its stores to the
/// shared-memory ring to reach the reader's core.
#[derive(Debug, Clone)]
pub enum DtRef {
    Predefined(&'static Arc<Dtype>),
    Derived(Arc<Dtype>),
}

impl std::ops::Deref for DtRef {
    type Target = Dtype;
    #[inline]
    fn deref(&self) -> &Dtype {
        self.arc()
    }
}

impl DtRef {
    /// The type as an `Arc`, borrowed.
    #[inline]
    pub fn arc(&self) -> &Arc<Dtype> {
        match self {
            DtRef::Predefined(a) => a,
            DtRef::Derived(a) => a,
        }
    }

    /// The type as an `Arc` of its own (what an operation that outlives
    /// the call keeps).
    pub fn into_arc(self) -> Arc<Dtype> {
        match self {
            DtRef::Predefined(a) => a.clone(),
            DtRef::Derived(a) => a,
        }
    }
}

impl From<Arc<Dtype>> for DtRef {
    fn from(a: Arc<Dtype>) -> Self {
        DtRef::Derived(a)
    }
}

/// A datatype ready for communication.
#[derive(Debug, Clone)]
pub struct Dtype {
    /// Bytes of data in one element.
    pub size: usize,
    pub lb: isize,
    pub extent: isize,
    pub true_lb: isize,
    pub true_extent: isize,
    /// One element is one run starting at offset 0 and `extent == size`, so
    /// `count` elements are `count * size` contiguous bytes at the buffer.
    pub contig: bool,
    /// The predefined type this one is made of, if it is made of one only
    /// (used by reductions and `Get_elements`).
    pub basic: Option<MPI_Datatype>,
    /// Size of the basic element (for `Get_elements`), when uniform.
    pub basic_size: usize,
    /// The handle, for a predefined type.
    pub named: Option<MPI_Datatype>,
    /// How a derived type was built (None for predefined types).
    pub contents: Option<Arc<Contents>>,
    node: Arc<Node>,
    sig: Arc<Sig>,
    lbb: Bound,
    ubb: Bound,
    /// Bounds of the data itself (without markers), if there is data.
    data: Option<(isize, isize)>,
    /// Alignment of the most aligned predefined type (for struct padding).
    align: usize,
    /// `Basic::Mixed` when several predefined types are present.
    basics: Basics,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Basics {
    Empty,
    One(MPI_Datatype, usize),
    Mixed,
}

impl Basics {
    fn join(self, o: Basics) -> Basics {
        match (self, o) {
            (Basics::Empty, b) | (b, Basics::Empty) => b,
            (Basics::One(a, s), Basics::One(b, _)) if a == b => Basics::One(a, s),
            _ => Basics::Mixed,
        }
    }
}

/// `n` copies of type `t`, the i-th at `disp + i * sp` bytes.
pub struct Place<'a> {
    pub t: &'a Dtype,
    pub disp: isize,
    pub n: usize,
    pub sp: isize,
}

impl<'a> Place<'a> {
    /// `n` consecutive copies of `t` (spaced by its extent) at `disp`.
    pub fn block(t: &'a Dtype, disp: isize, n: usize) -> Place<'a> {
        Place { t, disp, n, sp: t.extent }
    }
}

/// The type made of the placements, in order. `pad`: round the extent up
/// to the alignment of the most aligned member, as a C compiler pads a
/// struct (only `MPI_Type_create_struct` does this), unless an explicit
/// upper bound is present.
pub fn combine(places: &[Place], pad: bool) -> MpiResult<Dtype> {
    let mut size = 0usize;
    let mut nodes = Vec::with_capacity(places.len());
    let mut sigs = Vec::with_capacity(places.len());
    let (mut lbb, mut ubb) = (Bound::None, Bound::None);
    let mut data: Option<(isize, isize)> = None;
    let mut align = 1;
    let mut basics = Basics::Empty;
    for p in places.iter().filter(|p| p.n > 0) {
        let t = p.t;
        let bytes = t.size.checked_mul(p.n).ok_or_else(overflow)?;
        size = size.checked_add(bytes).ok_or_else(overflow)?;
        let span = (p.n as isize - 1).checked_mul(p.sp).ok_or_else(overflow)?;
        let (lo, hi) = (
            p.disp.checked_add(span.min(0)).ok_or_else(overflow)?,
            p.disp.checked_add(span.max(0)).ok_or_else(overflow)?,
        );
        lbb = lbb.join(t.lbb.shift(lo)?, true);
        ubb = ubb.join(t.ubb.shift(hi)?, false);
        if let Some((dl, dh)) = t.data {
            let (a, b) = (dl.checked_add(lo).ok_or_else(overflow)?, dh.checked_add(hi).ok_or_else(overflow)?);
            data = Some(match data {
                None => (a, b),
                Some((x, y)) => (x.min(a), y.max(b)),
            });
        }
        align = align.max(t.align);
        basics = basics.join(t.basics);
        nodes.push(Node::place(&t.node, p.disp, p.n, p.sp));
        sigs.push(Sig::rep(p.n, &t.sig));
    }
    if pad {
        if let (Some(lb), Bound::Natural(ub)) = (lbb.value(), ubb) {
            let ext = ub - lb;
            let r = ext.rem_euclid(align as isize);
            if r != 0 {
                ubb = Bound::Natural(ub.checked_add(align as isize - r).ok_or_else(overflow)?);
            }
        }
    }
    Ok(Dtype::finish(Arc::new(Node::seq(nodes)), Sig::seq(sigs), size, lbb, ubb, data, align, basics))
}

impl Dtype {
    #[allow(clippy::too_many_arguments)]
    fn finish(
        node: Arc<Node>,
        sig: Arc<Sig>,
        size: usize,
        lbb: Bound,
        ubb: Bound,
        data: Option<(isize, isize)>,
        align: usize,
        basics: Basics,
    ) -> Dtype {
        debug_assert_eq!(node.size, size);
        debug_assert_eq!(sig.bytes, size);
        // A bound that neither data nor a marker gives is 0, each on its
        // own: a struct of only an `MPI_LB` at 8 has lb 8, ub 0 and extent
        // -8, as in MPICH (the MPI-2 rules leave the empty case open).
        let lb = lbb.value().unwrap_or(0);
        let ub = ubb.value().unwrap_or(0);
        let extent = ub.wrapping_sub(lb);
        let (true_lb, true_ub) = data.unwrap_or((0, 0));
        let contig = size as isize == extent && lb == 0 && node.single_run().is_some_and(|r| r.0 == 0 || size == 0);
        let (basic, basic_size) = match basics {
            Basics::One(dt, s) => (Some(dt), s),
            _ => (None, 0),
        };
        Dtype {
            size,
            lb,
            extent,
            true_lb,
            true_extent: true_ub - true_lb,
            contig,
            basic,
            basic_size,
            named: None,
            contents: None,
            node,
            sig,
            lbb,
            ubb,
            data,
            align,
            basics,
        }
    }

    /// Records how the type was built.
    pub fn with_contents(mut self, c: Contents) -> Dtype {
        self.contents = Some(Arc::new(c));
        self
    }

    /// Bytes that `count` elements carry.
    pub fn packed_size(&self, count: usize) -> usize {
        self.size.saturating_mul(count)
    }

    /// Basic elements per element (of the signature).
    pub fn elems(&self) -> usize {
        self.sig.elems
    }

    /// Runs `(offset, len)` of one element, in type-map order, merged.
    /// (Materialized: for a huge vector type this is a long list.)
    pub fn runs(&self) -> Vec<(isize, usize)> {
        let mut v = Vec::new();
        self.node.walk_all(0, &mut |o, l| push_run(&mut v, o, l));
        v
    }

    /// Number of runs a walk over one element visits.
    pub fn run_count(&self) -> usize {
        self.node.run_count()
    }

    /// The whole of `count` elements is one block at `buf + offset`.
    fn one_block(&self, count: usize) -> Option<isize> {
        if self.contig {
            return Some(0);
        }
        let (o, l) = self.node.single_run()?;
        (count <= 1 || l as isize == self.extent).then_some(o)
    }

    /// Basic elements in `bytes` bytes of a message of this type, or None
    /// if they end inside a basic element.
    pub fn elements_in(&self, bytes: u64) -> Option<u64> {
        if self.size == 0 {
            return Some(0);
        }
        let whole = bytes / self.size as u64;
        let rest = (bytes % self.size as u64) as usize;
        Some(whole * self.sig.elems as u64 + self.sig.elems_in(rest)? as u64)
    }

    /// Whole basic elements in `bytes` bytes of a message of this type
    /// (those of an element the bytes end inside are not counted).
    pub fn whole_elements_in(&self, bytes: u64) -> u64 {
        if self.size == 0 {
            return 0;
        }
        let whole = bytes / self.size as u64;
        let rest = (bytes % self.size as u64) as usize;
        whole * self.sig.elems as u64 + self.sig.elems_within(rest, true).unwrap_or(0) as u64
    }

    /// Bytes that carry `elems` basic elements of this type.
    pub fn bytes_of_elements(&self, elems: u64) -> u64 {
        let per = self.sig.elems as u64;
        if per == 0 {
            return 0;
        }
        (elems / per) * self.size as u64 + self.sig.bytes_of((elems % per) as usize) as u64
    }

    /// A copy of this type with new lower bound and extent (`create_resized`).
    pub fn resized(&self, lb: isize, extent: isize) -> MpiResult<Dtype> {
        let ub = lb.checked_add(extent).ok_or_else(overflow)?;
        let (lbb, ubb) = (Bound::Marked(lb), Bound::Marked(ub));
        Ok(Dtype::finish(self.node.clone(), self.sig.clone(), self.size, lbb, ubb, self.data, self.align, self.basics))
    }

    /// A derived copy of this type (`MPI_Type_dup`); the caller sets contents.
    pub fn dup(&self) -> Dtype {
        let mut t = self.clone();
        t.named = None;
        t.contents = None;
        t
    }

    /// Predefined data items in one element (its type signature's length).
    pub fn items(&self) -> usize {
        self.sig.elems
    }

    /// The predefined types in this type's signature, each once, with their
    /// sizes.
    pub fn basic_types(&self) -> Vec<(MPI_Datatype, usize)> {
        let mut v: Vec<(MPI_Datatype, usize)> = Vec::new();
        self.sig.for_each(&mut |dt, size, _| {
            if !v.iter().any(|&(d, _)| d == dt) {
                v.push((dt, size));
            }
        });
        v
    }
}

#[cfg(test)]
mod tests;
