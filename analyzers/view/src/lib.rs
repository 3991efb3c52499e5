//! The viewer core: what the terminal viewer (`tui`) and the desktop
//! viewer (`gui`) share below their screens, so neither depends on the
//! other.
//!
//! - [`loader`]: opening a trace in the background, with progress: the
//!   level of detail first (the timeline can be drawn as soon as it is
//!   there), then the analyses, built from the batches the level of
//!   detail decoded (each rank's events read once for both); or the same
//!   at once ([`load_now`]).
//! - [`messages`]: the analyses seen from a timeline, in the trace's own
//!   time: matched messages to draw, the model's calls behind what the
//!   level of detail shows, user regions.
//! - [`overlay`]: the critical path per rank and the worst instances of
//!   every wait state, as the report computed them, in trace time.
//! - [`palette`]: the colour of each kind of MPI call, as data each
//!   viewer turns into its own colour type.
//! - [`threads`]: one lane per thread of the ranks that called MPI from
//!   several threads, built from the analyses' model.
//! - [`time`]: formatting and parsing times and durations.
//!
//! Nothing here knows a screen: the crate depends on the level-of-detail
//! core and the analyzers only.

pub mod loader;
pub mod messages;
pub mod overlay;
pub mod palette;
pub mod threads;
pub mod time;

pub use loader::{guarded, load_now, Loaded, Loader, Opened};
pub use messages::MessageView;
pub use overlay::{CriticalPathView, WaitJump, WorstWaits};
pub use palette::{CallKind, Swatch};
pub use threads::{Edge, ThreadLanes};
