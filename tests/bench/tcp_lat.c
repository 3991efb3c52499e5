/* Ping-pong between ranks 0 and 1 that times every round trip on its own
 * (tests/bench/tcp.sh). On a shared machine an average over thousands of
 * round trips mostly measures how often other programs took the CPU; the
 * low percentiles of single round trips show the cost of a message itself.
 * Prints one line per size: "size_bytes p10_us p50_us" (half round trips). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int sizes[] = {8, 1024, 65536};
    int iters = argc > 1 ? atoi(argv[1]) : 5000;
    double *t = malloc(iters * sizeof(double));
    char *buf = calloc(1, 65536);
    for (int k = 0; k < 3; k++) {
        int n = sizes[k];
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = -iters / 10 - 1; i < iters; i++) {
            double t0 = now_us();
            if (rank == 0) {
                MPI_Send(buf, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buf, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
            if (i >= 0) t[i] = (now_us() - t0) / 2;
        }
        if (rank == 0) {
            qsort(t, iters, sizeof(double), by_value);
            printf("%d %.3f %.3f\n", n, t[iters / 10], t[iters / 2]);
            fflush(stdout);
        }
    }
    free(t);
    free(buf);
    MPI_Finalize();
    return 0;
}
