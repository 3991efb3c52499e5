//! The table of datatype handles: predefined types, derived types (committed
//! or not), names, Fortran 90 types.

use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::*;

/// A derived type of the program: the type and its committed state.
pub(super) struct Entry {
    t: Arc<Dtype>,
    committed: bool,
}

/// Table of datatypes: predefined ones (built once) and derived types.
pub struct TypeTable {
    derived: Vec<Option<Entry>>,
    free_slots: Vec<usize>,
    /// Predefined types by the low byte of `0x4c00SSII` handles.
    builtin: &'static [Option<Arc<Dtype>>],
    /// The pair types by the low byte of `0x8c0000II` handles.
    pairs: &'static [Option<Arc<Dtype>>],
    /// Names set with `MPI_Type_set_name` (predefined types included).
    names: std::collections::HashMap<MPI_Datatype, String>,
    /// The "unnamed predefined" types of `MPI_Type_create_f90_*`, by
    /// (combiner, p, r): one handle each, never freed.
    f90: std::collections::HashMap<(c_int, c_int, c_int), MPI_Datatype>,
}

pub(super) const DERIVED_BASE: u32 = 0x100;

/// The predefined types, built once per process and kept for its life, so
/// that an operation can borrow one ([`DtRef::Predefined`]) without moving
/// a reference count.
static PREDEFINED: std::sync::OnceLock<(Slots, Slots)> = std::sync::OnceLock::new();

/// Types by the low byte of their handle (see [`TypeTable`]).
type Slots = Vec<Option<Arc<Dtype>>>;

impl Default for TypeTable {
    fn default() -> Self {
        let (builtin, pairs) = PREDEFINED.get_or_init(|| {
            let mut builtin = vec![None; 256];
            let mut pairs = vec![None; 8];
            for h in predefined_handles() {
                let t = builtin_arc(h);
                match (h as u32) >> 24 {
                    0x4c => builtin[(h & 0xff) as usize] = t,
                    _ => pairs[(h & 0x7) as usize] = t,
                }
            }
            (builtin, pairs)
        });
        TypeTable {
            derived: Vec::new(),
            free_slots: Vec::new(),
            builtin,
            pairs,
            names: Default::default(),
            f90: Default::default(),
        }
    }
}

pub(super) fn builtin_arc(h: MPI_Datatype) -> Option<Arc<Dtype>> {
    builtin(h).map(Arc::new)
}

pub(super) fn invalid(dt: MPI_Datatype) -> MpiError {
    if dt == MPI_DATATYPE_NULL {
        MpiError::new(MPI_ERR_TYPE, "MPI_DATATYPE_NULL is not a valid datatype here")
    } else {
        MpiError::new(MPI_ERR_TYPE, format!("invalid datatype handle 0x{:08x}", dt as u32))
    }
}

