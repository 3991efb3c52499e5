/* Blocking and nonblocking collectives started in different orders on one
 * communicator (issue 19.8): even ranks start a nonblocking collective,
 * then call a blocking one, then wait; odd ranks call the blocking one
 * first. The standard forbids it (MPICH happens to complete it, matching
 * blocking and nonblocking collectives apart); this library numbers all
 * collectives of a communicator in one sequence, and reports the mismatch
 * plainly: the failing call says that the ranks called different
 * collectives, and does not speak of the library's internal ranks and
 * tags (the job stops at the first rank that notices, with
 * MPI_ERRORS_ARE_FATAL: in the blocking call or in MPI_Wait). Arguments: the nonblocking collective ("ibarrier" or
 * "iallreduce") and the count of the Allreduce. */
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
    if (strcmp(argv[1], "wait") == 0) {
        /* The nonblocking collective is the one to fail: rank 0 waits for
         * its MPI_Iallreduce of `count` ints before anything else, while
         * rank 1 calls MPI_Allreduce of twice as many (its error returns;
         * then it waits for rank 0's abort). A barrier first, so that both
         * calls find the communicator ready (shared memory set up). */
        MPI_Barrier(c);
        if (me == 0) {
            MPI_Iallreduce(nin, nout, count, MPI_INT, MPI_BOR, c, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else if (me == 1) {
            int *big = calloc(2 * count, sizeof(int)), *big_out = calloc(2 * count, sizeof(int));
            MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
            MPI_Allreduce(big, big_out, 2 * count, MPI_INT, MPI_SUM, c);
            sleep(10);
        }
        printf("rank %d: no error\n", me);
        MPI_Finalize();
        return 0;
    }
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
    printf("rank %d: no error\n", me);
    free(in);
    free(out);
    free(nin);
    free(nout);
    MPI_Finalize();
    return 0;
}
