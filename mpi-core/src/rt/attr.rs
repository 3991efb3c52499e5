//! Caching (chapter 6.7): keyvals and the attributes stored under them.
//!
//! A keyval handle is a direct `OBJ_KEYVAL` handle whose index carries the
//! kind of object it may be used on in bits 22-25, as MPICH encodes its
//! predefined keys (1 communicator, 3 datatype, 8 window); a keyval used on
//! the wrong kind of object is `MPI_ERR_KEYVAL`. Communicator attributes live
//! in the communicator; datatype and window attributes in stores here keyed
//! by the object's handle (their tables belong to other parts of the library).
//!
//! Callbacks are never called under the runtime lock: the caller copies the
//! function pointer out, unlocks, calls it, and locks again to apply the result.

use std::collections::HashMap;
use std::os::raw::c_int;

use mpi_api::abi::*;

use super::error::{MpiError, MpiResult};
use super::slots::Slots;
use crate::bail;

/// Kind of object a keyval applies to (bits 22-25 of its handle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjKind {
    Comm = 1,
    Type = 3,
    Win = 8,
}

impl ObjKind {
    pub fn name(self) -> &'static str {
        match self {
            ObjKind::Comm => "communicator",
            ObjKind::Type => "datatype",
            ObjKind::Win => "window",
        }
    }
}

/// A keyval: its callbacks (C function pointers as integers, 0 for the
/// NULL callbacks) and extra state.
#[derive(Debug, Clone, Copy)]
pub struct Keyval {
    pub kind: ObjKind,
    pub copy_fn: usize,
    pub delete_fn: usize,
    pub extra: usize,
    freed: bool,
    /// Attributes stored under this keyval.
    refs: usize,
}

/// Attributes of one object, in the order they were first set.
pub type Attrs = Vec<(c_int, usize)>;

#[derive(Default)]
pub struct Keyvals {
    slots: Slots<Keyval>,
    /// Datatype attributes by datatype handle.
    pub types: HashMap<c_int, Attrs>,
    /// Window attributes by window handle.
    pub wins: HashMap<c_int, Attrs>,
}

const KIND_SHIFT: u32 = 22;
const INDEX_MASK: u32 = (1 << KIND_SHIFT) - 1;

/// Kind bits of a predefined keyval (`MPI_TAG_UB` ... `MPI_WIN_MODEL`).
pub fn predefined_kind(k: c_int) -> Option<ObjKind> {
    if handle_kind(k) != HANDLE_KIND_BUILTIN || handle_obj(k) != OBJ_KEYVAL {
        return None;
    }
    match (handle_index(k) >> KIND_SHIFT) & 0xf {
        1 => Some(ObjKind::Comm),
        8 => Some(ObjKind::Win),
        _ => None,
    }
}

impl Keyvals {
    pub fn create(&mut self, kind: ObjKind, copy_fn: usize, delete_fn: usize, extra: usize) -> MpiResult<c_int> {
        if self.slots.live() as u32 >= INDEX_MASK {
            bail!(MPI_ERR_OTHER, "too many keyvals");
        }
        let i = self.slots.insert(Keyval { kind, copy_fn, delete_fn, extra, freed: false, refs: 0 });
        Ok(make_handle(HANDLE_KIND_DIRECT, OBJ_KEYVAL, (kind as u32) << KIND_SHIFT | i))
    }

    fn index(&self, k: c_int, kind: ObjKind) -> MpiResult<u32> {
        self.index_of(k, kind, false)
    }

    /// The slot of keyval `k` of `kind`; with `in_use`, also of one freed
    /// while attributes still refer to it.
    fn index_of(&self, k: c_int, kind: ObjKind, in_use: bool) -> MpiResult<u32> {
        if let Some(pk) = predefined_kind(k) {
            if pk != kind {
                bail!(
                    MPI_ERR_KEYVAL,
                    "predefined keyval 0x{:08x} is a {} attribute, not a {} one",
                    k as u32,
                    pk.name(),
                    kind.name()
                );
            }
            bail!(MPI_ERR_KEYVAL, "predefined keyval 0x{:08x} cannot be changed or freed", k as u32);
        }
        if k == MPI_KEYVAL_INVALID {
            bail!(MPI_ERR_KEYVAL, "MPI_KEYVAL_INVALID is not a keyval");
        }
        let idx = handle_index(k);
        let i = idx & INDEX_MASK;
        match self.slots.get(i) {
            Some(kv)
                if handle_kind(k) == HANDLE_KIND_DIRECT
                    && handle_obj(k) == OBJ_KEYVAL
                    && (!kv.freed || in_use && kv.refs > 0) =>
            {
                if kv.kind != kind || (idx >> KIND_SHIFT) != kind as u32 {
                    bail!(
                        MPI_ERR_KEYVAL,
                        "keyval 0x{:08x} was created for {} attributes, not {} ones",
                        k as u32,
                        kv.kind.name(),
                        kind.name()
                    );
                }
                Ok(i)
            }
            _ => Err(MpiError::new(
                MPI_ERR_KEYVAL,
                format!("invalid keyval 0x{:08x} (freed or never created)", k as u32),
            )),
        }
    }

