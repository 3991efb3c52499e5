/* The library of dlopen.c (built with -shared -fPIC). */
#include <mpi.h>

void plugin_exchange(void) {
    int rank, v = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&rank, &v, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* line 7 */
}
