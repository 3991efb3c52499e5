/* A minimal profiling library (chapter 14): defines MPI_Send and
 * MPI_Barrier, counts them, forwards to PMPI_*. Loaded with LD_PRELOAD. */
#include <mpi.h>
#include <stdio.h>

static int sends, barriers;

int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {
    sends++;
    return PMPI_Send(buf, count, dt, dest, tag, comm);
}

int MPI_Barrier(MPI_Comm comm) {
    barriers++;
    return PMPI_Barrier(comm);
}

int MPI_Finalize(void) {
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("tool: rank %d saw %d MPI_Send and %d MPI_Barrier\n", rank, sends, barriers);
    return PMPI_Finalize();
}
