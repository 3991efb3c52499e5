/* Planted hangs for `mpitrace record --hang-after` (tests/hang.rs), one
 * per mode (argv[1]); the test finds the call sites by the markers in the
 * comments. Run on 4 ranks. */
#include <mpi.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size, buf[4] = {0, 0, 0, 0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "";
    MPI_Barrier(MPI_COMM_WORLD);
    if (!strcmp(mode, "recvrecv")) {
        /* Ranks 0 and 1 both receive first: neither sends. */
        if (rank < 2) {
            int other = 1 - rank;
            MPI_Recv(buf, 1, MPI_INT, other, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @recvrecv */
            MPI_Send(buf, 1, MPI_INT, other, 7, MPI_COMM_WORLD);
        }
        MPI_Barrier(MPI_COMM_WORLD); /* @after-recvrecv */
    } else if (!strcmp(mode, "root")) {
        /* The last rank names itself as the root: the others' root waits
         * for its contribution, which it never sends. */
        int all[64], root = rank == size - 1 ? size - 1 : 0;
        MPI_Gather(buf, 1, MPI_INT, all, 1, MPI_INT, root, MPI_COMM_WORLD); /* @root */
        MPI_Barrier(MPI_COMM_WORLD); /* @after-root */
    } else if (!strcmp(mode, "barrier")) {
        /* Rank 2 never enters the barrier. */
        if (rank == 2)
            for (;;)
                pause(); /* @computing */
        MPI_Barrier(MPI_COMM_WORLD); /* @barrier */
    } else if (!strcmp(mode, "dead")) {
        /* Rank 2 dies; the others wait for its message. */
        if (rank == 2)
            raise(SIGKILL); /* @dies */
        MPI_Recv(buf, 1, MPI_INT, 2, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @dead */
    } else if (!strcmp(mode, "dead-aside")) {
        /* Rank 2 dies; the others, which do not talk to it, deadlock
         * (ranks 0 and 1 receive from each other, rank 3 from rank 0). */
        if (rank == 2)
            raise(SIGKILL); /* @dies-aside */
        MPI_Recv(buf, 1, MPI_INT, rank == 3 ? 0 : 1 - rank, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @aside */
    } else if (!strcmp(mode, "ok")) {
        /* No hang: a ring of messages, then a long pause outside MPI on
         * every rank (not a hang: nobody is in MPI). */
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        MPI_Sendrecv(buf, 1, MPI_INT, next, 0, buf + 1, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        sleep(3);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