    /// The keyval `k`, which must be a live user keyval of `kind`.
    pub fn get(&self, k: c_int, kind: ObjKind) -> MpiResult<Keyval> {
        let i = self.index(k, kind)?;
        Ok(*self.slots.get(i).unwrap())
    }

    /// The keyval `k` of `kind`, live or freed while attributes still
    /// refer to it (which may still be read and deleted).
    pub fn get_in_use(&self, k: c_int, kind: ObjKind) -> MpiResult<Keyval> {
        let i = self.index_of(k, kind, true)?;
        Ok(*self.slots.get(i).unwrap())
    }

    /// The callbacks of `k` even if the keyval was freed while attributes
    /// still use it (`None` if there is no such keyval at all).
    pub fn callbacks(&self, k: c_int) -> Option<Keyval> {
        if handle_kind(k) != HANDLE_KIND_DIRECT || handle_obj(k) != OBJ_KEYVAL {
            return None;
        }
        self.slots.get(handle_index(k) & INDEX_MASK).copied()
    }

    /// `MPI_Comm_free_keyval` and friends: the keyval disappears once no
    /// attribute refers to it. Freeing again a keyval that was freed but
    /// still lives for its attributes (a delete callback that frees its own
    /// keyval, then the program freeing its copy of the handle) does
    /// nothing: the standard makes freeing an in-use key legal and the
    /// object still exists, so there is nothing to report.
    pub fn free(&mut self, k: c_int, kind: ObjKind) -> MpiResult<()> {
        let i = self.index_of(k, kind, true)?;
        let kv = self.slots.get_mut(i).unwrap();
        if kv.freed {
            return Ok(());
        }
        kv.freed = true;
        if kv.refs == 0 {
            self.slots.remove(i);
        }
        Ok(())
    }

    /// An attribute under `k` was stored.
    pub fn hold(&mut self, k: c_int) {
        if let Some(kv) = self.slots.get_mut(handle_index(k) & INDEX_MASK) {
            kv.refs += 1;
        }
    }

    /// An attribute under `k` was removed.
    pub fn release(&mut self, k: c_int) {
        let i = handle_index(k) & INDEX_MASK;
        if let Some(kv) = self.slots.get_mut(i) {
            kv.refs = kv.refs.saturating_sub(1);
            if kv.refs == 0 && kv.freed {
                self.slots.remove(i);
            }
        }
    }

    /// Number of live keyvals (for leak checks).
    pub fn live(&self) -> usize {
        self.slots.live()
    }

    /// The attribute store of datatypes or windows.
    pub fn store(&mut self, kind: ObjKind) -> &mut HashMap<c_int, Attrs> {
        match kind {
            ObjKind::Type => &mut self.types,
            _ => &mut self.wins,
        }
    }
}

/// Stores `v` under `k` in `attrs`; returns the old value if there was one.
pub fn set(attrs: &mut Attrs, k: c_int, v: usize) -> Option<usize> {
    match attrs.iter_mut().find(|(kk, _)| *kk == k) {
        Some(slot) => Some(std::mem::replace(&mut slot.1, v)),
        None => {
            attrs.push((k, v));
            None
        }
    }
}

pub fn get(attrs: &Attrs, k: c_int) -> Option<usize> {
    attrs.iter().find(|(kk, _)| *kk == k).map(|&(_, v)| v)
}

pub fn remove(attrs: &mut Attrs, k: c_int) -> Option<usize> {
    let i = attrs.iter().position(|(kk, _)| *kk == k)?;
    Some(attrs.remove(i).1)
}
