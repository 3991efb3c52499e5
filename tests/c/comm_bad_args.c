/* Inconsistent split arguments: one rank gives an invalid color (or split
 * type) and the others valid ones. Every rank gets MPI_ERR_ARG through its
 * error handler at once (none waits for the one that gave up), nobody gets
 * a communicator, and the parent works afterwards. The same on an
 * intercommunicator. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, rc;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int bad = size - 1;
    for (int round = 0; round < 3; round++) {
        MPI_Comm c = MPI_COMM_WORLD;
        rc = MPI_Comm_split(MPI_COMM_WORLD, rank == bad ? -3 : rank % 2, rank, &c);
        CHECK(error_class(rc) == MPI_ERR_ARG, "split with a bad color at rank %d: class %d", bad, error_class(rc));
        rc = MPI_Comm_split_type(MPI_COMM_WORLD, rank == bad ? 12345 : MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c);
        CHECK(error_class(rc) == MPI_ERR_ARG, "split_type with a bad type at rank %d: class %d", bad, error_class(rc));
    }
    /* The world still splits and communicates. */
    MPI_Comm ok;
    CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &ok));
    int r, sum = 0;
    MPI_Comm_rank(ok, &r);
    CHECK(r == size - 1 - rank, "split after the failures: rank %d", r);
    CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, ok));
    CHECK(sum == size * (size - 1) / 2, "allreduce %d", sum);
    MPI_Comm_free(&ok);

    if (size >= 2) {
        MPI_Comm half, inter, s;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        CHECK_RC(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - rank % 2, 3, &inter));
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        rc = MPI_Comm_split(inter, rank == bad ? -9 : 0, 0, &s);
        CHECK(error_class(rc) == MPI_ERR_ARG, "intercomm split with a bad color at rank %d: class %d", bad, error_class(rc));
        CHECK_RC(MPI_Comm_split(inter, 0, 0, &s));
        int rs;
        MPI_Comm_remote_size(s, &rs);
        CHECK(rs == (rank % 2 ? (size + 1) / 2 : size / 2), "intercomm split after the failure: remote size %d", rs);
        MPI_Comm_free(&s);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("comm_bad_args OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
