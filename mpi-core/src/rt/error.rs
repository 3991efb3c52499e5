//! Errors of the runtime: an MPI error class and a message naming the problem.

use std::fmt;
use std::os::raw::c_int;

use mpi_api::abi::*;

/// An MPI error: the class returned to C and a human-readable explanation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpiError {
    pub class: c_int,
    pub msg: String,
}

impl fmt::Display for MpiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.msg, class_string(self.class))
    }
}

impl std::error::Error for MpiError {}

pub type MpiResult<T> = Result<T, MpiError>;

impl MpiError {
    pub fn new(class: c_int, msg: impl Into<String>) -> Self {
        MpiError { class, msg: msg.into() }
    }
}

/// `return Err(MpiError)` with a formatted message.
#[macro_export]
macro_rules! bail {
    ($class:expr, $($fmt:tt)*) => {
        return Err($crate::rt::error::MpiError::new($class, format!($($fmt)*)))
    };
}

/// The standard's description of every error class.
pub fn class_string(class: c_int) -> &'static str {
    match class {
        MPI_SUCCESS => "No MPI error",
        MPI_ERR_BUFFER => "Invalid buffer pointer",
        MPI_ERR_COUNT => "Invalid count argument",
        MPI_ERR_TYPE => "Invalid datatype argument",
        MPI_ERR_TAG => "Invalid tag argument",
        MPI_ERR_COMM => "Invalid communicator",
        MPI_ERR_RANK => "Invalid rank",
        MPI_ERR_ROOT => "Invalid root",
        MPI_ERR_GROUP => "Invalid group",
        MPI_ERR_OP => "Invalid operation",
        MPI_ERR_TOPOLOGY => "Invalid topology",
        MPI_ERR_DIMS => "Invalid dimension argument",
        MPI_ERR_ARG => "Invalid argument of some other kind",
        MPI_ERR_UNKNOWN => "Unknown error",
        MPI_ERR_TRUNCATE => "Message truncated on receive",
        MPI_ERR_OTHER => "Known error not in this list",
        MPI_ERR_INTERN => "Internal MPI (implementation) error",
        MPI_ERR_IN_STATUS => "Error code is in status",
        MPI_ERR_PENDING => "Pending request",
        MPI_ERR_REQUEST => "Invalid request (handle)",
        MPI_ERR_ACCESS => "Permission denied",
        MPI_ERR_AMODE => "Error related to the amode passed to MPI_FILE_OPEN",
        MPI_ERR_BAD_FILE => "Invalid file name",
        MPI_ERR_CONVERSION => "An error occurred in a user supplied data conversion function",
        MPI_ERR_DUP_DATAREP => "Conversion functions could not be registered because a data representation identifier that was already defined was passed to MPI_REGISTER_DATAREP",
        MPI_ERR_FILE_EXISTS => "File exists",
        MPI_ERR_FILE_IN_USE => "File operation could not be completed, as the file is currently open by some process",
        MPI_ERR_FILE => "Invalid file handle",
        MPI_ERR_INFO => "Invalid info argument",
        MPI_ERR_INFO_KEY => "Key longer than MPI_MAX_INFO_KEY",
        MPI_ERR_INFO_VALUE => "Value longer than MPI_MAX_INFO_VAL",
        MPI_ERR_INFO_NOKEY => "Invalid key passed to MPI_INFO_DELETE",
        MPI_ERR_IO => "Other I/O error",
        MPI_ERR_NAME => "Invalid service name passed to MPI_LOOKUP_NAME",
        MPI_ERR_NO_MEM => "MPI_ALLOC_MEM failed because memory is exhausted",
        MPI_ERR_NOT_SAME => "Collective argument not identical on all processes, or collective routines called in a different order by different processes",
        MPI_ERR_NO_SPACE => "Not enough space",
        MPI_ERR_NO_SUCH_FILE => "File does not exist",
        MPI_ERR_PORT => "Invalid port name passed to MPI_COMM_CONNECT",
        MPI_ERR_QUOTA => "Quota exceeded",
        MPI_ERR_READ_ONLY => "Read-only file or file system",
        MPI_ERR_SERVICE => "Invalid service name passed to MPI_UNPUBLISH_NAME",
        MPI_ERR_SPAWN => "Error in spawning processes",
        MPI_ERR_UNSUPPORTED_DATAREP => "Unsupported datarep passed to MPI_FILE_SET_VIEW",
        MPI_ERR_UNSUPPORTED_OPERATION => "Unsupported operation, such as seeking on a file which supports sequential access only",
        MPI_ERR_WIN => "Invalid win argument",
        MPI_ERR_BASE => "Invalid base passed to MPI_FREE_MEM",
        MPI_ERR_LOCKTYPE => "Invalid locktype argument",
        MPI_ERR_KEYVAL => "Invalid keyval has been passed",
        MPI_ERR_RMA_CONFLICT => "Conflicting accesses to window",
        MPI_ERR_RMA_SYNC => "Wrong synchronization of RMA calls",
        MPI_ERR_SIZE => "Invalid size argument",
        MPI_ERR_DISP => "Invalid disp argument",
        MPI_ERR_ASSERT => "Invalid assert argument",
        MPI_ERR_RMA_RANGE => "Target memory is not part of the window",
        MPI_ERR_RMA_ATTACH => "Memory cannot be attached",
        MPI_ERR_RMA_SHARED => "Memory cannot be shared",
        MPI_ERR_RMA_FLAVOR => "Passed window has the wrong flavor for the called function",
        MPI_ERR_SESSION => "Invalid session handle",
        MPI_ERR_PROC_ABORTED => "Operation failed because a peer process has aborted",
        MPI_ERR_VALUE_TOO_LARGE => "Value is too large to store",
        MPI_ERR_ERRHANDLER => "Invalid errhandler argument",
        MPI_T_ERR_NOT_ACCESSIBLE => "Tool information interface: the requested functionality is not accessible",
        c if (MPI_T_ERR_MEMORY..=MPI_T_ERR_NOT_SUPPORTED).contains(&c) => "Tool information interface error",
        MPIX_ERR_PROC_FAILED => "A process has failed",
        MPIX_ERR_PROC_FAILED_PENDING => "A process failure keeps this request pending",
        MPIX_ERR_REVOKED => "The communication object has been revoked",
        MPIX_ERR_EAGAIN => "The operation could not be issued (try again)",
        MPIX_ERR_NOREQ => "No request could be allocated",
        _ => "Unknown error class",
    }
}
