use std::os::raw::c_int;

use mpi_api::abi::*;

pub unsafe fn MPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
    MPI_SUCCESS
}
