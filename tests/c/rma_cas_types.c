/* MPI_Compare_and_swap takes a predefined C or Fortran integer, logical,
 * multi-language or byte datatype (MPI 3.1 11.3.4); MPI_CHAR is taken as a
 * C integer (as MPICH). Floating-point and derived datatypes are
 * MPI_ERR_TYPE, through the window's error handler (MPICH suite:
 * errors/rma/cas_type_check). Every rank swaps at the next rank in a
 * fence epoch; the accepted types really swap. */
#include "check.h"

static MPI_Win win;
static int target;

/* One 16-byte cell per rank, as large as any type tried. */
static long long cell[2];

static int cas(MPI_Datatype dt) {
    long long origin[2], compare[2] = {0, 0}, result[2];
    memset(origin, 0x11, sizeof origin);
    return MPI_Compare_and_swap(origin, compare, result, dt, target, 0, win);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    target = (rank + 1) % size;
    CHECK_RC(MPI_Win_create(&cell, sizeof cell, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_RC(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_Datatype ok[] = {MPI_SIGNED_CHAR, MPI_SHORT,    MPI_INT,    MPI_LONG,       MPI_LONG_LONG,
                         MPI_UNSIGNED,    MPI_UINT64_T, MPI_AINT,   MPI_OFFSET,     MPI_COUNT,
                         MPI_BYTE,        MPI_C_BOOL,   MPI_CHAR,   MPI_INTEGER};
    const char *ok_names[] = {"MPI_SIGNED_CHAR", "MPI_SHORT", "MPI_INT", "MPI_LONG", "MPI_LONG_LONG",
                              "MPI_UNSIGNED", "MPI_UINT64_T", "MPI_AINT", "MPI_OFFSET", "MPI_COUNT",
                              "MPI_BYTE", "MPI_C_BOOL", "MPI_CHAR", "MPI_INTEGER"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int sz;
        MPI_Type_size(ok[i], &sz);
        cell[0] = cell[1] = 0;
        CHECK_RC(MPI_Win_fence(0, win));
        int rc = cas(ok[i]);
        CHECK(rc == MPI_SUCCESS, "MPI_Compare_and_swap of %s returned %d", ok_names[i], rc);
        CHECK_RC(MPI_Win_fence(0, win));
        /* 0 == 0, so the origin's bytes (0x11...) replaced the first sz bytes. */
        unsigned char expect[16] = {0};
        memset(expect, 0x11, (size_t)sz);
        CHECK(!memcmp(cell, expect, sizeof expect), "%s: the target holds %llx %llx", ok_names[i], cell[0], cell[1]);
    }
    MPI_Datatype derived;
    MPI_Type_contiguous(sizeof(int), MPI_BYTE, &derived);
    MPI_Type_commit(&derived);
    MPI_Datatype bad[] = {MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_C_DOUBLE_COMPLEX, MPI_2INT, derived};
    const char *bad_names[] = {"MPI_FLOAT", "MPI_DOUBLE", "MPI_LONG_DOUBLE", "MPI_C_DOUBLE_COMPLEX", "MPI_2INT",
                               "a contiguous type of bytes"};
    cell[0] = cell[1] = 0;
    CHECK_RC(MPI_Win_fence(0, win));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int cls = error_class(cas(bad[i]));
        CHECK(cls == MPI_ERR_TYPE, "MPI_Compare_and_swap of %s: class %d, not MPI_ERR_TYPE", bad_names[i], cls);
    }
    CHECK_RC(MPI_Win_fence(0, win));
    CHECK(cell[0] == 0 && cell[1] == 0, "a refused compare-and-swap changed the target: %llx %llx", cell[0], cell[1]);
    MPI_Type_free(&derived);
    MPI_Win_free(&win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("rma_cas_types OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
