/* Blocking and nonblocking collectives started in different orders on one
 * communicator (issue 19.8): even ranks start a nonblocking collective,
 * then call a blocking one, then wait; odd ranks call the blocking one
 * first. The standard forbids it, but MPICH completes it (it matches
 * blocking and nonblocking collectives apart) and mpi4py's fallback for
 * Comm.Iagree relies on it; so does this library: blocking and
 * nonblocking collectives are numbered apart, in messages and in the
 * shared-memory segment. Every value is checked. Arguments: the
 * nonblocking collective ("ibarrier", "iallreduce", or "iagree": mpi4py's
 * pattern) and the count of the reductions. */
#include "check.h"
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK(argc > 2, "usage: coll_order ibarrier|iallreduce count");
    int iallreduce = strcmp(argv[1], "iallreduce") == 0, count = atoi(argv[2]);
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    int *in = calloc(count, sizeof(int)), *out = calloc(count, sizeof(int));
    int *nin = calloc(count, sizeof(int)), *nout = calloc(count, sizeof(int));
    MPI_Request req = MPI_REQUEST_NULL;
    if (strcmp(argv[1], "iagree") == 0) {
        /* mpi4py's test of Comm.Iagree over its fallback (an
         * MPI_Iallreduce with MPI_BAND): the root starts it, then enters
         * a barrier; the others enter the barrier first. */
        for (int root = 0; root < n; root++) {
            int flag = me == root ? 11 : 13;
            MPI_Barrier(c);
            if (me == root) {
                MPI_Iallreduce(MPI_IN_PLACE, &flag, 1, MPI_INT, MPI_BAND, c, &req);
                MPI_Barrier(c);
            } else {
                MPI_Barrier(c);
                MPI_Iallreduce(MPI_IN_PLACE, &flag, 1, MPI_INT, MPI_BAND, c, &req);
            }
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            CHECK(flag == 9, "root %d: flag %d, expected 9", root, flag);
        }
        printf("rank %d: no error\n", me);
        MPI_Finalize();
        return 0;
    }
    for (int i = 0; i < count; i++) {
        in[i] = me + 1 + i;
        nin[i] = 1 << (me % 30);
    }
    for (int step = 0; step < 2; step++) {
        if (step == me % 2) {
            if (iallreduce)
                MPI_Iallreduce(nin, nout, count, MPI_INT, MPI_BOR, c, &req);
            else
                MPI_Ibarrier(c, &req);
        } else {
            MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, c);
        }
    }
    if (req != MPI_REQUEST_NULL) MPI_Wait(&req, MPI_STATUS_IGNORE);
    int bits = 0;
    for (int r = 0; r < n; r++) bits |= 1 << (r % 30);
    for (int i = 0; i < count; i++) {
        CHECK(out[i] == n * (n + 1) / 2 + n * i, "allreduce[%d] = %d", i, out[i]);
        CHECK(!iallreduce || nout[i] == bits, "iallreduce[%d] = %#x, expected %#x", i, nout[i], bits);
    }
    printf("rank %d: no error\n", me);
    free(in);
    free(out);
    free(nin);
    free(nout);
    MPI_Finalize();
    return 0;
}