impl TypeTable {
    pub(super) fn predefined(&self, dt: MPI_Datatype) -> Option<&'static Arc<Dtype>> {
        let slot = match (dt as u32) >> 24 {
            0x4c => self.builtin.get((dt & 0xff) as usize),
            0x8c if dt as u32 & 0x00ff_fff8 == 0 => self.pairs.get((dt & 0x7) as usize),
            _ => None,
        };
        slot.and_then(|t| t.as_ref()).filter(|t| t.named == Some(dt))
    }

    pub(super) fn entry(&self, dt: MPI_Datatype) -> Option<&Entry> {
        if handle_obj(dt) == OBJ_DATATYPE && handle_kind(dt) == HANDLE_KIND_INDIRECT {
            let i = handle_index(dt).wrapping_sub(DERIVED_BASE) as usize;
            return self.derived.get(i).and_then(|e| e.as_ref());
        }
        None
    }

    /// Looks up a type for communication: it must be committed.
    pub fn get(&mut self, dt: MPI_Datatype) -> MpiResult<Arc<Dtype>> {
        self.get_ref(dt).map(DtRef::into_arc)
    }

    /// As [`TypeTable::get`], a predefined type borrowed (see [`DtRef`]).
    pub fn get_ref(&mut self, dt: MPI_Datatype) -> MpiResult<DtRef> {
        if let Some(t) = self.predefined(dt) {
            return Ok(DtRef::Predefined(t));
        }
        match self.entry(dt) {
            Some(e) if e.committed => Ok(DtRef::Derived(e.t.clone())),
            Some(_) => Err(MpiError::new(
                MPI_ERR_TYPE,
                format!("datatype 0x{:08x} is not committed (call MPI_Type_commit first)", dt as u32),
            )),
            None => Err(invalid(dt)),
        }
    }

    /// The type for communication, borrowed (None: not a committed type);
    /// no reference count moves, for paths that only look at it.
    pub fn committed(&self, dt: MPI_Datatype) -> Option<&Arc<Dtype>> {
        self.predefined(dt).or_else(|| self.entry(dt).filter(|e| e.committed).map(|e| &e.t))
    }

    /// Looks up a type, committed or not (queries and constructors).
    pub fn lookup(&self, dt: MPI_Datatype) -> MpiResult<Arc<Dtype>> {
        if let Some(t) = self.predefined(dt) {
            return Ok(t.clone());
        }
        self.entry(dt).map(|e| e.t.clone()).ok_or_else(|| invalid(dt))
    }

    /// Registers a new derived type and returns its handle.
    pub fn insert(&mut self, t: Dtype) -> MPI_Datatype {
        self.insert_arc(Arc::new(t), false)
    }

    /// Registers a type object under a new handle.
    pub fn insert_arc(&mut self, t: Arc<Dtype>, committed: bool) -> MPI_Datatype {
        let e = Some(Entry { t, committed });
        let i = match self.free_slots.pop() {
            Some(i) => {
                self.derived[i] = e;
                i
            }
            None => {
                self.derived.push(e);
                self.derived.len() - 1
            }
        };
        make_handle(HANDLE_KIND_INDIRECT, OBJ_DATATYPE, DERIVED_BASE + i as u32)
    }

    /// `MPI_Type_commit`.
    pub fn commit(&mut self, dt: MPI_Datatype) -> MpiResult<()> {
        if self.predefined(dt).is_some() {
            return Ok(());
        }
        let i = handle_index(dt).wrapping_sub(DERIVED_BASE) as usize;
        match self.entry(dt) {
            Some(_) => {
                if let Some(Some(e)) = self.derived.get_mut(i) {
                    e.committed = true;
                }
                Ok(())
            }
            None => Err(invalid(dt)),
        }
    }

    /// Frees a derived type; operations already holding it keep their `Arc`.
    pub fn free(&mut self, dt: MPI_Datatype) -> MpiResult<()> {
        if self.predefined(dt).is_some() {
            bail!(MPI_ERR_TYPE, "predefined datatypes cannot be freed");
        }
        if self.entry(dt).is_none() {
            return Err(invalid(dt));
        }
        if self.f90.values().any(|&h| h == dt) {
            bail!(MPI_ERR_TYPE, "types from MPI_Type_create_f90_* are predefined and cannot be freed");
        }
        let i = handle_index(dt).wrapping_sub(DERIVED_BASE) as usize;
        self.derived[i] = None;
        self.free_slots.push(i);
        self.names.remove(&dt);
        Ok(())
    }

    /// The type's name (`MPI_Type_get_name`).
    pub fn name(&self, dt: MPI_Datatype) -> MpiResult<String> {
        let t = self.lookup(dt)?;
        if let Some(n) = self.names.get(&dt) {
            return Ok(n.clone());
        }
        Ok(t.named.and_then(|h| predefined_name(CType::Datatype, h)).unwrap_or("").to_string())
    }

    /// `MPI_Type_set_name`.
    pub fn set_name(&mut self, dt: MPI_Datatype, name: String) -> MpiResult<()> {
        self.lookup(dt)?;
        self.names.insert(dt, name);
        Ok(())
    }

    /// `MPI_Type_create_f90_real/complex/integer`: the type of
    /// `selected_real_kind(p, r)` (or `selected_int_kind(r)`), as gfortran
    /// on x86-64 chooses it; `MPI_UNDEFINED` leaves `p` or `r` free.
    pub fn f90(&mut self, combiner: c_int, p: c_int, r: c_int) -> MpiResult<MPI_Datatype> {
        let (p_, r_) = (if p == MPI_UNDEFINED { 0 } else { p }, if r == MPI_UNDEFINED { 0 } else { r });
        if p_ < 0 || r_ < 0 || (p == MPI_UNDEFINED && r == MPI_UNDEFINED && combiner != MPI_COMBINER_F90_INTEGER) {
            bail!(MPI_ERR_ARG, "invalid precision {p} / range {r}");
        }
        let base = match combiner {
            MPI_COMBINER_F90_INTEGER => match r_ {
                0..=2 => MPI_INTEGER1,
                3..=4 => MPI_INTEGER2,
                5..=9 => MPI_INTEGER4,
                10..=18 => MPI_INTEGER8,
                _ => bail!(MPI_ERR_ARG, "no integer kind has a range of {r} digits"),
            },
            _ => {
                let k = match (p_, r_) {
                    (0..=6, 0..=37) => 0,
                    (0..=15, 0..=307) => 1,
                    (0..=33, 0..=4931) => 2,
                    _ => bail!(MPI_ERR_ARG, "no real kind has precision {p} and range {r}"),
                };
                let reals = [MPI_REAL4, MPI_REAL8, MPI_REAL16];
                let complexes = [MPI_COMPLEX8, MPI_COMPLEX16, MPI_COMPLEX32];
                if combiner == MPI_COMBINER_F90_REAL {
                    reals[k]
                } else {
                    complexes[k]
                }
            }
        };
        if let Some(&h) = self.f90.get(&(combiner, p, r)) {
            return Ok(h);
        }
        let ints = if combiner == MPI_COMBINER_F90_INTEGER { vec![r as i64] } else { vec![p as i64, r as i64] };
        let t = self.lookup(base)?.dup().with_contents(Contents::new(combiner, ints, vec![], vec![], false));
        let h = self.insert_arc(Arc::new(t), true);
        self.f90.insert((combiner, p, r), h);
        Ok(h)
    }

    /// A handle for a type returned by `MPI_Type_get_contents`: the
    /// predefined handle, or a new handle on the same type object.
    pub fn handle_for(&mut self, t: &Arc<Dtype>) -> MPI_Datatype {
        match t.named {
            Some(h) => h,
            None => self.insert_arc(t.clone(), true),
        }
    }
}

/// Checks a count argument.
pub fn check_count(count: i64) -> MpiResult<usize> {
    if count < 0 {
        return Err(MpiError::new(MPI_ERR_COUNT, format!("negative count {count}")));
    }
    Ok(count as usize)
}

/// Size in bytes of one element of `dt`, for error-free paths.
pub fn size_of(types: &mut TypeTable, dt: MPI_Datatype) -> MpiResult<usize> {
    Ok(types.get(dt)?.size)
}
