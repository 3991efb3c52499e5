//! Gatherv and Scatterv in shared memory: tables of offsets and blocks in
//! the segment, or messages under the operation's tag.

use std::ffi::c_void;
use std::os::raw::c_int;

use mpi_api::abi::*;

use crate::bail;
use crate::coll::args::{check_root, in_place, no_alias, signature_match, typed, typed_view};
use crate::coll::buf::UserBlocks;
use crate::coll::call::run_tagged;
use crate::coll::flat::{self, Flat};
use crate::coll::parts;
use crate::coll::shm::fast::{fast, fast_bufs, fast_bytes, fast_copy};
use crate::coll::shm::vtables::{
    offset_table_bytes, read_table_word, table_block, typed_blocks, write_blocks, write_table_word,
};
use crate::coll::shm::{segment_op, Who};
use crate::rt::buf::UserBuf;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::{self, State};

// ----- Gatherv and Scatterv in shared memory -----------------------------------------

/// Communicator size, rank and root of a blocking rooted collective that may
/// run in the segment, and what [`this`] makes of this rank's arguments
/// (under the lock). None: messages (an intercommunicator, one rank, or a
/// bad communicator or root: alike everywhere, reported there).
pub(crate) fn rooted<T>(
    comm: MPI_Comm,
    root: c_int,
    this: impl FnOnce(&mut State, usize, usize, usize) -> MpiResult<T>,
) -> Option<(usize, usize, usize, MpiResult<T>)> {
    rt::with(|st| {
        let c = st.comms.get(comm)?;
        let (size, rank) = (c.size() as usize, c.rank as usize);
        if c.is_inter() || size < 2 {
            return Ok(None);
        }
        let Ok(root) = check_root(root, size) else { return Ok(None) };
        Ok(Some((size, rank, root, this(st, size, rank, root))))
    })
    .ok()
    .flatten()
}

/// This rank's part of a Gatherv or Scatterv: at the root, the blocks of
/// every rank (`many`, and the names of its arguments) and its own block
/// to copy (`one`, the other side, and its name; None when it is
/// `MPI_IN_PLACE`); at another rank, its block (`one`).
///
/// # Safety
/// The arrays of `many` are NULL or address `size` values.
#[allow(clippy::type_complexity)]
pub(crate) unsafe fn rooted_args(
    st: &mut State,
    who: &Who,
    root: usize,
    (one, name): (UserBuf, &str),
    (many, names): (UserBlocks, [&str; 3]),
) -> MpiResult<Result<(Vec<parts::Typed>, Option<parts::Typed>), parts::Typed>> {
    let buf = one.addr() as *const c_void;
    if who.rank != root {
        let (n, dt) = typed(st, one, name)?;
        return Ok(Err(typed_view(buf, n, &dt)));
    }
    // SAFETY: this function's contract: the arrays of `many` are NULL or
    // address `size` values.
    let v = unsafe { typed_blocks(st, many, who.size, false, names)? };
    if in_place(buf) {
        return Ok(Ok((v, None)));
    }
    let (n, dt) = typed(st, one, name)?;
    signature_match(dt.packed_size(n), v[root].bytes())?;
    no_alias(buf, many.addr(), v[root].bytes())?;
    Ok(Ok((v, Some(typed_view(buf, n, &dt)))))
}

/// What a rank does in [`fast_gatherv`] or [`fast_scatterv`] (see
/// [`fastv_pick`]).
pub(crate) enum FastVPart {
    /// The root, with its blocks' type's element size and extent, and the
    /// bytes of its own block to copy (None: in place).
    Root { elem_size: usize, extent: isize, own: Option<usize> },
    /// Another rank, with the bytes of its block.
    Leaf { bytes: usize },
}

