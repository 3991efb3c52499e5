//! Agreement among the processes of a file's group, over the file's own
//! context (agreed at open, so file traffic never meets the program's
//! messages).

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::{lock, File, FileRef};
use crate::bail;
use crate::rt;
use crate::rt::agree::View;
use crate::rt::error::MpiResult;

/// The file's group on the file's own context.
pub(crate) fn group_view(f: &File) -> MpiResult<View> {
    let (ctx, rank, group) = (f.ctx, f.rank, f.group.clone());
    rt::with(|st| View::new(st, ctx, rank, group))
}

/// The view of an open file, taken without keeping the file locked.
pub(crate) fn group_view_of(f: &FileRef) -> MpiResult<View> {
    let g = lock(f);
    group_view(&g)
}

/// Combines every member's outcome: this process's own error first, else
/// the error another member had (by class), else success.
pub(crate) fn agree(v: &View, mine: MpiResult<()>) -> MpiResult<()> {
    let class = match &mine {
        Ok(()) => 0,
        Err(e) => e.class as u32,
    };
    let worst = v.allreduce_u32(class, |a, b| a.max(b))?;
    mine?;
    if worst != 0 {
        bail!(worst as c_int, "the operation failed at another process of the file's group");
    }
    Ok(())
}

/// A collective step on `file`: `local` runs at every process (file
/// locked), then all agree on the outcome.
pub(crate) fn on_all(file: &FileRef, local: impl FnOnce(&mut File) -> MpiResult<()>) -> MpiResult<()> {
    let v = group_view_of(file)?;
    let mine = local(&mut lock(file));
    agree(&v, mine)
}

/// `MPI_File_set_atomicity`: every process must pass the same flag.
pub(crate) fn set_atomicity(file: &FileRef, atomic: bool) -> MpiResult<()> {
    let v = group_view_of(file)?;
    let all = v.allgather_vec(&[atomic as u8])?;
    if let Some(r) = all.iter().position(|b| b.first() != Some(&(atomic as u8))) {
        bail!(MPI_ERR_NOT_SAME, "rank {r} of the file's group passes another atomicity flag");
    }
    lock(file).atomic = atomic;
    Ok(())
}

pub(crate) fn i64_bytes(v: i64) -> Vec<u8> {
    v.to_ne_bytes().to_vec()
}

pub(crate) fn bytes_i64(b: &[u8]) -> i64 {
    b.get(..8).map_or(0, |s| i64::from_ne_bytes(s.try_into().unwrap()))
}
