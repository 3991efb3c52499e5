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
//! at 2 ids per intracommunicator (4 per intercommunicator) the 30 bits an
//! offer carries (the top bits say "busy" and "failed", see below) last half
//! a billion creations.
//! Point-to-point traffic uses `ctx`, collectives `ctx + 1`, and an
//! intercommunicator's internal traffic inside its local group `ctx + 2`.
//!
//! Threads (`MPI_THREAD_MULTIPLE`) may create communicators from different
//! parents at the same time, and two such agreements in one process must
//! not both settle on the same id. An agreement therefore runs in rounds
//! (see [`CtxAgreements`]): in a round, a process offers its counter only if
//! it holds the process's single token, otherwise it offers "busy"; the
//! round succeeds when nobody was busy, and the id is then above every id
//! this process took (the token kept all other agreements from taking one
//! meanwhile). The token goes to the waiting agreement with the smallest
//! key (its parent communicator, the same in every member), so the agreement
//! with the smallest key among those in progress anywhere gets the token in
//! all its members and finishes: no livelock. An agreement competes for the
//! token only once all its members are known to be in it (after an exchange
//! that needs all of them), so a member held up elsewhere — perhaps waiting
//! for what another agreement leads to — never blocks others: no deadlock.
//! Below `MPI_THREAD_MULTIPLE` no two agreements of one process overlap and
//! every agreement succeeds in its first round (one reduction and one
//! broadcast).
//!
//! An intercommunicator keeps the REMOTE group in `group` and this process's
//! rank in the LOCAL group in `rank`, so point-to-point (which sends to
//! `group[dest]` with source `rank`) works unchanged; the local group is in
//! `local`.

use std::collections::HashMap;
use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::attr::{Attrs, Keyvals};
use super::errh::ErrorRegistry;
use super::error::{MpiError, MpiResult};
use super::group::GroupTable;
use super::info::Pairs;
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

/// Identifies an agreement on a context id among those one process may run
/// at the same time: the parent communicator (its context id and the
/// smallest world rank in it, which together name one communicator across
/// the job, since a process never sees two live communicators with the same
/// id) and what is made of it (0, or a tag of `MPI_Comm_create_group` or
/// `MPI_Intercomm_create`). The same in every member of the agreement.
pub type CtxKey = (u32, u32, u64);

/// Marks a round's offer (and the combined result) as "somebody was busy".
pub const CTX_BUSY: u32 = 1 << 31;
/// Marks an offer as "my arguments are wrong": the construction fails in
/// every process (nobody waits for the one that gave up).
pub const CTX_FAILED: u32 = 1 << 30;
const CTX_FLAGS: u32 = CTX_BUSY | CTX_FAILED;
/// Context of the library's internal traffic for communicators made from
/// groups of sessions (`MPI_Comm_create_from_group`,
/// `MPI_Intercomm_create_from_groups`), which have no parent communicator:
/// reserved above every id an agreement hands out.
pub const CTX_SESSIONS: u32 = CTX_FAILED - 2;

/// How two offers of a round combine: the flags of either, and the maximum.
pub fn combine_offers(a: u32, b: u32) -> u32 {
    ((a | b) & CTX_FLAGS) | (a & !CTX_FLAGS).max(b & !CTX_FLAGS)
}

/// This process's agreements in progress and who holds the token.
#[derive(Debug, Default)]
pub struct CtxAgreements {
    waiting: Vec<CtxKey>,
    token: Option<CtxKey>,
}

impl CtxAgreements {
    pub fn register(&mut self, key: CtxKey) {
        self.waiting.push(key);
    }
    /// Drops agreement `key` (finished or failed), releasing the token.
    pub fn unregister(&mut self, key: CtxKey) {
        self.waiting.retain(|&k| k != key);
        self.release(key);
    }
    /// Takes the token for a round if it is free and `key` is the smallest
    /// agreement waiting.
    pub fn try_acquire(&mut self, key: CtxKey) -> bool {
        if self.token.is_none() && self.waiting.iter().min() == Some(&key) {
            self.token = Some(key);
        }
        self.token == Some(key)
    }
    pub fn release(&mut self, key: CtxKey) {
        if self.token == Some(key) {
            self.token = None;
        }
    }
    pub fn in_progress(&self) -> usize {
        self.waiting.len()
    }
}

