//! The one source of truth for the MPI C API in this project.
//!
//! * [`abi`]: the MPICH ABI (types, handle encodings, constants).
//! * [`ompi`]: Open MPI's native ABI (pointer handles, its constants and
//!   `MPI_Status`), which the tracing shim also wraps.
//! * [`table`]: every procedure of the standard with its parameters, generated
//!   from the MPI Forum's `pympistandard` (see `gen/generate.py`).
//! * [`codegen`]: turns the table into Rust `extern "C"` signatures and C
//!   prototypes; used by the build scripts of `mpi-core` (exports, `mpi.h`) and
//!   `pmpi-shim` (wrappers).
//! * [`stdabi`]: the MPI-5 standard ABI (constants, `MPI_Status`, their
//!   correspondence to [`abi`]) and the generators of `libmpi_abi.so`'s
//!   boundary and `mpi_abi.h` (crate `mpi-stdabi`).
//!
//! This crate has no dependencies and knows nothing of an MPI runtime, so the
//! shim can share it without linking the library.

pub mod abi;
pub mod codegen;
pub mod fortran;
pub mod ompi;
pub mod stdabi;
pub mod table;
