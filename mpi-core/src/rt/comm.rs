//! Communicators: a context id, the members as world ranks, this process's
//! rank, the error handler, a name, a topology, attributes and info hints.
//! The table also holds the other objects of chapters 6-8 that are not
//! communicators: groups, keyvals, info objects and user error classes.
//!
//! Context ids: every process keeps a counter of ids it has used; a new
//! communicator takes the maximum of its members' counters (one allreduce
//! over the parent; for an intercommunicator, over both groups through their
//! leaders), so no process ever sees two live communicators with the same id
//! and no global allocator is needed. Ids are never reused, so no message or
//! collective sequence number of a freed communicator can reach a new one;
//! at 4 ids per communicator the 32-bit space lasts a billion creations.
//! Point-to-point traffic uses `ctx`, collectives `ctx + 1`, and an
//! intercommunicator's internal traffic inside its local group `ctx + 2`.
//!
//! An intercommunicator keeps the REMOTE group in `group` and this process's
//! rank in the LOCAL group in `rank`, so point-to-point (which sends to
//! `group[dest]` with source `rank`) works unchanged; the local group is in
//! `local`.

use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::attr::{Attrs, Keyvals};
use super::errh::ErrorRegistry;
use super::error::{MpiError, MpiResult};
use super::group::GroupTable;
use super::info::{InfoTable, Pairs};
use super::slots::Slots;
use super::topo::Topo;

#[derive(Debug, Clone)]
pub struct Comm {
    pub ctx: u32,
    /// World rank of every member, by rank in this communicator (the remote
    /// group of an intercommunicator).
    pub group: Arc<Vec<usize>>,
    /// This process's rank in it (in the local group of an intercommunicator).
    pub rank: i32,
    /// The local group of an intercommunicator; `None` for an intracommunicator.
    pub local: Option<Arc<Vec<usize>>>,
    /// An intercommunicator's hidden intracommunicator over its local group
    /// (context `ctx + 2`), on which its collectives do their local part;
    /// `MPI_COMM_NULL` for an intracommunicator.
    pub local_comm: MPI_Comm,
    pub errhandler: MPI_Errhandler,
    pub name: String,
    pub topo: Option<Arc<Topo>>,
    /// Cached attributes (keyval, value) in the order they were set.
    pub attrs: Attrs,
    /// Info hints set by `MPI_Comm_set_info`/`MPI_Comm_dup_with_info`.
    pub hints: Pairs,
}

impl Comm {
    /// An intracommunicator with nothing cached.
    pub fn intra(ctx: u32, group: Arc<Vec<usize>>, rank: i32, errhandler: MPI_Errhandler) -> Comm {
        Comm {
            ctx,
            group,
            rank,
            local: None,
            local_comm: MPI_COMM_NULL,
            errhandler,
            name: String::new(),
            topo: None,
            attrs: Vec::new(),
            hints: Vec::new(),
        }
    }
    /// Size of the group point-to-point addresses (the remote group of an
    /// intercommunicator).
    pub fn size(&self) -> i32 {
        self.group.len() as i32
    }
    pub fn coll_ctx(&self) -> u32 {
        self.ctx + 1
    }
    pub fn is_inter(&self) -> bool {
        self.local.is_some()
    }
    /// The group this process belongs to.
    pub fn local_group(&self) -> &Arc<Vec<usize>> {
        self.local.as_ref().unwrap_or(&self.group)
    }
    /// `MPI_Comm_size`: the size of the local group.
    pub fn local_size(&self) -> i32 {
        self.local_group().len() as i32
    }
    /// Context of internal collective traffic inside the local group.
    pub fn local_ctx(&self) -> u32 {
        if self.is_inter() {
            self.ctx + 2
        } else {
            self.ctx + 1
        }
    }
    /// Context ids this communicator uses from `ctx` on.
    pub fn ctx_span(&self) -> u32 {
        if self.is_inter() {
            CTX_SPAN_INTER
        } else {
            CTX_SPAN_INTRA
        }
    }
}

