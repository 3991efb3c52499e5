//! Where the layers above the runtime plug into it.
//!
//! The runtime (`rt`: the engine, requests, communicators, the wait loop)
//! is the lower layer: it does not name the collectives (`coll`) or
//! one-sided communication (`rt::win`, whose C API is `capi::win`). Two
//! things still tie them together, and both are bound here, once:
//!
//! * Per-process state of a layer lives in [`crate::rt::State`], as a field
//!   of the type named here (`st.coll`, `st.wins`): the collectives reach
//!   their state with a field access, not a lookup in a registry of boxed
//!   `Any`s, and the runtime stores it without knowing the module. (A
//!   `State` generic over its layers would carry a type parameter through
//!   every function of the library for no gain: there is one set of layers.)
//! * The runtime's progress round ([`crate::rt::State::progress`]) calls
//!   the hooks in [`PROGRESS_HOOKS`] after the engine's progress, the ones
//!   the runtime is given when it starts.

use crate::rt::ProgressHook;

/// The collectives' state in [`crate::rt::State::coll`]: tags, active
/// nonblocking operations, user operations, tuning, shared-memory segments.
pub type CollState = crate::coll::Colls;

/// A persistent collective's schedule, kept in its request
/// (`rt::p2p::Persist::Coll`) and run again by each `MPI_Start`.
pub type PersistentColl = crate::coll::SharedSched;

/// One-sided communication's state in [`crate::rt::State::wins`]: the windows.
pub type RmaState = crate::rt::win::Wins;

/// The progress hooks of the layers, in the order a progress round calls
/// them: the nonblocking collectives advance their schedules, then windows'
/// targets apply the RMA operations that arrived.
pub const PROGRESS_HOOKS: &[ProgressHook] = &[crate::coll::progress, crate::rt::win::progress];
