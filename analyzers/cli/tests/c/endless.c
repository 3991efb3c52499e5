/* A job that runs until it is stopped: each iteration a ring exchange, a
 * barrier and a 1 ms sleep. Rank 0 prints "ready" once every rank has done
 * 100 iterations (so a test knows the journals hold calls of every rank).
 * argv[1] == "ignore-term": every rank ignores SIGTERM (a job that does not
 * stop when asked). Further arguments are ignored: tests pass a marker to
 * find the job's processes in /proc. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "ignore-term")) signal(SIGTERM, SIG_IGN);
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (long i = 0;; i++) {
        int out = (int)i, in = 0;
        MPI_Sendrecv(&out, 1, MPI_INT, next, 0, &in, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        if (i == 100 && rank == 0) {
            printf("ready\n");
            fflush(stdout);
        }
        usleep(1000);
    }
}
