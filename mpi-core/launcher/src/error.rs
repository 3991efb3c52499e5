//! The launcher's error type.

use std::fmt;
use std::io;

/// Everything that can stop `mpirun` or a compiler wrapper before or while it
/// starts a job.
#[derive(Debug)]
pub enum Error {
    /// A bad command line; the text says what is wrong.
    Usage(String),
    /// The program to run could not be found or is not executable.
    ProgramNotFound(String),
    /// A system call or file operation failed.
    Io { context: String, source: io::Error },
}

impl Error {
    /// Wraps an I/O error with a note on what was being done.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io { context: context.into(), source }
    }

    /// The exit status a launcher should use for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            Error::ProgramNotFound(_) => 127,
            Error::Io { .. } => 1,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(msg) => write!(f, "{msg}"),
            Error::ProgramNotFound(msg) => write!(f, "{msg}"),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, Error>;
