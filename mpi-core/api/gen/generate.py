#!/usr/bin/env python3
"""Writes mpi-core/api/data/mpi-api.tsv, the project's one table of the MPI C API.

Source: `pympistandard` (PyPI, MIT), the MPI Forum's machine-readable list of
every procedure and parameter, plus the few MPI-1 procedures that the MPICH ABI
still exports although the standard removed them.  The output is committed; run
this again only to move to a newer pympistandard:

    pip install pympistandard && python3 mpi-core/api/gen/generate.py

Format (one procedure per line, tab separated):
    NAME  RETURN_TYPE  FLAGS  PARAM...
FLAGS is a comma-separated list (or '-'): `legacy` (removed from the standard,
still exported by MPICH), `macro` (a macro in the MPICH ABI, never a symbol),
`varargs` (C variadic after the listed parameters), `large` (an `_c` variant),
`mpix` (an MPICH extension `MPIX_X`, profiling name `PMPIX_X`).
The MPIX rows come after the standard's, so adding one never renumbers the
call ids (row indices) of the others.
Each PARAM is `ctype|name|suffix|kind|direction` where suffix is an array
declarator such as `[]` or `[][3]` (or empty).
"""
import os
import sys

import pympistandard as std

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "mpi-api.tsv")

# Procedures removed in MPI-3.0 that MPICH's libmpich.so.12 still exports.
# Signatures from MPI-2.2 (the last standard to contain them).
LEGACY = [
    ("MPI_Address", [("const void*", "location", "", "BUFFER", "in"), ("MPI_Aint*", "address", "", "DISPLACEMENT", "out")]),
    ("MPI_Errhandler_create", [("MPI_Handler_function*", "function", "", "FUNCTION", "in"), ("MPI_Errhandler*", "errhandler", "", "ERRHANDLER", "out")]),
    ("MPI_Errhandler_get", [("MPI_Comm", "comm", "", "COMMUNICATOR", "in"), ("MPI_Errhandler*", "errhandler", "", "ERRHANDLER", "out")]),
    ("MPI_Errhandler_set", [("MPI_Comm", "comm", "", "COMMUNICATOR", "in"), ("MPI_Errhandler", "errhandler", "", "ERRHANDLER", "in")]),
    ("MPI_Type_extent", [("MPI_Datatype", "datatype", "", "DATATYPE", "in"), ("MPI_Aint*", "extent", "", "DISPLACEMENT", "out")]),
    ("MPI_Type_hindexed", [("int", "count", "", "POLYDTYPE_NUM_ELEM_NNI", "in"), ("int*", "array_of_blocklengths", "", "POLYDTYPE_NUM_ELEM_NNI", "in"),
                           ("MPI_Aint*", "array_of_displacements", "", "DISPLACEMENT", "in"), ("MPI_Datatype", "oldtype", "", "DATATYPE", "in"),
                           ("MPI_Datatype*", "newtype", "", "DATATYPE", "out")]),
    ("MPI_Type_hvector", [("int", "count", "", "POLYDTYPE_NUM_ELEM_NNI", "in"), ("int", "blocklength", "", "POLYDTYPE_NUM_ELEM_NNI", "in"),
                          ("MPI_Aint", "stride", "", "DISPLACEMENT", "in"), ("MPI_Datatype", "oldtype", "", "DATATYPE", "in"),
                          ("MPI_Datatype*", "newtype", "", "DATATYPE", "out")]),
    ("MPI_Type_lb", [("MPI_Datatype", "datatype", "", "DATATYPE", "in"), ("MPI_Aint*", "displacement", "", "DISPLACEMENT", "out")]),
    ("MPI_Type_struct", [("int", "count", "", "POLYDTYPE_NUM_ELEM_NNI", "in"), ("int*", "array_of_blocklengths", "", "POLYDTYPE_NUM_ELEM_NNI", "in"),
                         ("MPI_Aint*", "array_of_displacements", "", "DISPLACEMENT", "in"), ("MPI_Datatype*", "array_of_types", "", "DATATYPE", "in"),
                         ("MPI_Datatype*", "newtype", "", "DATATYPE", "out")]),
    ("MPI_Type_ub", [("MPI_Datatype", "datatype", "", "DATATYPE", "in"), ("MPI_Aint*", "displacement", "", "DISPLACEMENT", "out")]),
]