pub struct CommTable {
    world: Comm,
    self_: Comm,
    user: Slots<Comm>,
    /// Next context id this process has not used.
    pub next_ctx: u32,
    pub agreements: CtxAgreements,
    /// `MPI_Comm_idup`s in progress, by parent (its context id): how many
    /// were started and how many have finished. They run one after the
    /// other per parent, in the order they were called.
    idups: HashMap<u32, (u64, u64)>,
    pub groups: GroupTable,
    pub keyvals: Keyvals,
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
            agreements: CtxAgreements::default(),
            idups: HashMap::new(),
            groups: GroupTable::default(),
            keyvals: Keyvals::default(),
            errors: ErrorRegistry::default(),
        }
    }

    /// Inserts a new communicator (with the hidden local communicator of an
    /// intercommunicator, and a hold on the keyvals of its attributes); its
    /// handle.
    pub fn publish(&mut self, mut c: Comm) -> MPI_Comm {
        for &(k, _) in &c.attrs {
            self.keyvals.hold(k);
        }
        if c.is_inter() {
            let mut l = Comm::intra(c.ctx + 2, c.local_group().clone(), c.rank, MPI_ERRORS_RETURN);
            l.name = "local group of an intercommunicator".into();
            c.local_comm = self.insert(l);
        }
        self.insert(c)
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

    /// Every communicator, the predefined ones first.
    pub fn all(&self) -> impl Iterator<Item = &Comm> {
        [&self.world, &self.self_].into_iter().chain(self.user.iter())
    }

    /// Number of live user communicators (for leak checks).
    pub fn live(&self) -> usize {
        self.user.live()
    }

    /// Marks context ids up to `ctx + span` as used by this process.
    pub fn take_ctx(&mut self, ctx: u32, span: u32) {
        self.next_ctx = self.next_ctx.max(ctx + span);
    }

    /// Registers an `MPI_Comm_idup` of the parent with context `ctx`; its
    /// ticket says when its turn comes ([`CommTable::idup_turn`]).
    pub fn idup_start(&mut self, ctx: u32) -> u64 {
        let e = self.idups.entry(ctx).or_default();
        e.0 += 1;
        e.0 - 1
    }
    /// Whether the idup with `ticket` on parent `ctx` may run (all those
    /// called before it on that parent have finished).
    pub fn idup_turn(&self, ctx: u32, ticket: u64) -> bool {
        !matches!(self.idups.get(&ctx), Some(&(_, done)) if done != ticket)
    }
    pub fn idup_end(&mut self, ctx: u32) {
        if let Some(e) = self.idups.get_mut(&ctx) {
            e.1 += 1;
            if e.1 == e.0 {
                self.idups.remove(&ctx);
            }
        }
    }
    /// Whether an idup of parent `ctx` is in progress.
    pub fn idup_pending(&self, ctx: u32) -> bool {
        self.idups.contains_key(&ctx)
    }
    /// Whether any idup is in progress (on its own thread).
    pub fn idups_running(&self) -> bool {
        !self.idups.is_empty()
    }

    /// This process's offer for a round of agreement `key`: its counter if
    /// it holds the token, else busy. Fails once ids run out.
    pub fn offer(&mut self, key: CtxKey, span: u32) -> MpiResult<u32> {
        if self.next_ctx + span > CTX_SESSIONS {
            return Err(MpiError::new(MPI_ERR_INTERN, "context ids exhausted (2^30 used)"));
        }
        Ok(if self.agreements.try_acquire(key) { self.next_ctx } else { CTX_BUSY })
    }

    /// Ends a round of agreement `key` with the combined offers: the new
    /// context id if nobody was busy (the agreement is over), `None` if
    /// somebody was (another round follows), an error if somebody failed.
    pub fn settle(&mut self, key: CtxKey, combined: u32, span: u32) -> MpiResult<Option<u32>> {
        self.agreements.release(key);
        if combined & CTX_FAILED != 0 {
            self.agreements.unregister(key);
            return Err(failed_elsewhere());
        }
        if combined & CTX_BUSY != 0 {
            return Ok(None);
        }
        self.take_ctx(combined, span);
        self.agreements.unregister(key);
        Ok(Some(combined))
    }
}

/// What the processes whose arguments were right report when another
/// process's were not.
/// The info keys a communicator uses (MPI 4.0 sections 7.4.4 and 7.4.2):
/// the four assertions, and the hardware resource a split by
/// `MPI_COMM_TYPE_HW_GUIDED` was given.
const COMM_KEYS: [&str; 5] = [
    "mpi_assert_no_any_tag",
    "mpi_assert_no_any_source",
    "mpi_assert_exact_length",
    "mpi_assert_allow_overtaking",
    "mpi_hw_resource_type",
];

/// `MPI_Comm_get_info`: the hints of the communicator that the library
/// knows; keys it does not know are ignored, not "used", and so not
/// returned (MPI 4.0 7.4.4: "any user-supplied hints that were not ignored
/// by the implementation"; as MPICH).
pub fn info_used(hints: &Pairs) -> Pairs {
    hints.iter().filter(|(k, _)| COMM_KEYS.contains(&k.as_str())).cloned().collect()
}

pub fn failed_elsewhere() -> MpiError {
    MpiError::new(MPI_ERR_ARG, "another process gave invalid arguments to this collective communicator construction")
}