/// This rank's part of [`fast_gatherv`] or [`fast_scatterv`], if its
/// arguments take it (else None: the general path runs the call): the
/// root's `root` checked; `one` is a non-root's block and, at the root,
/// its own block (`MPI_IN_PLACE`: none); `many` the root's blocks of every
/// rank; `sendbuf` and `recvbuf` the call's two buffers.
/// Contiguous types, good counts and buffers, and at the root its own
/// block's size matching its count. Gives the part, the root, and the
/// bytes of the root's blocks but its own (0 at other ranks).
#[inline]
pub(crate) unsafe fn fastv_pick(
    st: &State,
    w: &Who,
    root: c_int,
    one: UserBuf,
    many: UserBlocks,
    (sendbuf, recvbuf): (*const c_void, *const c_void),
) -> Option<(FastVPart, usize, usize)> {
    let root = check_root(root, w.size).ok()?;
    if w.rank != root {
        let n = fast_bytes(st, one.count, one.datatype)?;
        return (n == 0 || !one.addr().is_null()).then_some((FastVPart::Leaf { bytes: n }, root, 0));
    }
    let own = if one.is_in_place() {
        None
    } else {
        let n = fast_bytes(st, one.count, one.datatype)?;
        fast_bufs(sendbuf, recvbuf).then_some(())?;
        Some(n)
    };
    let (buf, counts, displs, t) = many.parts();
    if counts.is_null() || displs.is_null() || buf.is_null() {
        return None;
    }
    let dt = st.types.committed(t)?;
    if !dt.contig {
        return None;
    }
    let mut others = 0;
    for j in 0..w.size {
        // SAFETY: `counts` is not NULL (checked above), so by `many`'s
        // constructor (the caller's MPI contract) it holds one count per rank.
        let c = unsafe { counts.get(j) };
        if c < 0 {
            return None;
        }
        if j != root {
            others += c as usize * dt.size;
        }
    }
    // SAFETY: as in the loop: `counts` holds one count per rank, `root` among them.
    if own.is_some_and(|n| n != unsafe { counts.get(root) } as usize * dt.size) {
        return None;
    }
    Some((FastVPart::Root { elem_size: dt.size, extent: dt.extent, own }, root, others))
}

/// [`shm_gatherv`] for contiguous types and good arguments (else None,
/// before any step: the general path runs the call in the same layout, so
/// each rank chooses alone), without typed views or allocations (see
/// [`fast_alltoallv`]).
#[inline]
pub(crate) unsafe fn fast_gatherv(
    send: UserBuf,
    recv: UserBlocks,
    root: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let (recvbuf, recvcounts, displs) = (recv.addr(), recv.counts, recv.displs);
    let sendbuf = send.addr() as *const c_void;
    let (f, (part, root)) = fast(comm, |st, w| {
        // SAFETY: `recv`'s constructor guaranteed its arrays are NULL or hold
        // one value per rank; `fastv_pick` reads them only if not NULL.
        let (part, root, _) = unsafe { fastv_pick(st, w, root, send, recv, (sendbuf, recvbuf))? };
        // A non-root writes its block; the root only arrives.
        let bytes = match part {
            FastVPart::Leaf { bytes } => bytes,
            FastVPart::Root { .. } => 0,
        };
        Some(((part, root), bytes))
    })?;
    Some((|| {
        f.wait_turn()?;
        let (u, e, own) = match part {
            FastVPart::Leaf { bytes: n } => {
                f.wait_free()?;
                // SAFETY: `fastv_pick` found `n` contiguous bytes at a non-NULL
                // `sendbuf` (`send`'s constructor: lent for the call), and this
                // rank's block, free after `wait_free`, holds the `n` bytes it
                // announced when it arrived.
                unsafe { fast_copy(sendbuf as *const u8, f.buf(f.rank), n) };
                f.publish(Some(n));
                return Ok(());
            }
            FastVPart::Root { elem_size, extent, own } => (elem_size, extent, own),
        };
        f.publish(None);
        // SAFETY: at the root `fastv_pick` found `displs` not NULL, so by
        // `recv`'s constructor it holds one displacement per rank.
        let at = |j: usize| (recvbuf as *mut u8).wrapping_offset(unsafe { displs.get(j) } as isize * e);
        if let Some(n) = own {
            // SAFETY: `fastv_pick` checked that the own `n` contiguous bytes of
            // `sendbuf` match the root's block and that the buffers differ;
            // both are lent by the caller (their constructors).
            unsafe { fast_copy(sendbuf as *const u8, at(root), n) };
        }
        f.wait_data(0..root)?;
        f.wait_data(root + 1..f.size)?;
        if (0..f.size).any(|r| r != root && (f.sent_by_message(r) || f.len_of(r) == flat::BAD_LEN)) {
            // SAFETY: `recv`'s constructor: its arrays are NULL or hold one
            // value per rank.
            let rv =
                rt::with(|st| unsafe { typed_blocks(st, recv, f.size, false, ["recvbuf", "recvcounts", "displs"]) })?;
            // SAFETY: every other rank has published (waited for above), and
            // `rv` views the root's lent receive blocks.
            return unsafe { gatherv_collect(&f, Some(&rv), comm) };
        }
        for r in (0..f.size).filter(|&r| r != root) {
            // SAFETY: `fastv_pick` found `recvcounts` not NULL, so by `recv`'s
            // constructor it holds one count per rank.
            let (got, want) = (f.len_of(r), unsafe { recvcounts.get(r) } as usize * u);
            if got != want {
                return Err(len_mismatch(r, got, want));
            }
            // SAFETY: rank `r` wrote its `got` bytes to its block before
            // publishing (waited for above); its place in the lent receive
            // buffer has room for its count, which is `got` bytes.
            unsafe { fast_copy(f.buf(r), at(r), got) };
        }
        Ok(())
    })())
}

