/* One-sided: a window on MPI_COMM_WORLD; rank 0 puts 3 ints into every
 * other rank between two fences, then everyone gets one int from rank 0. */
#include <mpi.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, buf[8] = {0}, src[3] = {1, 2, 3}, got;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win win;
    MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    if (rank == 0)
        for (int t = 1; t < size; t++) MPI_Put(src, 3, MPI_INT, t, 0, 3, MPI_INT, win);
    MPI_Win_fence(0, win);
    MPI_Get(&got, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
