//! Communicators: a context id, the members as world ranks, this process's
//! rank, the error handler and a name.
//!
//! Context ids: every process keeps a counter of ids it has used; a new
//! communicator takes the maximum of its members' counters (one allreduce
//! over the parent), so no process ever sees two live communicators with the
//! same id and no global allocator is needed. Point-to-point traffic uses
//! `ctx`, collectives `ctx + 1`.

use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::error::{MpiError, MpiResult};

#[derive(Debug, Clone)]
pub struct Comm {
    pub ctx: u32,
    /// World rank of every member, by rank in this communicator.
    pub group: Arc<Vec<usize>>,
    /// This process's rank in it.
    pub rank: i32,
    pub errhandler: MPI_Errhandler,
    pub name: String,
}

impl Comm {
    pub fn size(&self) -> i32 {
        self.group.len() as i32
    }
    pub fn coll_ctx(&self) -> u32 {
        self.ctx + 1
    }
}

pub struct CommTable {
    world: Comm,
    self_: Comm,
    user: Vec<Option<Comm>>,
    /// Next context id this process has not used.
    pub next_ctx: u32,
}

/// First index of user communicator handles.
const USER_BASE: u32 = 0x10;

impl CommTable {
    pub fn new(rank: usize, size: usize) -> Self {
        CommTable {
            world: Comm {
                ctx: 0,
                group: Arc::new((0..size).collect()),
                rank: rank as i32,
                errhandler: MPI_ERRORS_ARE_FATAL,
                name: "MPI_COMM_WORLD".into(),
            },
            self_: Comm {
                ctx: 2,
                group: Arc::new(vec![rank]),
                rank: 0,
                errhandler: MPI_ERRORS_ARE_FATAL,
                name: "MPI_COMM_SELF".into(),
            },
            user: Vec::new(),
            next_ctx: 4,
        }
    }

    pub fn get(&self, c: MPI_Comm) -> MpiResult<&Comm> {
        match c {
            MPI_COMM_WORLD => Ok(&self.world),
            MPI_COMM_SELF => Ok(&self.self_),
            MPI_COMM_NULL => Err(MpiError::new(MPI_ERR_COMM, "MPI_COMM_NULL is not a valid communicator here")),
            _ => {
                let i = self.index(c)?;
                self.user[i].as_ref().ok_or_else(|| invalid(c))
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
                self.user[i].as_mut().ok_or_else(|| invalid(c))
            }
        }
    }

    fn index(&self, c: MPI_Comm) -> MpiResult<usize> {
        if handle_obj(c) != OBJ_COMM || handle_kind(c) != HANDLE_KIND_DIRECT {
            return Err(invalid(c));
        }
        let i = handle_index(c).wrapping_sub(USER_BASE) as usize;
        if i < self.user.len() {
            Ok(i)
        } else {
            Err(invalid(c))
        }
    }

    pub fn insert(&mut self, comm: Comm) -> MPI_Comm {
        let i = match self.user.iter().position(Option::is_none) {
            Some(i) => {
                self.user[i] = Some(comm);
                i
            }
            None => {
                self.user.push(Some(comm));
                self.user.len() - 1
            }
        };
        make_handle(HANDLE_KIND_DIRECT, OBJ_COMM, USER_BASE + i as u32)
    }

    pub fn remove(&mut self, c: MPI_Comm) -> MpiResult<Comm> {
        if c == MPI_COMM_WORLD || c == MPI_COMM_SELF {
            return Err(MpiError::new(MPI_ERR_COMM, "predefined communicators cannot be freed"));
        }
        let i = self.index(c)?;
        self.user[i].take().ok_or_else(|| invalid(c))
    }
}

fn invalid(c: c_int) -> MpiError {
    MpiError::new(MPI_ERR_COMM, format!("invalid communicator handle 0x{:08x}", c as u32))
}
