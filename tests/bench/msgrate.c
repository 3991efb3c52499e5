/* The small-message path that windowed bandwidth and message-rate
 * benchmarks exercise (osu_bw, osu_mbw_mr): rank 0 posts WINDOW MPI_Isend of
 * 8 bytes and completes them with MPI_Waitall; rank 1 the matching
 * MPI_Irecv and MPI_Waitall, then a 4-byte ack. Prints nanoseconds per
 * message. tests/bench/msgrate.sh runs it under callgrind to count the
 * instructions each call costs, which unlike times are the same on a busy
 * machine.
 *
 * Usage: msgrate [ITERATIONS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define WINDOW 64

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int iters = argc > 1 ? atoi(argv[1]) : 20000;
    char s[8] = {0}, r[8], ack[4] = {0};
    MPI_Request q[WINDOW];
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            for (int w = 0; w < WINDOW; w++) MPI_Isend(s, 8, MPI_CHAR, 1, 100, MPI_COMM_WORLD, &q[w]);
            MPI_Waitall(WINDOW, q, MPI_STATUSES_IGNORE);
            MPI_Recv(ack, 4, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            for (int w = 0; w < WINDOW; w++) MPI_Irecv(r, 8, MPI_CHAR, 0, 100, MPI_COMM_WORLD, &q[w]);
            MPI_Waitall(WINDOW, q, MPI_STATUSES_IGNORE);
            MPI_Send(ack, 4, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    if (rank == 0) printf("%.1f ns/msg %.2f Mmsg/s\n", t * 1e9 / iters / WINDOW, iters * WINDOW / t / 1e6);
    MPI_Finalize();
    return 0;
}
