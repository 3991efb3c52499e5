/* With the default handler (MPI_ERRORS_ARE_FATAL) an invalid rank ends the
 * whole job with a message naming the call; the other ranks are blocked in
 * a receive that never completes. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, v = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == size - 1) {
        MPI_Send(&v, 1, MPI_INT, size + 10, 0, MPI_COMM_WORLD);
        printf("UNREACHABLE: send to an invalid rank returned\n");
    } else {
        MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("UNREACHABLE: receive completed\n");
    }
    MPI_Finalize();
    return 0;
}
