//! The Fortran boundary of `mpif.h` and `use mpi`: MPICH's Fortran ABI
//! (gfortran's calling convention, every argument by address, the hidden
//! lengths of `CHARACTER` arguments last; a handle is the C handle's value).
//!
//! Most wrappers are generated from the API table
//! (`mpi_api::fortran::rust_wrappers`, included below); each converts its
//! arguments with [`conv`] and calls the C procedure: the `mpi_` spellings
//! the `MPI_` symbol found dynamically (a profiling library that wraps the C
//! calls sees Fortran calls too, as on MPICH), the `pmpi_` spellings `PMPI_`.
//! [`handwritten`] holds the procedures whose Fortran form is not the C one
//! with addresses: initialization, attributes and their callbacks.
//!
//! The special arguments (`MPI_BOTTOM`, `MPI_IN_PLACE`, `MPI_STATUS_IGNORE`,
//! ...) are variables in MPICH's common blocks (`mpif.h`); the program's own
//! copy of each block (a program defines the blocks it includes) is found by
//! name, and an argument at one of their addresses is the C constant.
#![allow(non_upper_case_globals)]

/// Exports the spellings of one procedure: `mpi_` ones call `$body` with
/// `P = false` (the C `MPI_` symbol), `pmpi_` ones with `P = true` (`PMPI_`).
macro_rules! spellings {
    ($body:ident $params:tt $args:tt ; $($m:ident),+ ; $($p:ident),+) => {
        $(
            /// The Fortran binding (see the module).
            ///
            /// # Safety
            /// The arguments are what a Fortran caller passes.
            #[no_mangle]
            pub unsafe extern "C" fn $m $params {
                // SAFETY: the caller's arguments are passed on unchanged.
                unsafe { $body::<false> $args }
            }
        )+
        $(
            /// The Fortran binding (see the module), profiling name.
            ///
            /// # Safety
            /// The arguments are what a Fortran caller passes.
            #[no_mangle]
            pub unsafe extern "C" fn $p $params {
                // SAFETY: the caller's arguments are passed on unchanged.
                unsafe { $body::<true> $args }
            }
        )+
    };
}

pub mod conv;
pub mod f08;
mod handwritten;
mod requests;

use conv::Common;

// The common blocks of `mpif.h` (sizes as there). A program that includes
// `mpif.h` has its own definitions, which take precedence over these; these
// make the program export its copies (a shared library defines the names).
/// `COMMON /MPIPRIV1/ MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE(5)`.
#[no_mangle]
pub static mpipriv1_: Common<28> = Common::new();
/// `COMMON /MPIPRIV2/ MPI_STATUSES_IGNORE(5,1), MPI_ERRCODES_IGNORE(1)`.
#[no_mangle]
pub static mpipriv2_: Common<24> = Common::new();
/// `COMMON /MPIPRIVC/ MPI_ARGVS_NULL(1,1), MPI_ARGV_NULL(1)` (characters).
#[no_mangle]
pub static mpiprivc_: Common<2> = Common::new();
/// `COMMON /MPIFCMB5/ MPI_UNWEIGHTED`.
#[no_mangle]
pub static mpifcmb5_: Common<4> = Common::new();
/// `COMMON /MPIFCMB9/ MPI_WEIGHTS_EMPTY`.
#[no_mangle]
pub static mpifcmb9_: Common<4> = Common::new();

/// The generated wrappers.
#[allow(non_snake_case, clippy::too_many_arguments)]
mod generated {
    use super::conv;
    include!(concat!(env!("OUT_DIR"), "/fortran.rs"));
}

/// Every procedure with a generated Fortran binding.
pub use generated::FORTRAN_GENERATED;