/// [`shm_scatterv`] for contiguous types, good arguments and blocks that fit
/// a small buffer (else None, before any step: see [`fast_gatherv`]).
#[inline]
pub(crate) unsafe fn fast_scatterv(
    send: UserBlocks,
    recv: UserBuf,
    root: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let (sendbuf, sendcounts, displs) = (send.addr() as *const c_void, send.counts, send.displs);
    let recvbuf = recv.addr();
    let (f, (part, root, table)) = fast(comm, |st, w| {
        let table = offset_table_bytes(w.size) + 4;
        // (Whether the table fits decides for every rank, as in shm_scatterv.)
        flat::fits(&st.coll.tune, table)?;
        // SAFETY: `send`'s constructor guaranteed its arrays are NULL or hold
        // one value per rank; `fastv_pick` reads them only if not NULL.
        let (part, root, others) = unsafe { fastv_pick(st, w, root, recv, send, (sendbuf, recvbuf))? };
        // The root writes the table and the others' blocks; the others only arrive.
        let bytes = match part {
            FastVPart::Leaf { .. } => 0,
            FastVPart::Root { .. } => table + others,
        };
        Some(((part, root, table), bytes))
    })?;
    let (me, size) = (f.rank, f.size);
    Some((|| {
        f.wait_turn()?;
        let n = match part {
            FastVPart::Leaf { bytes } => bytes,
            FastVPart::Root { elem_size: u, extent: e, own } => {
                f.wait_free()?;
                // SAFETY: at the root `fastv_pick` found `displs` not NULL, so by
                // `send`'s constructor it holds one displacement per rank.
                let at = |j: usize| (sendbuf as *const u8).wrapping_offset(unsafe { displs.get(j) } as isize * e);
                let buf = f.buf(me);
                // SAFETY: this rank's block, free after `wait_free`, has room for
                // the table and the others' blocks (`table + others` bytes
                // announced on arrival); `sendcounts` is not NULL (`fastv_pick`),
                // so one count per rank, and each block of the lent send buffer
                // holds its count's contiguous bytes.
                let off = unsafe {
                    write_blocks(buf, size, table, |j, to| {
                        let n = if j == root { 0 } else { sendcounts.get(j) as usize * u };
                        fast_copy(at(j), to, n);
                        n
                    })
                };
                // SAFETY: the table's `size + 2` words are in the block (above).
                unsafe { write_table_word(buf, size + 1, 0) };
                f.publish(Some(table + off));
                if let Some(n) = own {
                    // SAFETY: `fastv_pick` checked the own block's `n` bytes match
                    // the receive buffer's and that the buffers differ; both lent.
                    unsafe { fast_copy(at(root), recvbuf as *mut u8, n) };
                }
                return Ok(());
            }
        };
        f.publish(None);
        f.wait_data(root..root + 1)?;
        let len = f.len_of(root);
        // SAFETY: the root published at least `table` bytes (checked first),
        // written before it published, so the table's words are there.
        if len < table || len == flat::BAD_LEN || unsafe { read_table_word(f.buf(root), size + 1) } != 0 {
            let v = rt::with(|st| typed(st, recv, "recvbuf")).map(|(c, dt)| typed_view(recvbuf, c, &dt))?;
            // SAFETY: the root has published (waited for above); `v` views the
            // lent receive buffer.
            return unsafe { scatterv_take(&f, root, Some(&v), comm) };
        }
        // SAFETY: the root published a table of `table` bytes (checked above);
        // `table_block` checks the block is `n` bytes inside what it
        // published, and the lent receive buffer has room for `n` contiguous
        // bytes (`fastv_pick`).
        unsafe { fast_copy(table_block(&f, root, me, table, n)?, recvbuf as *mut u8, n) };
        Ok(())
    })())
}