# MPICH extensions that programs built against libmpich.so.12 call (the 15
# that Debian's MPICH 4.0 exports, and MPIX_Comm_iagree / is_revoked of
# MPICH 4.2). Signatures from MPICH's mpi_proto.h.
MPIX = [
    ("MPIX_Comm_agree", [("MPI_Comm", "comm", "", "COMMUNICATOR", "in"), ("int*", "flag", "", "LOGICAL", "inout")]),
    ("MPIX_Comm_failure_ack", [("MPI_Comm", "comm", "", "COMMUNICATOR", "in")]),
    ("MPIX_Comm_failure_get_acked", [("MPI_Comm", "comm", "", "COMMUNICATOR", "in"), ("MPI_Group*", "failedgrp", "", "GROUP", "out")]),
    ("MPIX_Comm_iagree", [("MPI_Comm", "comm", "", "COMMUNICATOR", "in"), ("int*", "flag", "", "LOGICAL", "inout"),
                          ("MPI_Request*", "request", "", "REQUEST", "out")]),
    ("MPIX_Comm_is_revoked", [("MPI_Comm", "comm", "", "COMMUNICATOR", "in"), ("int*", "flag", "", "LOGICAL", "out")]),
    ("MPIX_Comm_revoke", [("MPI_Comm", "comm", "", "COMMUNICATOR", "in")]),
    ("MPIX_Comm_shrink", [("MPI_Comm", "comm", "", "COMMUNICATOR", "in"), ("MPI_Comm*", "newcomm", "", "COMMUNICATOR", "out")]),
    ("MPIX_Delete_error_class", [("int", "errorclass", "", "ERROR_CLASS", "in")]),
    ("MPIX_Delete_error_code", [("int", "errorcode", "", "ERROR_CODE", "in")]),
    ("MPIX_Delete_error_string", [("int", "errorcode", "", "ERROR_CODE", "in")]),
    ("MPIX_GPU_query_support", [("int", "gpu_type", "", "GENERIC_DTYPE_INT", "in"), ("int*", "is_supported", "", "LOGICAL", "out")]),
    ("MPIX_Grequest_class_allocate", [("MPIX_Grequest_class", "greq_class", "", "GREQ_CLASS", "in"), ("void*", "extra_state", "", "EXTRA_STATE", "in"),
                                      ("MPI_Request*", "request", "", "REQUEST", "out")]),
    ("MPIX_Grequest_class_create", [("MPI_Grequest_query_function*", "query_fn", "", "FUNCTION", "in"),
                                    ("MPI_Grequest_free_function*", "free_fn", "", "FUNCTION", "in"),
                                    ("MPI_Grequest_cancel_function*", "cancel_fn", "", "FUNCTION", "in"),
                                    ("MPIX_Grequest_poll_function*", "poll_fn", "", "FUNCTION", "in"),
                                    ("MPIX_Grequest_wait_function*", "wait_fn", "", "FUNCTION", "in"),
                                    ("MPIX_Grequest_class*", "greq_class", "", "GREQ_CLASS", "out")]),
    ("MPIX_Grequest_start", [("MPI_Grequest_query_function*", "query_fn", "", "FUNCTION", "in"),
                             ("MPI_Grequest_free_function*", "free_fn", "", "FUNCTION", "in"),
                             ("MPI_Grequest_cancel_function*", "cancel_fn", "", "FUNCTION", "in"),
                             ("MPIX_Grequest_poll_function*", "poll_fn", "", "FUNCTION", "in"),
                             ("MPIX_Grequest_wait_function*", "wait_fn", "", "FUNCTION", "in"),
                             ("void*", "extra_state", "", "EXTRA_STATE", "in"), ("MPI_Request*", "request", "", "REQUEST", "out")]),
    ("MPIX_Query_cuda_support", []),
    ("MPIX_Query_hip_support", []),
    ("MPIX_Query_ze_support", []),
]


# Errata of pympistandard's data: (procedure, parameter) -> the C type the
# standard prints. MPI 4.0 gives `char *argv[]` for MPI_Info_create_env (as
# MPICH's mpi.h); the data says `char argv[]`, a prototype C programs passing
# their `argv` do not compile against.
CTYPE_ERRATA = {
    ("MPI_Info_create_env", "argv"): "char*",
}


def is_macro(name):
    # Handle conversions are macros in the MPICH ABI (handles are ints there).
    # MPI_File is a pointer, and the Status conversions take pointers: those
    # stay functions.
    return (name.endswith(("_c2f", "_f2c"))
            and not name.startswith(("MPI_Status", "MPI_File")))


def main():
    std.use_api_version(1)
    rows = []
    for proc in std.PROCEDURES.values():
        for c in proc.express.all_iso_c:
            if not c.name.startswith("MPI_"):
                continue  # PMPI_ names are derived from MPI_ names
            flags = []
            params = []
            for p in c.parameters:
                if p.kind.name == "VARARGS":
                    flags.append("varargs")
                    continue
                ctype = CTYPE_ERRATA.get((c.name, p.name), str(p.type))
                if p.constant and not ctype.startswith("const "):
                    ctype = "const " + ctype
                direction = p.direction.name.lower()
                params.append(f"{ctype}|{p.name}|{p.array}|{p.kind.name}|{direction}")
            if c.name.endswith("_c") and proc.has_embiggenment and any(
                    "MPI_Count" in x for x in params):
                flags.append("large")
            if is_macro(c.name):
                flags.append("macro")
            rows.append((c.name, str(c.return_type), ",".join(flags) or "-", params))
    for name, params in LEGACY:
        rows.append((name, "int", "legacy",
                     [f"{t}|{n}|{s}|{k}|{d}" for (t, n, s, k, d) in params]))
    rows.sort(key=lambda r: r[0])
    for name, params in MPIX:
        rows.append((name, "int", "mpix",
                     [f"{t}|{n}|{s}|{k}|{d}" for (t, n, s, k, d) in params]))
    names = [r[0] for r in rows]
    assert len(names) == len(set(names)), "duplicate procedure"
    with open(OUT, "w") as f:
        f.write("# Generated by mpi-core/api/gen/generate.py from pympistandard "
                f"{getattr(std, '__version__', '0.2.0')}; do not edit.\n")
        for name, ret, flags, params in rows:
            f.write("\t".join([name, ret, flags] + params) + "\n")
    print(f"wrote {len(rows)} procedures to {os.path.normpath(OUT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
