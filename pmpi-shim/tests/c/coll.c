/* Collectives and communicator constructors on 4 ranks: v-collectives,
 * a nonblocking allreduce, two dups, a cartesian communicator, an
 * intercommunicator between even and odd ranks with a message across it,
 * and its merge. */
#include <mpi.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int send[16], recv[64], counts[16], displs[16];
    for (int i = 0; i < 16; i++) { send[i] = rank; counts[i] = i + 1; displs[i] = i * (i + 1) / 2; }

    /* Gatherv at root 2: rank i contributes i+1 ints. */
    MPI_Gatherv(send, rank + 1, MPI_INT, recv, counts, displs, MPI_INT, 2, MPI_COMM_WORLD);
    /* Alltoallv: i+1 ints to rank i. */
    int rcounts[16], rdispls[16];
    for (int i = 0; i < size; i++) { rcounts[i] = rank + 1; rdispls[i] = i * (rank + 1); }
    MPI_Alltoallv(send, counts, displs, MPI_INT, recv, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD);
    double x = rank, y;
    MPI_Reduce(&x, &y, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Request r;
    MPI_Iallreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);

    MPI_Comm d1, d2, cart;
    MPI_Comm_dup(MPI_COMM_WORLD, &d1);
    MPI_Comm_dup(MPI_COMM_WORLD, &d2);
    MPI_Barrier(d2);
    int dims[1] = {0}, periods[1] = {1};
    MPI_Dims_create(size, 1, dims);
    MPI_Cart_create(d1, 1, dims, periods, 0, &cart);
    MPI_Bcast(&x, 1, MPI_DOUBLE, 1, cart);

    MPI_Comm half, inter, merged;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 77, &inter);
    int hr;
    MPI_Comm_rank(half, &hr);
    if (hr == 0) {
        /* leaders exchange one int across the intercommunicator (remote rank 0) */
        if (rank % 2 == 0) MPI_Send(&rank, 1, MPI_INT, 0, 5, inter);
        else MPI_Recv(&x, 1, MPI_INT, 0, 5, inter, MPI_STATUS_IGNORE);
    }
    MPI_Intercomm_merge(inter, rank % 2, &merged);
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, merged);

    MPI_Scatter(send, 2, MPI_INT, recv, 2, MPI_INT, 3, MPI_COMM_WORLD);

    MPI_Comm idup;
    MPI_Comm_idup(MPI_COMM_WORLD, &idup, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Barrier(idup);
    MPI_Comm_free(&idup);

    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MPI_Comm_free(&cart);
    MPI_Comm_free(&d2);
    MPI_Comm_free(&d1);
    MPI_Finalize();
    return 0;
}
