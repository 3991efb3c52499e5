/* Rank 0 enters a barrier on a fresh communicator while the others sleep:
 * it makes the communicator's shared-memory segment, which the others
 * never map. The test then stops the job (signal to mpirun,
 * MPIEXEC_TIMEOUT) and checks that nothing is left in /dev/shm (such a
 * segment has no name there: it used to, until every rank had mapped it). */
#include "check.h"
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm c;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    if (rank == 0) {
        printf("rank 0 in the barrier\n");
        fflush(stdout);
        MPI_Barrier(c);
    } else {
        sleep(120);
    }
    printf("UNREACHABLE\n");
    MPI_Finalize();
    return 0;
}
