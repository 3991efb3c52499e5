/* One-sided operations that move no data are no-ops whatever their types
 * are made of: zero counts of different predefined types (an accumulate of
 * 0 MPI_INT into 0 MPI_DOUBLE), zero-size derived types with non-zero
 * counts, NULL buffers (MPICH suite: rma/badrma). Data that is moved must
 * still agree: 1 MPI_INT into 1 MPI_FLOAT is MPI_ERR_TYPE. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int mem[16], buf[16], res[16];
    for (int i = 0; i < 16; i++) mem[i] = buf[i] = res[i] = i;
    MPI_Datatype empty, types[4];
    MPI_Type_contiguous(0, MPI_INT, &empty);
    MPI_Type_commit(&empty);
    types[0] = empty;
    types[1] = MPI_INT;
    types[2] = MPI_DOUBLE;
    types[3] = MPI_CHAR;
    MPI_Win win;
    CHECK_RC(MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int target = (rank + 1) % size;
    CHECK_RC(MPI_Win_fence(0, win));
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 4; k++) {
                MPI_Datatype o = types[i], r = types[j], t = types[k];
                CHECK_RC(MPI_Put(buf, 0, o, target, 0, 0, t, win));
                CHECK_RC(MPI_Get(buf, 0, o, target, 0, 0, t, win));
                CHECK_RC(MPI_Accumulate(buf, 0, o, target, 0, 0, t, MPI_SUM, win));
                CHECK_RC(MPI_Get_accumulate(buf, 0, o, res, 0, r, target, 0, 0, t, MPI_SUM, win));
                CHECK_RC(MPI_Accumulate(NULL, 0, o, target, 0, 0, t, MPI_SUM, win));
                CHECK_RC(MPI_Get_accumulate(NULL, 0, o, NULL, 0, r, target, 0, 0, t, MPI_SUM, win));
                /* Zero-size types with counts. */
                CHECK_RC(MPI_Accumulate(buf, 2, empty, target, 0, 0, t, MPI_SUM, win));
                CHECK_RC(MPI_Get_accumulate(buf, 0, o, res, 3, empty, target, 0, 1, empty, MPI_PROD, win));
            }
    int rc = MPI_Accumulate(buf, 1, MPI_INT, target, 0, 1, MPI_FLOAT, MPI_SUM, win);
    CHECK(error_class(rc) == MPI_ERR_TYPE, "1 MPI_INT into 1 MPI_FLOAT: class %d", error_class(rc));
    CHECK_RC(MPI_Win_fence(0, win));
    for (int i = 0; i < 16; i++) CHECK(mem[i] == i, "window changed at %d: %d", i, mem[i]);
    MPI_Win_free(&win);
    MPI_Type_free(&empty);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("rma_zero_bytes OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