/// A blocking Gatherv on a communicator with a segment (every rank takes
/// the operation: the segment alone decides). Each rank but the root
/// writes its packed block to its buffer and publishes it, or, if it does
/// not fit, publishes its length with kind `Msg` and sends it as a message
/// under the operation's tag (see [`Flat::msg_tag`]); a rank with bad
/// arguments publishes [`flat::BAD_LEN`]. The root waits for every rank's header,
/// checks each length against its count (`MPI_ERR_TRUNCATE`), copies the
/// blocks out, and receives the ones sent as messages (into a temporary if
/// their length is not what it expects, so no sender waits forever).
pub(crate) unsafe fn shm_gatherv(
    send: UserBuf,
    recv: UserBlocks,
    root: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let (size, me, root, mine) = rooted(comm, root, |st, size, rank, root| {
        // SAFETY: `recv`'s constructor: its arrays are NULL or hold one value per rank.
        unsafe {
            rooted_args(st, &Who { rank, size }, root, (send, "sendbuf"), (recv, ["recvbuf", "recvcounts", "displs"]))
        }
    })?;
    let bytes = match &mine {
        Ok(Err(v)) => v.bytes(),
        _ => 0,
    };
    let (f, msg) = match segment_op(comm, bytes)? {
        Ok(x) => x,
        Err(e) => return Some(Err(e)),
    };
    let r = (|| {
        f.wait_turn()?;
        if me != root {
            f.wait_free()?;
            return match &mine {
                Ok(Err(v)) if !msg => {
                    // SAFETY: `v` views the lent send buffer (checked by
                    // `rooted_args`), and this rank's block, free after
                    // `wait_free`, holds the `bytes` it announced (not a message).
                    unsafe { v.dt.pack(v.p, v.count, std::slice::from_raw_parts_mut(f.buf(me), bytes)) };
                    f.publish(Some(bytes));
                    Ok(())
                }
                Ok(Err(v)) => {
                    f.publish(Some(bytes));
                    run_tagged(comm, f.msg_tag(), |_, s| {
                        let p = s.input(v.p, v.count, &v.dt);
                        s.send(p, bytes, root);
                        Ok(())
                    })
                }
                _ => {
                    f.publish(Some(flat::BAD_LEN));
                    Ok(())
                }
            };
        }
        f.publish(None);
        let blocks = mine.as_ref().ok().and_then(|m| m.as_ref().ok());
        if let Some((rv, Some(own))) = blocks {
            // SAFETY: both view lent buffers, checked by `rooted_args` (the
            // same packed size, not aliased).
            unsafe { copy_typed(own, &rv[root]) };
        }
        f.wait_data(0..root)?;
        f.wait_data(root + 1..size)?;
        // SAFETY: every other rank has published (waited for just above); the
        // views are of the root's lent receive blocks.
        unsafe { gatherv_collect(&f, blocks.map(|b| b.0.as_slice()), comm) }
    })();
    Some(match mine {
        Err(e) => Err(e),
        Ok(_) => r,
    })
}

