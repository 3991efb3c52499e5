/* Partitioned communication: rank 0 sends 4 partitions of 4 ints to rank 1,
 * three rounds of Start/Pready/Wait; between rounds a plain message with the
 * same tag, numbered apart from the partitioned ones. Two ranks. */
#include <mpi.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, buf[16] = {0}, one = 0, arrived = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Request r;
    if (rank == 0) MPI_Psend_init(buf, 4, 4, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    else MPI_Precv_init(buf, 4, 4, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    for (int it = 0; it < 3; it++) {
        MPI_Start(&r);
        if (rank == 0) {
            for (int p = 0; p < 4; p++) MPI_Pready(p, r);
        } else {
            while (!arrived) MPI_Parrived(r, 3, &arrived);
            arrived = 0;
        }
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        if (rank == 0) MPI_Send(&one, 1, MPI_INT, 1, 9, MPI_COMM_WORLD);
        else MPI_Recv(&one, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&r);
    MPI_Finalize();
    return 0;
}
