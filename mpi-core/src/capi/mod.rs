//! The C API, one module per chapter. Every `pub unsafe fn MPI_X` here is
//! exported as `MPI_X`/`PMPI_X` by the generated wrappers.
#![allow(non_snake_case, clippy::missing_safety_doc)]

mod env;
pub use env::*;
