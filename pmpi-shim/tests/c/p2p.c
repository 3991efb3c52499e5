/* Point-to-point, collectives, communicators, nonblocking, regions, Pcontrol. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#define MPITRACE_WEAK
#include "mpitrace.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int buf[64] = {0};

    MPITRACE_REGION_BEGIN("pingpong");
    /* 5 ping-pongs between 0 and 1, tag 7, 16 bytes */
    for (int i = 0; i < 5; i++) {
        if (rank == 0) {
            MPI_Send(buf, 4, MPI_INT, 1, 7, MPI_COMM_WORLD);
            MPI_Recv(buf, 4, MPI_INT, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, 4, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 4, MPI_INT, 0, 8, MPI_COMM_WORLD);
        }
    }
    MPITRACE_REGION_END("pingpong");

    /* ANY_SOURCE gather at rank 0: every other rank sends 3 doubles, tag 5 */
    if (rank == 0) {
        for (int i = 1; i < size; i++) {
            MPI_Status st;
            double d[3];
            MPI_Recv(d, 3, MPI_DOUBLE, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st);
        }
    } else {
        double d[3] = {1, 2, 3};
        MPI_Send(d, 3, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD);
    }

    /* Nonblocking ring: Irecv from left, Isend to right, Waitall */
    {
        MPI_Request reqs[2];
        int left = (rank + size - 1) % size, right = (rank + 1) % size;
        char in[10], out[10] = "ring";
        MPI_Irecv(in, 10, MPI_CHAR, left, 3, MPI_COMM_WORLD, &reqs[0]);
        MPI_Isend(out, 10, MPI_CHAR, right, 3, MPI_COMM_WORLD, &reqs[1]);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    }

    /* Collectives */
    double x = rank, y;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Bcast(buf, 8, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Split: even and odd ranks */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_set_name(half, rank % 2 ? "odd" : "even");
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, half);
    MPI_Comm_free(&half);

    /* Pcontrol: the barrier between level 0 and 1 is not recorded */
    MPI_Pcontrol(0);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Pcontrol(1);

    MPI_Finalize();
    return 0;
}
