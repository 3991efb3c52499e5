/* Ping-pong latency and bandwidth between ranks 0 and 1; other ranks wait in
 * a barrier (so "4 ranks on 2 cores" measures an oversubscribed node).
 * Prints one line per size: "size_bytes half_round_trip_us bandwidth_GBps". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void run(int rank, size_t bytes, int iters, char *buf) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = 0;
    for (int i = -iters / 10 - 1; i < iters; i++) {
        if (i == 0) t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    if (rank == 0) {
        double half = t / iters / 2;
        printf("%zu %.3f %.3f\n", bytes, half * 1e6, bytes / half / 1e9);
        fflush(stdout);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    size_t sizes[] = {8, 1024, 65536, 4 << 20};
    int iters[] = {20000, 20000, 4000, 400};
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    char *buf = malloc(4 << 20);
    memset(buf, 1, 4 << 20);
    for (int k = 0; k < 4; k++) run(rank, sizes[k], iters[k] / scale > 10 ? iters[k] / scale : 10, buf);
    free(buf);
    MPI_Finalize();
    return 0;
}
