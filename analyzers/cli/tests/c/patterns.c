/* Programs whose analysis is known by construction, chosen by argv[1]:
 *   late MS       rank 0 sends to rank 1 MS milliseconds after rank 1 posts
 *                 its receive (a Late Sender of MS ms at rank 1)
 *   imbalance MS  3 allreduces; the last rank arrives MS ms late at each
 *   ring          rank r sends (r+1)*1000 bytes to r+1 (Sendrecv) and 100
 *                 bytes to r-1 (Isend, received with Irecv(ANY_SOURCE))
 *   abort         rank 1 sends one message to rank 0, then calls MPI_Abort
 *                 while rank 0 waits for a second message */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char buf[65536], in[65536];

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "late";
    int ms = argc > 2 ? atoi(argv[2]) : 100;
    MPI_Barrier(MPI_COMM_WORLD);
    if (!strcmp(mode, "late")) {
        if (rank == 0) {
            usleep(ms * 1000);
            MPI_Send(buf, 8, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Recv(in, 8, MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else if (!strcmp(mode, "imbalance")) {
        for (int i = 0; i < 3; i++) {
            if (rank == size - 1) usleep(ms * 1000);
            double x = rank, y;
            MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
    } else if (!strcmp(mode, "ring")) {
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        MPI_Sendrecv(buf, (rank + 1) * 1000, MPI_BYTE, to, 1, in, sizeof in, MPI_BYTE, from, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Request q[2];
        MPI_Irecv(in, 100, MPI_BYTE, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &q[0]);
        MPI_Isend(buf, 100, MPI_BYTE, from, 2, MPI_COMM_WORLD, &q[1]);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    } else if (!strcmp(mode, "isendrecv")) {
        /* MPI 4's Isendrecv around a ring: 4 messages sent and received by
         * the same calls, the receive half completed at MPI_Wait. */
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        MPI_Request q;
        MPI_Isendrecv(buf, 500, MPI_BYTE, to, 9, in, sizeof in, MPI_BYTE, from, 9, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    } else if (!strcmp(mode, "abort")) {
        if (rank == 1) {
            MPI_Send(buf, 8, MPI_BYTE, 0, 9, MPI_COMM_WORLD);
            usleep(200 * 1000);
            MPI_Abort(MPI_COMM_WORLD, 3);
        } else if (rank == 0) {
            MPI_Recv(in, 8, MPI_BYTE, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(in, 8, MPI_BYTE, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
