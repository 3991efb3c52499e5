//! The parts of MPICH's `use mpi_f08` (and `use mpi`) that a program built
//! with MPICH's modules links from MPICH's Fortran library rather than
//! compiles in: the variables behind `MPI_BOTTOM`, `MPI_IN_PLACE`,
//! `MPI_STATUS(ES)_IGNORE`... (their addresses are recognised by [`conv`]),
//! and the module procedures the modules' interfaces name: `==` and `/=`
//! on handles, `MPI_Sizeof`, handle and status conversions, the predefined
//! attribute callbacks. Their names and argument conventions are facts of
//! MPICH 4's modules compiled by gfortran (a module procedure `p` of module
//! `m` is the symbol `__m_MOD_p`); the generated `mpi_x_f08ts_` entries
//! that take array descriptors are with the other wrappers.
//!
//! [`conv`]: super::conv
#![allow(non_upper_case_globals)]

use std::ffi::{c_int, c_void};

use super::conv::{self, Common};

/// `MPI_BOTTOM` of MPICH's `mpi_f08`.
#[no_mangle]
pub static MPIR_F08_MPI_BOTTOM: Common<4> = Common::new();
/// `MPI_IN_PLACE` of MPICH's `mpi_f08`.
#[no_mangle]
pub static MPIR_F08_MPI_IN_PLACE: Common<4> = Common::new();
/// `MPI_STATUS_IGNORE` of MPICH's `mpi_f08` (a `TYPE(MPI_Status)`).
#[no_mangle]
pub static MPIR_F08_MPI_STATUS_IGNORE_OBJ: Common<20> = Common::new();
/// `MPI_STATUSES_IGNORE` of MPICH's `mpi_f08` (one `TYPE(MPI_Status)`).
#[no_mangle]
pub static MPIR_F08_MPI_STATUSES_IGNORE_OBJ: Common<20> = Common::new();
/// `MPI_ERRCODES_IGNORE` of MPICH's `mpi_f08` (a module variable).
#[export_name = "__mpi_f08_link_constants_MOD_mpi_errcodes_ignore"]
pub static ERRCODES_IGNORE: Common<4> = Common::new();
/// `MPI_UNWEIGHTED` of MPICH's `mpi_f08`.
#[export_name = "__mpi_f08_link_constants_MOD_mpi_unweighted"]
pub static UNWEIGHTED: Common<4> = Common::new();
/// `MPI_WEIGHTS_EMPTY` of MPICH's `mpi_f08`.
#[export_name = "__mpi_f08_link_constants_MOD_mpi_weights_empty"]
pub static WEIGHTS_EMPTY: Common<4> = Common::new();
/// `MPI_ARGV_NULL` of MPICH's `mpi_f08` (`CHARACTER(LEN=1)`).
#[export_name = "__mpi_f08_link_constants_MOD_mpi_argv_null"]
pub static ARGV_NULL: Common<1> = Common::new();
/// `MPI_ARGVS_NULL` of MPICH's `mpi_f08`.
#[export_name = "__mpi_f08_link_constants_MOD_mpi_argvs_null"]
pub static ARGVS_NULL: Common<1> = Common::new();

/// Exports one function under several names.
macro_rules! exports {
    ($doc:literal, fn $params:tt -> $r:ty $body:block; $($name:ident),+ $(,)?) => {
        $(
            #[doc = $doc]
            ///
            /// # Safety
            /// The arguments are what a Fortran caller passes.
            #[no_mangle]
            pub unsafe extern "C" fn $name $params -> $r $body
        )+
    };
}

