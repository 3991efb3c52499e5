/* Rank 1 sends 3 messages to rank 0, then dies as argv[1] says:
 * "abort" (MPI_Abort), "segv" (segmentation fault), "kill" (SIGKILL).
 * Rank 0 receives the 3 messages, then waits for a 4th that never comes. */
#include <mpi.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, x = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        for (int i = 0; i < 3; i++) MPI_Send(&x, 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
        if (!strcmp(argv[1], "abort")) MPI_Abort(MPI_COMM_WORLD, 42);
        if (!strcmp(argv[1], "segv")) { volatile int *p = (int *)16; *p = 1; }
        if (!strcmp(argv[1], "kill")) kill(getpid(), SIGKILL);
    } else if (rank == 0) {
        for (int i = 0; i < 4; i++) MPI_Recv(&x, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
