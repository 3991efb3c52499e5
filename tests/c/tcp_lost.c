/* A job whose TCP connection between two live ranks breaks (the test hook
 * MPICORE_TEST_TCP_FAULT cuts it or corrupts a record's length): the ranks
 * exchange Sendrecv and Allreduce for up to 40 s, but the job must end within
 * seconds, with a message naming both ranks and hosts. Each rank first
 * prints a line that stays in stdio's buffer (stdout is a pipe): a rank that
 * ends the job must flush it before exiting. */
#include "check.h"
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("tcp_lost: rank %d buffered line\n", rank);
    double t0 = MPI_Wtime();
    long rounds = 0;
    while (MPI_Wtime() - t0 < 40) {
        int out = rank, in = -1, sum = 0;
        MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, 0, &in, 1, MPI_INT, (rank + size - 1) % size, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(in == (rank + size - 1) % size, "got %d", in);
        MPI_Allreduce(&out, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(sum == size * (size - 1) / 2, "sum %d", sum);
        rounds++;
    }
    printf("UNREACHABLE: tcp_lost ran %ld rounds without losing a connection\n", rounds);
    MPI_Finalize();
    return 0;
}