exports!("`==` on two handles (or a handle and an INTEGER): a LOGICAL.",
    fn(a: *const c_int, b: *const c_int) -> c_int {
        // SAFETY: the operands' addresses (a handle type is one INTEGER).
        unsafe { c_int::from(*a == *b) }
    };
    __mpi_f08_types_MOD_mpi_comm_eq,
    __mpi_f08_types_MOD_mpi_comm_f08_eq_f,
    __mpi_f08_types_MOD_mpi_comm_f_eq_f08,
    __mpi_f08_types_MOD_mpi_datatype_eq,
    __mpi_f08_types_MOD_mpi_datatype_f08_eq_f,
    __mpi_f08_types_MOD_mpi_datatype_f_eq_f08,
    __mpi_f08_types_MOD_mpi_errhandler_eq,
    __mpi_f08_types_MOD_mpi_errhandler_f08_eq_f,
    __mpi_f08_types_MOD_mpi_errhandler_f_eq_f08,
    __mpi_f08_types_MOD_mpi_file_eq,
    __mpi_f08_types_MOD_mpi_file_f08_eq_f,
    __mpi_f08_types_MOD_mpi_file_f_eq_f08,
    __mpi_f08_types_MOD_mpi_group_eq,
    __mpi_f08_types_MOD_mpi_group_f08_eq_f,
    __mpi_f08_types_MOD_mpi_group_f_eq_f08,
    __mpi_f08_types_MOD_mpi_info_eq,
    __mpi_f08_types_MOD_mpi_info_f08_eq_f,
    __mpi_f08_types_MOD_mpi_info_f_eq_f08,
    __mpi_f08_types_MOD_mpi_message_eq,
    __mpi_f08_types_MOD_mpi_message_f08_eq_f,
    __mpi_f08_types_MOD_mpi_message_f_eq_f08,
    __mpi_f08_types_MOD_mpi_op_eq,
    __mpi_f08_types_MOD_mpi_op_f08_eq_f,
    __mpi_f08_types_MOD_mpi_op_f_eq_f08,
    __mpi_f08_types_MOD_mpi_request_eq,
    __mpi_f08_types_MOD_mpi_request_f08_eq_f,
    __mpi_f08_types_MOD_mpi_request_f_eq_f08,
    __mpi_f08_types_MOD_mpi_session_eq,
    __mpi_f08_types_MOD_mpi_session_f08_eq_f,
    __mpi_f08_types_MOD_mpi_session_f_eq_f08,
    __mpi_f08_types_MOD_mpi_win_eq,
    __mpi_f08_types_MOD_mpi_win_f08_eq_f,
    __mpi_f08_types_MOD_mpi_win_f_eq_f08,
    __mpi_constants_MOD_infoeq,
    __mpi_constants_MOD_requesteq,
    __mpi_constants_MOD_commeq,
    __mpi_constants_MOD_wineq,
    __mpi_constants_MOD_fileeq,
    __mpi_constants_MOD_messageeq,
    __mpi_constants_MOD_errhandlereq,
    __mpi_constants_MOD_groupeq,
    __mpi_constants_MOD_datatypeeq,
    __mpi_constants_MOD_opeq);

exports!("`/=` on two handles (or a handle and an INTEGER): a LOGICAL.",
    fn(a: *const c_int, b: *const c_int) -> c_int {
        // SAFETY: as for `==`.
        unsafe { c_int::from(*a != *b) }
    };
    __mpi_f08_types_MOD_mpi_comm_neq,
    __mpi_f08_types_MOD_mpi_comm_f08_neq_f,
    __mpi_f08_types_MOD_mpi_comm_f_neq_f08,
    __mpi_f08_types_MOD_mpi_datatype_neq,
    __mpi_f08_types_MOD_mpi_datatype_f08_neq_f,
    __mpi_f08_types_MOD_mpi_datatype_f_neq_f08,
    __mpi_f08_types_MOD_mpi_errhandler_neq,
    __mpi_f08_types_MOD_mpi_errhandler_f08_neq_f,
    __mpi_f08_types_MOD_mpi_errhandler_f_neq_f08,
    __mpi_f08_types_MOD_mpi_file_neq,
    __mpi_f08_types_MOD_mpi_file_f08_neq_f,
    __mpi_f08_types_MOD_mpi_file_f_neq_f08,
    __mpi_f08_types_MOD_mpi_group_neq,
    __mpi_f08_types_MOD_mpi_group_f08_neq_f,
    __mpi_f08_types_MOD_mpi_group_f_neq_f08,
    __mpi_f08_types_MOD_mpi_info_neq,
    __mpi_f08_types_MOD_mpi_info_f08_neq_f,
    __mpi_f08_types_MOD_mpi_info_f_neq_f08,
    __mpi_f08_types_MOD_mpi_message_neq,
    __mpi_f08_types_MOD_mpi_message_f08_neq_f,
    __mpi_f08_types_MOD_mpi_message_f_neq_f08,
    __mpi_f08_types_MOD_mpi_op_neq,
    __mpi_f08_types_MOD_mpi_op_f08_neq_f,
    __mpi_f08_types_MOD_mpi_op_f_neq_f08,
    __mpi_f08_types_MOD_mpi_request_neq,
    __mpi_f08_types_MOD_mpi_request_f08_neq_f,
    __mpi_f08_types_MOD_mpi_request_f_neq_f08,
    __mpi_f08_types_MOD_mpi_session_neq,
    __mpi_f08_types_MOD_mpi_session_f08_neq_f,
    __mpi_f08_types_MOD_mpi_session_f_neq_f08,
    __mpi_f08_types_MOD_mpi_win_neq,
    __mpi_f08_types_MOD_mpi_win_f08_neq_f,
    __mpi_f08_types_MOD_mpi_win_f_neq_f08,
    __mpi_constants_MOD_infoneq,
    __mpi_constants_MOD_requestneq,
    __mpi_constants_MOD_commneq,
    __mpi_constants_MOD_winneq,
    __mpi_constants_MOD_fileneq,
    __mpi_constants_MOD_messageneq,
    __mpi_constants_MOD_errhandlerneq,
    __mpi_constants_MOD_groupneq,
    __mpi_constants_MOD_datatypeneq,
    __mpi_constants_MOD_opneq);

