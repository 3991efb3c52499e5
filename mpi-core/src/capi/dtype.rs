//! Chapter 4 (first part): datatype queries and counts of received data.

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::{put, ret};
use crate::bail;
use crate::rt::datatype::Dtype;
use crate::rt::error::MpiResult;
use crate::rt::{self};

fn status_bytes(status: *const MPI_Status) -> MpiResult<u64> {
    if status.is_null() || status as usize == MPI_STATUS_IGNORE {
        bail!(MPI_ERR_ARG, "status is NULL or MPI_STATUS_IGNORE");
    }
    // SAFETY: checked non-null; the caller passes a status.
    Ok(unsafe { (*status).byte_count() })
}

fn count_of(bytes: u64, size: usize) -> i64 {
    if size == 0 {
        return if bytes == 0 { 0 } else { MPI_UNDEFINED as i64 };
    }
    if bytes % size as u64 != 0 {
        return MPI_UNDEFINED as i64;
    }
    (bytes / size as u64) as i64
}

fn elements_of(bytes: u64, dt: &Dtype) -> i64 {
    if dt.basic_size > 0 && dt.size % dt.basic_size == 0 {
        return count_of(bytes, dt.basic_size);
    }
    // Pair types: whole elements count two basic elements each, and a
    // partial element counts the one value it holds.
    if dt.size == 0 {
        return 0;
    }
    let whole = bytes / dt.size as u64;
    let rest = bytes % dt.size as u64;
    let Some(first) = dt.basic.and_then(crate::rt::datatype::pair_value_size) else {
        return MPI_UNDEFINED as i64;
    };
    let first = first as u64;
    let per = 2;
    if rest == 0 {
        (whole * per) as i64
    } else if rest == first {
        (whole * per + 1) as i64
    } else {
        MPI_UNDEFINED as i64
    }
}

fn clamp_int(v: i64) -> c_int {
    if v > c_int::MAX as i64 {
        MPI_UNDEFINED
    } else {
        v as c_int
    }
}

pub unsafe fn MPI_Get_count(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut c_int) -> c_int {
    let r = rt::with(|st| {
        let b = status_bytes(status)?;
        let dt = st.types.get(datatype)?;
        put(count, clamp_int(count_of(b, dt.size)), "count")
    });
    ret(MPI_COMM_WORLD, "MPI_Get_count", r)
}

pub unsafe fn MPI_Get_count_c(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut MPI_Count) -> c_int {
    let r = rt::with(|st| {
        let b = status_bytes(status)?;
        let dt = st.types.get(datatype)?;
        put(count, count_of(b, dt.size), "count")
    });
    ret(MPI_COMM_WORLD, "MPI_Get_count_c", r)
}

pub unsafe fn MPI_Get_elements(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut c_int) -> c_int {
    let r = rt::with(|st| {
        let b = status_bytes(status)?;
        let dt = st.types.get(datatype)?;
        put(count, clamp_int(elements_of(b, &dt)), "count")
    });
    ret(MPI_COMM_WORLD, "MPI_Get_elements", r)
}

pub unsafe fn MPI_Get_elements_x(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut MPI_Count) -> c_int {
    let r = rt::with(|st| {
        let b = status_bytes(status)?;
        let dt = st.types.get(datatype)?;
        put(count, elements_of(b, &dt), "count")
    });
    ret(MPI_COMM_WORLD, "MPI_Get_elements_x", r)
}

pub unsafe fn MPI_Get_elements_c(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut MPI_Count) -> c_int {
    MPI_Get_elements_x(status, datatype, count)
}

pub unsafe fn MPI_Status_set_elements(status: *mut MPI_Status, datatype: MPI_Datatype, count: c_int) -> c_int {
    MPI_Status_set_elements_x(status, datatype, count as MPI_Count)
}

pub unsafe fn MPI_Status_set_elements_x(status: *mut MPI_Status, datatype: MPI_Datatype, count: MPI_Count) -> c_int {
    let r = rt::with(|st| {
        if status.is_null() || status as usize == MPI_STATUS_IGNORE {
            bail!(MPI_ERR_ARG, "status is NULL or MPI_STATUS_IGNORE");
        }
        if count < 0 {
            bail!(MPI_ERR_COUNT, "negative count {count}");
        }
        let dt = st.types.get(datatype)?;
        let unit = if dt.basic_size > 0 { dt.basic_size } else { dt.size };
        (*status).set_byte_count(count as u64 * unit as u64);
        Ok(())
    });
    ret(MPI_COMM_WORLD, "MPI_Status_set_elements_x", r)
}

pub unsafe fn MPI_Type_size(datatype: MPI_Datatype, size: *mut c_int) -> c_int {
    let r = rt::with(|st| {
        let s = st.types.get(datatype)?.size as i64;
        put(size, clamp_int(s), "size")
    });
    ret(MPI_COMM_WORLD, "MPI_Type_size", r)
}

pub unsafe fn MPI_Type_size_x(datatype: MPI_Datatype, size: *mut MPI_Count) -> c_int {
    let r = rt::with(|st| {
        let s = st.types.get(datatype)?.size as i64;
        put(size, s, "size")
    });
    ret(MPI_COMM_WORLD, "MPI_Type_size_x", r)
}

pub unsafe fn MPI_Type_size_c(datatype: MPI_Datatype, size: *mut MPI_Count) -> c_int {
    MPI_Type_size_x(datatype, size)
}

pub unsafe fn MPI_Type_get_extent(datatype: MPI_Datatype, lb: *mut MPI_Aint, extent: *mut MPI_Aint) -> c_int {
    let r = rt::with(|st| {
        let t = st.types.get(datatype)?;
        put(lb, t.lb as i64, "lb")?;
        put(extent, t.extent as i64, "extent")
    });
    ret(MPI_COMM_WORLD, "MPI_Type_get_extent", r)
}

pub unsafe fn MPI_Type_get_extent_x(datatype: MPI_Datatype, lb: *mut MPI_Count, extent: *mut MPI_Count) -> c_int {
    MPI_Type_get_extent(datatype, lb, extent)
}

pub unsafe fn MPI_Type_get_extent_c(datatype: MPI_Datatype, lb: *mut MPI_Count, extent: *mut MPI_Count) -> c_int {
    MPI_Type_get_extent(datatype, lb, extent)
}