/// Context ids taken by an intracommunicator (point-to-point, collectives).
pub const CTX_SPAN_INTRA: u32 = 2;
/// Context ids taken by an intercommunicator (plus local-group traffic),
/// rounded up.
pub const CTX_SPAN_INTER: u32 = 4;

pub struct CommTable {
    world: Comm,
    self_: Comm,
    user: Slots<Comm>,
    /// Next context id this process has not used.
    pub next_ctx: u32,
    pub groups: GroupTable,
    pub keyvals: Keyvals,
    pub infos: InfoTable,
    pub errors: ErrorRegistry,
}

/// First index of user communicator handles.
const USER_BASE: u32 = 0x10;

impl CommTable {
    pub fn new(rank: usize, size: usize) -> Self {
        let mut world = Comm::intra(0, Arc::new((0..size).collect()), rank as i32, MPI_ERRORS_ARE_FATAL);
        world.name = "MPI_COMM_WORLD".into();
        let mut self_ = Comm::intra(2, Arc::new(vec![rank]), 0, MPI_ERRORS_ARE_FATAL);
        self_.name = "MPI_COMM_SELF".into();
        CommTable {
            world,
            self_,
            user: Slots::default(),
            next_ctx: 4,
            groups: GroupTable::default(),
            keyvals: Keyvals::default(),
            infos: InfoTable::default(),
            errors: ErrorRegistry::default(),
        }
    }

    pub fn get(&self, c: MPI_Comm) -> MpiResult<&Comm> {
        match c {
            MPI_COMM_WORLD => Ok(&self.world),
            MPI_COMM_SELF => Ok(&self.self_),
            MPI_COMM_NULL => Err(MpiError::new(MPI_ERR_COMM, "MPI_COMM_NULL is not a valid communicator here")),
            _ => {
                let i = self.index(c)?;
                self.user.get(i).ok_or_else(|| invalid(c))
            }
        }
    }

    pub fn get_mut(&mut self, c: MPI_Comm) -> MpiResult<&mut Comm> {
        match c {
            MPI_COMM_WORLD => Ok(&mut self.world),
            MPI_COMM_SELF => Ok(&mut self.self_),
            MPI_COMM_NULL => Err(MpiError::new(MPI_ERR_COMM, "MPI_COMM_NULL is not a valid communicator here")),
            _ => {
                let i = self.index(c)?;
                self.user.get_mut(i).ok_or_else(|| invalid(c))
            }
        }
    }

    fn index(&self, c: MPI_Comm) -> MpiResult<u32> {
        if handle_obj(c) != OBJ_COMM || handle_kind(c) != HANDLE_KIND_DIRECT {
            return Err(invalid(c));
        }
        Ok(handle_index(c).wrapping_sub(USER_BASE))
    }

    pub fn insert(&mut self, comm: Comm) -> MPI_Comm {
        make_handle(HANDLE_KIND_DIRECT, OBJ_COMM, USER_BASE + self.user.insert(comm))
    }

    pub fn remove(&mut self, c: MPI_Comm) -> MpiResult<Comm> {
        if c == MPI_COMM_WORLD || c == MPI_COMM_SELF {
            return Err(MpiError::new(MPI_ERR_COMM, "predefined communicators cannot be freed"));
        }
        let i = self.index(c)?;
        self.user.remove(i).ok_or_else(|| invalid(c))
    }

    /// Number of live user communicators (for leak checks).
    pub fn live(&self) -> usize {
        self.user.live()
    }

    /// Marks context ids up to `ctx + span` as used by this process.
    pub fn take_ctx(&mut self, ctx: u32, span: u32) {
        self.next_ctx = self.next_ctx.max(ctx + span);
    }
}

fn invalid(c: c_int) -> MpiError {
    MpiError::new(MPI_ERR_COMM, format!("invalid communicator handle 0x{:08x}", c as u32))
}