/// The root's reading in [`shm_gatherv`], once every other rank has
/// published: each block into its place in `rv` (None: the root's
/// arguments are bad, the blocks sent as messages are only drained).
///
/// # Safety
/// Every other rank has published in `f`'s operation; `rv` views writable
/// memory for its blocks.
pub(crate) unsafe fn gatherv_collect(f: &Flat, rv: Option<&[parts::Typed]>, comm: MPI_Comm) -> MpiResult<()> {
    let (root, size) = (f.rank, f.size);
    let mut err = None;
    let mut by_msg = Vec::new();
    for r in (0..size).filter(|&r| r != root) {
        let got = f.len_of(r);
        if f.sent_by_message(r) {
            by_msg.push(r);
        } else if got == flat::BAD_LEN {
            err.get_or_insert(MpiError::new(
                MPI_ERR_TRUNCATE,
                format!("rank {r} of the Gatherv sends nothing (its arguments are bad)"),
            ));
        } else if let Some(rv) = rv {
            if got != rv[r].bytes() {
                err.get_or_insert(len_mismatch(r, got, rv[r].bytes()));
            } else {
                // SAFETY: rank `r` wrote `got` bytes to its block before it
                // published (this function's contract), and `rv[r]` views room
                // for as many (checked just before).
                unsafe { rv[r].dt.unpack(std::slice::from_raw_parts(f.buf(r), got), rv[r].p) };
            }
        }
    }
    if !by_msg.is_empty() {
        let r = run_tagged(comm, f.msg_tag(), |_, s| {
            for &r in &by_msg {
                let got = f.len_of(r);
                match rv {
                    Some(rv) if got == rv[r].bytes() => {
                        let p = s.output(rv[r].p, rv[r].count, &rv[r].dt);
                        s.recv(p, got, r);
                    }
                    _ => {
                        if let Some(rv) = rv {
                            err.get_or_insert(len_mismatch(r, got, rv[r].bytes()));
                        }
                        let t = s.tmp(got);
                        s.recv(t, got, r);
                    }
                }
            }
            Ok(())
        });
        if let Err(e) = r {
            err.get_or_insert(e);
        }
    }
    err.map_or(Ok(()), Err)
}

/// Copies typed data `from` to `to` (of the same packed size), through a
/// packed temporary unless both are contiguous.
///
/// # Safety
/// Both views address their elements; they do not overlap.
pub(crate) unsafe fn copy_typed(from: &parts::Typed, to: &parts::Typed) {
    let n = from.bytes();
    if from.dt.contig && to.dt.contig {
        // SAFETY: contiguous, so each view is `n` bytes at its address; they
        // do not overlap (this function's contract).
        unsafe { fast_copy(from.p, to.p, n) };
        return;
    }
    let mut tmp = vec![0u8; n];
    // SAFETY: `from` addresses its elements (this function's contract).
    unsafe { from.dt.pack(from.p, from.count, &mut tmp) };
    // SAFETY: `to` addresses its elements, `n` packed bytes as `from`'s.
    unsafe { to.dt.unpack(&tmp, to.p) };
}

/// A rank's reading in [`shm_scatterv`], once the root has published:
/// its block into `v` (None: this rank's arguments are bad; a block sent
/// as a message is only drained).
///
/// # Safety
/// The root has published in `f`'s operation; `v` views writable memory.
pub(crate) unsafe fn scatterv_take(f: &Flat, root: usize, v: Option<&parts::Typed>, comm: MPI_Comm) -> MpiResult<()> {
    let (me, size, table) = (f.rank, f.size, offset_table_bytes(f.size) + 4);
    let len = f.len_of(root);
    if len < table || len == flat::BAD_LEN {
        bail!(MPI_ERR_TRUNCATE, "the root of the Scatterv sends nothing (its arguments are bad)");
    }
    let src = f.buf(root);
    // SAFETY: the root published at least `table` bytes (checked above),
    // written before it published (this function's contract).
    if unsafe { read_table_word(src, size + 1) } == 0 {
        let Some(v) = v else { return Ok(()) };
        // SAFETY: as above, a table of `table` bytes was published.
        let at = unsafe { table_block(f, root, me, table, v.bytes())? };
        // SAFETY: `table_block` checked the block is `v.bytes()` bytes inside
        // what the root published; `v` views writable memory (the contract).
        unsafe { v.dt.unpack(std::slice::from_raw_parts(at, v.bytes()), v.p) };
        return Ok(());
    }
    // By message: the table still says how long the block is.
    // SAFETY: words `me` and `me + 1` of the published table (as above).
    let got = unsafe { read_table_word(src, me + 1).wrapping_sub(read_table_word(src, me)) };
    let mut err = None;
    let r = run_tagged(comm, f.msg_tag(), |_, s| {
        match v {
            Some(v) if v.bytes() == got => {
                let p = s.output(v.p, v.count, &v.dt);
                s.recv(p, got, root);
            }
            v => {
                if let Some(v) = v {
                    err = Some(len_mismatch(root, got, v.bytes()));
                }
                let t = s.tmp(got);
                s.recv(t, got, root);
            }
        }
        Ok(())
    });
    err.map_or(r, Err)
}

