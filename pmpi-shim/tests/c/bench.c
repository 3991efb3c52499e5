/* Overhead benchmark: a tight loop of a cheap call (MPI_Comm_rank) and an
 * 8-byte ping-pong between ranks 0 and 1. Prints ns per call and the
 * half round-trip latency in ns. Usage: bench LOOP_CALLS PINGPONGS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    long calls = argc > 1 ? atol(argv[1]) : 1000000;
    long pings = argc > 2 ? atol(argv[2]) : 100000;
    int rank, r;
    char buf[8] = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < calls; i++) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    double t1 = MPI_Wtime();
    MPI_Barrier(MPI_COMM_WORLD);
    double t2 = MPI_Wtime();
    for (long i = 0; i < pings; i++) {
        if (rank == 0) {
            MPI_Send(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    double t3 = MPI_Wtime();
    if (rank == 0)
        printf("call_ns %.2f pingpong_half_rtt_ns %.1f\n", (t1 - t0) * 1e9 / calls, (t3 - t2) * 1e9 / pings / 2);
    MPI_Finalize();
    return 0;
}
