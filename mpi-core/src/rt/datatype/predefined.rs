//! The predefined datatypes: their layouts, pair types, and lookups by
//! size and class.

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::*;

/// Layout of a predefined pair type: (value type, value size, offset of the
/// int, extent, alignment).
pub(super) fn pair_layout(dt: MPI_Datatype) -> Option<(MPI_Datatype, usize, usize, usize, usize)> {
    Some(match dt {
        MPI_FLOAT_INT => (MPI_FLOAT, 4, 4, 8, 4),
        MPI_DOUBLE_INT => (MPI_DOUBLE, 8, 8, 16, 8),
        MPI_LONG_INT => (MPI_LONG, 8, 8, 16, 8),
        MPI_SHORT_INT => (MPI_SHORT, 2, 4, 8, 4),
        MPI_LONG_DOUBLE_INT => (MPI_LONG_DOUBLE, 16, 16, 32, 16),
        _ => return None,
    })
}

/// Size of the value of a predefined (value, int) pair type.
pub fn pair_value_size(dt: MPI_Datatype) -> Option<usize> {
    pair_layout(dt).map(|p| p.1)
}

/// Types made of two equal halves (complex numbers are one element; the
/// `2X` types are two).
pub(super) fn halves(dt: MPI_Datatype) -> bool {
    matches!(
        dt,
        MPI_COMPLEX
            | MPI_DOUBLE_COMPLEX
            | MPI_COMPLEX8
            | MPI_COMPLEX16
            | MPI_COMPLEX32
            | MPI_C_FLOAT_COMPLEX
            | MPI_C_DOUBLE_COMPLEX
            | MPI_C_LONG_DOUBLE_COMPLEX
            | MPI_CXX_FLOAT_COMPLEX
            | MPI_CXX_DOUBLE_COMPLEX
            | MPI_CXX_LONG_DOUBLE_COMPLEX
    ) || two_of(dt).is_some()
}

/// The element type of the `MPI_2X` types.
pub(super) fn two_of(dt: MPI_Datatype) -> Option<MPI_Datatype> {
    Some(match dt {
        MPI_2INT => MPI_INT,
        MPI_2INTEGER => MPI_INTEGER,
        MPI_2REAL => MPI_REAL,
        MPI_2DOUBLE_PRECISION => MPI_DOUBLE_PRECISION,
        _ => return None,
    })
}

/// Is `dt` a predefined datatype handle?
pub fn is_predefined(dt: MPI_Datatype) -> bool {
    dt != MPI_DATATYPE_NULL && predefined_name(CType::Datatype, dt).is_some()
}

/// The flattened form of a predefined datatype.
pub fn builtin(dt: MPI_Datatype) -> Option<Dtype> {
    if !is_predefined(dt) {
        return None;
    }
    let mut t = if let Some((vt, vsize, ioff, extent, align)) = pair_layout(dt) {
        let node = Node::from_runs([(0, vsize), (ioff as isize, 4)]);
        let sig = Sig::seq(vec![Sig::basic(vt, vsize, 1), Sig::basic(MPI_INT, 4, 1)]);
        let size = vsize + 4;
        let (lbb, ubb) = (Bound::Natural(0), Bound::Natural(extent as isize));
        Dtype::finish(Arc::new(node), sig, size, lbb, ubb, Some((0, ioff as isize + 4)), align, Basics::One(dt, 0))
    } else if dt == MPI_LB || dt == MPI_UB {
        let (lbb, ubb) = if dt == MPI_LB { (Bound::Marked(0), Bound::None) } else { (Bound::None, Bound::Marked(0)) };
        Dtype::finish(Arc::new(Node::empty()), Sig::empty(), 0, lbb, ubb, None, 1, Basics::Empty)
    } else {
        let size = builtin_type_size(dt)?;
        let sig = match two_of(dt) {
            Some(e) => Sig::basic(e, size / 2, 2),
            None => Sig::basic(dt, size, 1),
        };
        let align = if halves(dt) { size / 2 } else { size }.max(1);
        let basic_size = if two_of(dt).is_some() { size / 2 } else { size };
        let ubb = Bound::Natural(size as isize);
        Dtype::finish(
            Arc::new(Node::from_runs([(0, size)])),
            sig,
            size,
            Bound::Natural(0),
            ubb,
            Some((0, size as isize)),
            align,
            Basics::One(dt, basic_size),
        )
    };
    t.named = Some(dt);
    Some(t)
}

/// Every predefined datatype handle (each value once).
pub fn predefined_handles() -> Vec<MPI_Datatype> {
    let mut v: Vec<MPI_Datatype> = CONSTANTS
        .iter()
        .filter(|c| c.ctype == CType::Datatype)
        .map(|c| c.value as MPI_Datatype)
        .filter(|&h| h != MPI_DATATYPE_NULL)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// `MPI_Type_match_size`: the Fortran-named type of a class and size.
/// The predefined pair type of `MPI_Type_get_value_index` for a value
/// and an index type (`MPI_DATATYPE_NULL` if there is none).
pub fn value_index_pair(value: MPI_Datatype, index: MPI_Datatype) -> MPI_Datatype {
    match (value, index) {
        (MPI_FLOAT, MPI_INT) => MPI_FLOAT_INT,
        (MPI_DOUBLE, MPI_INT) => MPI_DOUBLE_INT,
        (MPI_LONG, MPI_INT) => MPI_LONG_INT,
        (MPI_SHORT, MPI_INT) => MPI_SHORT_INT,
        (MPI_LONG_DOUBLE, MPI_INT) => MPI_LONG_DOUBLE_INT,
        (MPI_INT, MPI_INT) => MPI_2INT,
        _ => MPI_DATATYPE_NULL,
    }
}

pub fn match_size(typeclass: c_int, size: c_int) -> MpiResult<MPI_Datatype> {
    let t = match (typeclass, size) {
        (MPI_TYPECLASS_REAL, 4) => MPI_REAL4,
        (MPI_TYPECLASS_REAL, 8) => MPI_REAL8,
        (MPI_TYPECLASS_REAL, 16) => MPI_REAL16,
        (MPI_TYPECLASS_INTEGER, 1) => MPI_INTEGER1,
        (MPI_TYPECLASS_INTEGER, 2) => MPI_INTEGER2,
        (MPI_TYPECLASS_INTEGER, 4) => MPI_INTEGER4,
        (MPI_TYPECLASS_INTEGER, 8) => MPI_INTEGER8,
        (MPI_TYPECLASS_COMPLEX, 8) => MPI_COMPLEX8,
        (MPI_TYPECLASS_COMPLEX, 16) => MPI_COMPLEX16,
        (MPI_TYPECLASS_COMPLEX, 32) => MPI_COMPLEX32,
        (MPI_TYPECLASS_REAL | MPI_TYPECLASS_INTEGER | MPI_TYPECLASS_COMPLEX, _) => {
            bail!(MPI_ERR_ARG, "no predefined type of class {typeclass} has size {size}")
        }
        _ => bail!(MPI_ERR_ARG, "invalid type class {typeclass}"),
    };
    Ok(t)
}
