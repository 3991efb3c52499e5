/* Accumulates MPICH accepts and programs written for it (mpi4py's RMA
 * tests) rely on: MPI_BYTE combined as (signed, on x86-64) char by every
 * arithmetic and bitwise operation (SUM wraps modulo 256, MAX compares
 * signed), at count 0 too; and
 * accumulates of a zero-size derived type, which are no-ops. Built with
 * MPICH's mpicc too, the program passes on MPICH itself. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unsigned char *win_mem;
    MPI_Win win;
    CHECK_RC(MPI_Alloc_mem(8, MPI_INFO_NULL, &win_mem));
    for (int i = 0; i < 8; i++) win_mem[i] = (unsigned char)(i + 1);
    CHECK_RC(MPI_Win_create(win_mem, 8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    /* Rank 0 works on the last rank's window (itself on one rank). */
    int target = size - 1, me = rank == 0;
    unsigned char o[4] = {10, 20, 30, 250}, r[4] = {0};

    CHECK_RC(MPI_Win_fence(0, win));
    if (me) {
        CHECK_RC(MPI_Accumulate(o, 0, MPI_BYTE, target, 0, 0, MPI_BYTE, MPI_SUM, win));
        CHECK_RC(MPI_Get_accumulate(o, 0, MPI_BYTE, r, 0, MPI_BYTE, target, 0, 0, MPI_BYTE, MPI_SUM, win));
        CHECK_RC(MPI_Accumulate(o, 4, MPI_BYTE, target, 0, 4, MPI_BYTE, MPI_SUM, win));
    }
    CHECK_RC(MPI_Win_fence(0, win));
    if (rank == target)
        CHECK(win_mem[0] == 11 && win_mem[1] == 22 && win_mem[2] == 33 && win_mem[3] == 254, "after SUM: %d %d %d %d",
              win_mem[0], win_mem[1], win_mem[2], win_mem[3]);
    /* The target reads its memory in an epoch of its own (no access to
     * it may be in flight meanwhile). */
    CHECK_RC(MPI_Win_fence(0, win));
    if (me) CHECK_RC(MPI_Get_accumulate(o, 4, MPI_BYTE, r, 4, MPI_BYTE, target, 0, 4, MPI_BYTE, MPI_SUM, win));
    CHECK_RC(MPI_Win_fence(0, win));
    if (me) CHECK(r[0] == 11 && r[1] == 22 && r[2] == 33 && r[3] == 254, "fetched %d %d %d %d", r[0], r[1], r[2], r[3]);
    /* 254 + 250 wraps to 248. */
    if (rank == target)
        CHECK(win_mem[0] == 21 && win_mem[1] == 42 && win_mem[2] == 63 && win_mem[3] == 248, "after second SUM: %d %d %d %d",
              win_mem[0], win_mem[1], win_mem[2], win_mem[3]);
    CHECK_RC(MPI_Win_fence(0, win));
    /* MAX, PROD and BXOR on bytes 4..7 (5, 6, 7, 8), as signed char:
     * 200 is -56, so MAX keeps 6, and 6 * -56 = -336 wraps to -80 (176). */
    unsigned char m[4] = {3, 200, 7, 1};
    if (me) CHECK_RC(MPI_Accumulate(m, 4, MPI_BYTE, target, 4, 4, MPI_BYTE, MPI_MAX, win));
    CHECK_RC(MPI_Win_fence(0, win));
    if (me) CHECK_RC(MPI_Accumulate(m, 4, MPI_BYTE, target, 4, 4, MPI_BYTE, MPI_PROD, win));
    CHECK_RC(MPI_Win_fence(0, win));
    if (rank == target)
        CHECK(win_mem[4] == 15 && win_mem[5] == 176 && win_mem[6] == 49 && win_mem[7] == 8,
              "after MAX, PROD: %d %d %d %d", win_mem[4], win_mem[5], win_mem[6], win_mem[7]);
    CHECK_RC(MPI_Win_fence(0, win));
    if (me) {
        unsigned char one = 0xff, old = 0;
        CHECK_RC(MPI_Fetch_and_op(&one, &old, MPI_BYTE, target, 7, MPI_BXOR, win));
    }
    CHECK_RC(MPI_Win_fence(0, win));
    if (rank == target) CHECK(win_mem[7] == (8 ^ 0xff), "after BXOR: %d", win_mem[7]);

    /* Zero-size derived types: accumulates that move nothing succeed. */
    MPI_Datatype empty, empty_struct;
    CHECK_RC(MPI_Type_contiguous(0, MPI_INT, &empty));
    CHECK_RC(MPI_Type_commit(&empty));
    int zero = 0;
    MPI_Aint d0 = 0;
    MPI_Datatype dint = MPI_INT;
    CHECK_RC(MPI_Type_create_struct(1, &zero, &d0, &dint, &empty_struct));
    CHECK_RC(MPI_Type_commit(&empty_struct));
    unsigned char before[8];
    memcpy(before, win_mem, 8);
    CHECK_RC(MPI_Win_fence(0, win));
    if (me) {
        CHECK_RC(MPI_Accumulate(o, 1, empty, target, 0, 1, empty, MPI_SUM, win));
        CHECK_RC(MPI_Accumulate(o, 3, empty_struct, target, 0, 2, empty, MPI_MAX, win));
        CHECK_RC(MPI_Get_accumulate(o, 1, empty, r, 1, empty, target, 0, 1, empty, MPI_SUM, win));
        CHECK_RC(MPI_Accumulate(o, 0, MPI_INT, target, 0, 1, empty, MPI_SUM, win));
    }
    CHECK_RC(MPI_Win_fence(0, win));
    if (rank == target) CHECK(memcmp(before, win_mem, 8) == 0, "a zero-size accumulate changed the window");

    MPI_Type_free(&empty);
    MPI_Type_free(&empty_struct);
    CHECK_RC(MPI_Win_free(&win));
    MPI_Free_mem(win_mem);
    MPI_Finalize();
    if (rank == 0) printf("rma_acc_byte OK on %d ranks\n", size);
    return 0;
}