exports!("`MPI_X_c2f` and `MPI_X_f2c` of `mpi_f08` (argument by value): the MPICH ABI's handles are the same integers in C and Fortran.",
    fn(h: c_int) -> c_int { h };
    __mpi_f08_types_MOD_mpi_comm_c2f,
    __mpi_f08_types_MOD_mpi_comm_f2c,
    __mpi_f08_types_MOD_mpi_datatype_c2f,
    __mpi_f08_types_MOD_mpi_datatype_f2c,
    __mpi_f08_types_MOD_mpi_errhandler_c2f,
    __mpi_f08_types_MOD_mpi_errhandler_f2c,
    __mpi_f08_types_MOD_mpi_group_c2f,
    __mpi_f08_types_MOD_mpi_group_f2c,
    __mpi_f08_types_MOD_mpi_info_c2f,
    __mpi_f08_types_MOD_mpi_info_f2c,
    __mpi_f08_types_MOD_mpi_message_c2f,
    __mpi_f08_types_MOD_mpi_message_f2c,
    __mpi_f08_types_MOD_mpi_op_c2f,
    __mpi_f08_types_MOD_mpi_op_f2c,
    __mpi_f08_types_MOD_mpi_request_c2f,
    __mpi_f08_types_MOD_mpi_request_f2c,
    __mpi_f08_types_MOD_mpi_session_c2f,
    __mpi_f08_types_MOD_mpi_session_f2c,
    __mpi_f08_types_MOD_mpi_win_c2f,
    __mpi_f08_types_MOD_mpi_win_f2c);

exports!("`MPI_Sizeof(X, SIZE, IERROR)` of `mpi_f08`: the size of the element type of `X` (an assumed-rank descriptor).",
    fn(x: *const c_void, size: *mut c_int, ierror: *mut c_int) -> () {
        // SAFETY: the caller passes a descriptor and writable INTEGERs (`ierror` optional).
        unsafe {
            *size = conv::elem_len(x) as c_int;
            conv::set_ierror(ierror, 0);
        }
    };
    __mpi_f08_types_MOD_mpi_sizeof_character,
    __mpi_f08_types_MOD_mpi_sizeof_logical,
    __mpi_f08_types_MOD_mpi_sizeof_xint8,
    __mpi_f08_types_MOD_mpi_sizeof_xint16,
    __mpi_f08_types_MOD_mpi_sizeof_xint32,
    __mpi_f08_types_MOD_mpi_sizeof_xint64,
    __mpi_f08_types_MOD_mpi_sizeof_xreal32,
    __mpi_f08_types_MOD_mpi_sizeof_xreal64,
    __mpi_f08_types_MOD_mpi_sizeof_xreal128,
    __mpi_f08_types_MOD_mpi_sizeof_xcomplex32,
    __mpi_f08_types_MOD_mpi_sizeof_xcomplex64,
    __mpi_f08_types_MOD_mpi_sizeof_xcomplex128);

exports!("`MPI_SIZEOF(X, SIZE, IERROR)` of `use mpi` for a type of 1 byte(s).",
    fn(_x: *const c_void, size: *mut c_int, ierror: *mut c_int) -> () {
        // SAFETY: the caller passes writable INTEGERs.
        unsafe {
            *size = 1;
            *ierror = 0;
        }
    };
    __mpi_sizeofs_MOD_mpi_sizeof_ch,
    __mpi_sizeofs_MOD_mpi_sizeof_chv,
    __mpi_sizeofs_MOD_mpi_sizeof_i1,
    __mpi_sizeofs_MOD_mpi_sizeof_i1v);

