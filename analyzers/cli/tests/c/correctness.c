/* Programs for `mpitrace check --correctness` (tests/correctness.rs): each
 * mode (argv[1]) breaks one rule and runs to the end anyway; `ok` breaks
 * none. The test finds call sites by the markers in the comments. Run on
 * 4 ranks. */
#include <mpi.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size, a[4] = {1, 2, 3, 4}, b[4] = {0, 0, 0, 0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "";
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    if (!strcmp(mode, "sendcycle")) {
        /* Every rank sends to the next before it receives: a ring of
         * blocking sends that completes only because they are buffered. */
        MPI_Send(a, 1, MPI_INT, next, 5, MPI_COMM_WORLD); /* @sendcycle */
        MPI_Recv(b, 1, MPI_INT, prev, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(mode, "count")) {
        /* The last rank reduces fewer elements. */
        int n = rank == size - 1 ? 2 : 4;
        MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* @count */
    } else if (!strcmp(mode, "anysource")) {
        /* Every other rank sends at once; rank 0 takes the messages from
         * any source after they all arrived: the first match is a race. */
        if (rank == 0) {
            usleep(300000);
            for (int i = 1; i < size; i++)
                MPI_Recv(b, 1, MPI_INT, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @anysource */
        } else {
            MPI_Send(a, 1, MPI_INT, 0, 4, MPI_COMM_WORLD);
        }
    } else if (!strcmp(mode, "types")) {
        /* Rank 0 sends a double, rank 1 receives it as two ints. */
        double x = 1.5;
        if (rank == 0)
            MPI_Send(&x, 1, MPI_DOUBLE, 1, 8, MPI_COMM_WORLD); /* @types-send */
        else if (rank == 1)
            MPI_Recv(b, 2, MPI_INT, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @types-recv */
    } else if (!strcmp(mode, "leak")) {
        /* A request never waited for, and a communicator never freed. */
        MPI_Request req;
        MPI_Comm dup;
        MPI_Isend(a, 1, MPI_INT, next, 9, MPI_COMM_WORLD, &req); /* @leak-request */
        MPI_Recv(b, 1, MPI_INT, prev, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Comm_dup(MPI_COMM_WORLD, &dup); /* @leak-comm */
        MPI_Barrier(dup);
    } else {
        /* Correct: the ring by nonblocking calls and by send-receive, even
         * ranks sending first, collectives alike everywhere, every request
         * completed and the communicator freed. */
        MPI_Request r[2];
        MPI_Comm dup;
        MPI_Irecv(b, 1, MPI_INT, prev, 1, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(a, 1, MPI_INT, next, 1, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        MPI_Sendrecv(a, 1, MPI_INT, next, 2, b, 1, MPI_INT, prev, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rank % 2 == 0) {
            MPI_Send(a, 1, MPI_INT, next, 3, MPI_COMM_WORLD);
            MPI_Recv(b, 1, MPI_INT, prev, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(b, 1, MPI_INT, prev, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(a, 1, MPI_INT, next, 3, MPI_COMM_WORLD);
        }
        /* A wildcard receive with one sender only: deterministic. */
        if (rank == 0) {
            usleep(100000);
            MPI_Recv(b, 1, MPI_INT, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Send(a, 1, MPI_INT, 0, 6, MPI_COMM_WORLD);
        }
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Bcast(a, 4, MPI_INT, 0, dup);
        MPI_Allreduce(a, b, 4, MPI_INT, MPI_SUM, dup);
        MPI_Comm_free(&dup);
    }
    MPI_Finalize();
    return 0;
}
