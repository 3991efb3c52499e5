/* The application of the PMPI test: 3 direct MPI_Send calls, 2 barriers,
 * and collectives/Sendrecv that must not show up as MPI_Send. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, v = 1, w;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int i = 0; i < 3; i++) {
        MPI_Request q;
        MPI_Irecv(&w, 1, MPI_INT, prev, i, MPI_COMM_WORLD, &q);
        MPI_Send(&v, 1, MPI_INT, next, i, MPI_COMM_WORLD);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Sendrecv(&v, 1, MPI_INT, next, 9, &w, 1, MPI_INT, prev, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