/// `MPI_ERR_TRUNCATE`: rank `r` has `got` bytes where this rank expects `want`.
pub(crate) fn len_mismatch(r: usize, got: usize, want: usize) -> MpiError {
    MpiError::new(MPI_ERR_TRUNCATE, format!("rank {r} of the collective has {got} bytes where this rank expects {want}: counts or types differ between ranks, or the ranks called different collectives (in different orders on this communicator)"))
}

/// A blocking Scatterv on a communicator with a segment (every rank takes
/// the operation). The root writes a table (each block's offset, and
/// whether the blocks go as messages) and, if they fit, the packed blocks
/// (its own excepted); else it sends each block as a message under the
/// operation's tag. Each rank waits for the root's header, learns the
/// length of its block from the table (`MPI_ERR_TRUNCATE` if it is not its
/// count; a block sent as a message is then received into a temporary, so
/// the root does not wait forever), and copies or receives it. A root with
/// bad arguments publishes [`flat::BAD_LEN`]. Runs only if the table fits the
/// segment (up to 8190 ranks; decided by the size, alike everywhere).
pub(crate) unsafe fn shm_scatterv(
    send: UserBlocks,
    recv: UserBuf,
    root: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let (size, me, root, mine) = rooted(comm, root, |st, size, rank, root| {
        // SAFETY: `send`'s constructor: its arrays are NULL or hold one value per rank.
        unsafe {
            rooted_args(st, &Who { rank, size }, root, (recv, "recvbuf"), (send, ["sendbuf", "sendcounts", "displs"]))
        }
    })?;
    // The offsets of the blocks, then whether they go as messages.
    let table = offset_table_bytes(size) + 4;
    // The root's bytes: the table and the others' blocks.
    let data = match &mine {
        Ok(Ok((sv, _))) => (0..size).filter(|&j| j != root).map(|j| sv[j].bytes()).sum(),
        _ => 0,
    };
    // Whether the table fits (else messages, decided by the size alike
    // everywhere), and whether the blocks do (else the root writes the
    // table alone).
    let (table_fits, msg) = rt::with(|st| {
        Ok((flat::fits(&st.coll.tune, table).is_some(), flat::fits(&st.coll.tune, table + data).is_none()))
    })
    .ok()?;
    if !table_fits {
        return None;
    }
    let (f, _) = match segment_op(
        comm,
        if me != root {
            0
        } else if msg {
            table
        } else {
            table + data
        },
    )? {
        Ok(x) => x,
        Err(e) => return Some(Err(e)),
    };
    let r = (|| {
        f.wait_turn()?;
        if me == root {
            let Ok(Ok((sv, own))) = &mine else {
                f.wait_free()?;
                f.publish(Some(flat::BAD_LEN));
                return Ok(());
            };
            f.wait_free()?;
            let buf = f.buf(me);
            // SAFETY: this rank's block, free after `wait_free`, holds the
            // table and (unless `msg`) the others' blocks it announced; each
            // view of `sv` is of the lent send buffer (`rooted_args`).
            unsafe {
                write_blocks(buf, size, table, |j, at| {
                    let (v, n) = (&sv[j], if j == root { 0 } else { sv[j].bytes() });
                    if !msg && n > 0 {
                        v.dt.pack(v.p, v.count, std::slice::from_raw_parts_mut(at, n));
                    }
                    n
                })
            };
            // SAFETY: the table's `size + 2` words are in the block (above).
            unsafe { write_table_word(buf, size + 1, msg as usize) };
            f.publish(Some(if msg { table } else { table + data }));
            if let Some(own) = own {
                // SAFETY: both view lent buffers, checked by `rooted_args` (the
                // same packed size, not aliased).
                unsafe { copy_typed(&sv[root], own) };
            }
            if msg {
                return run_tagged(comm, f.msg_tag(), |_, s| {
                    for j in (0..size).filter(|&j| j != root) {
                        let p = s.input(sv[j].p, sv[j].count, &sv[j].dt);
                        s.send(p, sv[j].bytes(), j);
                    }
                    Ok(())
                });
            }
            return Ok(());
        }
        f.publish(None);
        f.wait_data(root..root + 1)?;
        // SAFETY: the root has published (waited for just above); the view is
        // of the lent receive buffer (`rooted_args`).
        unsafe { scatterv_take(&f, root, mine.as_ref().ok().and_then(|m| m.as_ref().err()), comm) }
    })();
    Some(match mine {
        Err(e) => Err(e),
        Ok(_) => r,
    })
}