/// The key of agreements whose parent is communicator `c` (see [`CtxKey`]).
pub fn ctx_key(c: &Comm, what: u64) -> CtxKey {
    let lowest = c.group.iter().chain(c.local.iter().flat_map(|l| l.iter())).min().copied().unwrap_or(0);
    (c.ctx, lowest as u32, what)
}

fn invalid(c: c_int) -> MpiError {
    MpiError::new(MPI_ERR_COMM, format!("invalid communicator handle 0x{:08x}", c as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offers_combine_to_the_maximum_unless_someone_is_busy() {
        assert_eq!(combine_offers(4, 10), 10);
        assert_eq!(combine_offers(10, 4), 10);
        assert_eq!(combine_offers(CTX_BUSY, 10) & CTX_BUSY, CTX_BUSY);
        assert_eq!(combine_offers(12, CTX_BUSY | 3), CTX_BUSY | 12);
        assert_eq!(combine_offers(CTX_FAILED | CTX_BUSY, 7), CTX_FAILED | CTX_BUSY | 7);
    }

    #[test]
    fn one_token_per_process_and_the_smallest_key_gets_it() {
        let mut t = CommTable::new(0, 2);
        let (a, b) = ((6, 0, 0), (8, 0, 0));
        t.agreements.register(b);
        // b alone: it offers its counter.
        assert_eq!(t.offer(b, 2).unwrap(), 4);
        // a arrives while b holds the token: busy, though its key is smaller.
        t.agreements.register(a);
        assert_eq!(t.offer(a, 2).unwrap(), CTX_BUSY);
        // b's round fails (someone elsewhere was busy): no id taken.
        assert_eq!(t.settle(b, CTX_BUSY | 4, 2).unwrap(), None);
        assert_eq!(t.next_ctx, 4);
        // Now the smaller key wins the token; b is busy.
        assert_eq!(t.offer(b, 2).unwrap(), CTX_BUSY);
        assert_eq!(t.offer(a, 2).unwrap(), 4);
        // a settles on 10 (another member's counter): ids up to 12 taken.
        assert_eq!(t.settle(a, 10, 2).unwrap(), Some(10));
        assert_eq!(t.next_ctx, 12);
        assert_eq!(t.settle(b, CTX_BUSY, 2).unwrap(), None);
        // b now offers above everything a took.
        assert_eq!(t.offer(b, 4).unwrap(), 12);
        assert_eq!(t.settle(b, 12, 4).unwrap(), Some(12));
        assert_eq!((t.next_ctx, t.agreements.in_progress()), (16, 0));
    }

    #[test]
    fn a_failed_offer_fails_the_agreement_and_takes_no_id() {
        let mut t = CommTable::new(0, 2);
        let a = (6, 0, 0);
        t.agreements.register(a);
        let o = t.offer(a, 2).unwrap();
        assert_eq!(t.settle(a, combine_offers(o, CTX_FAILED | CTX_BUSY), 2).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!((t.next_ctx, t.agreements.in_progress()), (4, 0));
        // The token is free again.
        t.agreements.register((8, 0, 0));
        assert_eq!(t.offer((8, 0, 0), 2).unwrap(), 4);
    }

    #[test]
    fn failed_agreement_releases_the_token() {
        let mut t = CommTable::new(0, 1);
        let (a, b) = ((6, 0, 0), (8, 0, 0));
        t.agreements.register(a);
        t.agreements.register(b);
        assert_eq!(t.offer(a, 2).unwrap(), 4);
        t.agreements.unregister(a);
        assert_eq!(t.offer(b, 2).unwrap(), 4);
    }

    #[test]
    fn idups_of_one_parent_take_turns() {
        let mut t = CommTable::new(0, 1);
        assert!(!t.idups_running());
        let (a, b) = (t.idup_start(4), t.idup_start(4));
        let c = t.idup_start(8);
        assert!(t.idup_turn(4, a) && !t.idup_turn(4, b) && t.idup_turn(8, c));
        t.idup_end(4);
        assert!(t.idup_turn(4, b) && t.idup_pending(4));
        t.idup_end(4);
        t.idup_end(8);
        assert!(!t.idup_pending(4) && !t.idups_running());
    }

    #[test]
    fn keys_name_the_parent_by_context_and_lowest_member() {
        let c = Comm::intra(8, Arc::new(vec![5, 3, 7]), 0, MPI_ERRORS_RETURN);
        assert_eq!(ctx_key(&c, 2), (8, 3, 2));
        let mut i = Comm::intra(12, Arc::new(vec![5, 7]), 0, MPI_ERRORS_RETURN);
        i.local = Some(Arc::new(vec![1, 2]));
        assert_eq!(ctx_key(&i, 0), (12, 1, 0));
    }
}
