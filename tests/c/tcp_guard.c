/* Ranks on two (fake) hosts exchange values over TCP after a pause during
 * which the test harness connects to a rank's port and sends forged
 * records. Every value must come from the real sender. */
#include "check.h"
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) { printf("paused\n"); fflush(stdout); }
    sleep(2); /* the forger acts now */
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int round = 0; round < 50; round++) {
        int out = rank * 1000 + round, in = -1;
        CHECK_RC(MPI_Sendrecv(&out, 1, MPI_INT, next, 5, &in, 1, MPI_INT, prev, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(in == prev * 1000 + round, "round %d: got %d from %d (forged?)", round, in, prev);
    }
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == size * (size - 1) / 2, "sum %d", sum);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("tcp_guard OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