exports!("`MPI_SIZEOF(X, SIZE, IERROR)` of `use mpi` for a type of 2 byte(s).",
    fn(_x: *const c_void, size: *mut c_int, ierror: *mut c_int) -> () {
        // SAFETY: the caller passes writable INTEGERs.
        unsafe {
            *size = 2;
            *ierror = 0;
        }
    };
    __mpi_sizeofs_MOD_mpi_sizeof_i2,
    __mpi_sizeofs_MOD_mpi_sizeof_i2v);

exports!("`MPI_SIZEOF(X, SIZE, IERROR)` of `use mpi` for a type of 4 byte(s).",
    fn(_x: *const c_void, size: *mut c_int, ierror: *mut c_int) -> () {
        // SAFETY: the caller passes writable INTEGERs.
        unsafe {
            *size = 4;
            *ierror = 0;
        }
    };
    __mpi_sizeofs_MOD_mpi_sizeof_i,
    __mpi_sizeofs_MOD_mpi_sizeof_iv,
    __mpi_sizeofs_MOD_mpi_sizeof_r,
    __mpi_sizeofs_MOD_mpi_sizeof_rv,
    __mpi_sizeofs_MOD_mpi_sizeof_l,
    __mpi_sizeofs_MOD_mpi_sizeof_lv);

exports!("`MPI_SIZEOF(X, SIZE, IERROR)` of `use mpi` for a type of 8 byte(s).",
    fn(_x: *const c_void, size: *mut c_int, ierror: *mut c_int) -> () {
        // SAFETY: the caller passes writable INTEGERs.
        unsafe {
            *size = 8;
            *ierror = 0;
        }
    };
    __mpi_sizeofs_MOD_mpi_sizeof_d,
    __mpi_sizeofs_MOD_mpi_sizeof_dv,
    __mpi_sizeofs_MOD_mpi_sizeof_cx,
    __mpi_sizeofs_MOD_mpi_sizeof_cxv,
    __mpi_sizeofs_MOD_mpi_sizeof_i8,
    __mpi_sizeofs_MOD_mpi_sizeof_i8v);

exports!("`MPI_Status_f082f(F08_STATUS, F_STATUS, IERROR)` and `MPI_Status_f2f08` of `mpi_f08`: both are five INTEGERs.",
    fn(from: *const c_int, to: *mut c_int, ierror: *mut c_int) -> () {
        // SAFETY: the caller passes two statuses and an optional INTEGER.
        unsafe {
            std::ptr::copy(from, to, 5);
            conv::set_ierror(ierror, 0);
        }
    };
    __mpi_f08_types_MOD_mpi_status_f082f,
    __mpi_f08_types_MOD_mpi_status_f2f08);

exports!("Status assignments between `TYPE(MPI_Status)` and the C status (`out = in`).",
    fn(to: *mut c_int, from: *const c_int) -> () {
        // SAFETY: the caller passes two statuses.
        unsafe { std::ptr::copy(from, to, 5) }
    };
    __mpi_f08_types_MOD_mpi_status_f08_assign_c,
    __mpi_f08_types_MOD_mpi_status_c_assign_f08);

exports!("`MPI_SIZEOF(X, SIZE, IERROR)` of this library's `mpi` and `mpi_f08`: the size of the element type of `X` (an assumed-rank descriptor).",
    fn(x: *const c_void, size: *mut c_int, ierror: *mut c_int) -> () {
        // SAFETY: the caller passes a descriptor and writable INTEGERs (`ierror` optional).
        unsafe {
            *size = conv::elem_len(x) as c_int;
            conv::set_ierror(ierror, 0);
        }
    };
    mpi_sizeof_f08_, pmpi_sizeof_f08_);

exports!("`MPI_F_SYNC_REG(BUF)`: nothing to do; being an external procedure that receives `BUF` is what keeps the compiler from moving register copies of it across MPI calls.",
    fn(_buf: *const c_void) -> () {};
    mpi_f_sync_reg_, mpi_f_sync_reg__, mpi_f_sync_reg, MPI_F_SYNC_REG, mpi_f_sync_reg_f08_, mpi_f_sync_reg_f08ts_,
    pmpi_f_sync_reg_, pmpi_f_sync_reg__, pmpi_f_sync_reg, PMPI_F_SYNC_REG, pmpi_f_sync_reg_f08_, pmpir_f_sync_reg_f08ts_);
