//! `mpitrace tui DIR`: a terminal browser for MPI traces.
//!
//! The state and its logic ([`app::App`]: keys, mouse, zoom, search,
//! jumps, background loading) are separate from the drawing ([`ui::draw`],
//! a function of the state), so tests drive the app and look at the
//! screen through ratatui's `TestBackend`. [`run`] owns the terminal: it
//! enters raw mode and the alternate screen, and restores the terminal on
//! exit, on a panic and on SIGINT/SIGTERM/SIGHUP.
//!
//! The timeline is drawn from the level-of-detail core ([`trace_lod`]), so
//! a frame costs about the same on a trace of a thousand events and on one
//! of a hundred million; the panels come from the analyzers.

pub mod app;
pub mod data;
pub mod keys;
pub mod search;
mod term;
pub mod ui;
pub mod view;

pub use app::App;
pub use term::{run, run_last};

/// Errors of the viewer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The terminal failed (also: there is none). Not a `source`, so that
    /// a report of the error chain says it once.
    #[error("terminal: {0}")]
    Terminal(std::io::Error),
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::Terminal(e)
    }
}
