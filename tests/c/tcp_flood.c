/* Ranks on two (fake) hosts exchange values over TCP for a while (argv[1]
 * seconds, 13 by default) while the test harness opens connections to a
 * rank's port that never authenticate: hundreds of idle ones, one that
 * floods, one that stops half-way. Every value must come from the real
 * sender; at the end each rank reports its peak resident memory. */
#include "check.h"
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double seconds = argc > 1 ? atof(argv[1]) : 13.0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) { printf("running\n"); fflush(stdout); }
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    double t0 = MPI_Wtime();
    long rounds = 0;
    for (int stop = 0; !stop; rounds++) {
        int out = (int)(rank * 1000 + rounds % 1000), in = -1;
        CHECK_RC(MPI_Sendrecv(&out, 1, MPI_INT, next, 5, &in, 1, MPI_INT, prev, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(in == (int)(prev * 1000 + rounds % 1000), "round %ld: got %d from %d", rounds, in, prev);
        int late = rank == 0 && MPI_Wtime() - t0 > seconds;
        CHECK_RC(MPI_Allreduce(&late, &stop, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    }
    long rss = test_status_kb("VmHWM:"), all[64];
    CHECK(size <= 64, "too many ranks");
    MPI_Gather(&rss, 1, MPI_LONG, all, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++) printf("rank %d peak RSS %ld kB\n", r, all[r]);
        printf("tcp_flood OK on %d ranks, %ld rounds\n", size, rounds);
    }
    MPI_Finalize();
    return 0;
}
