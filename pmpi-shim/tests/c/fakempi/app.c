/* A program on the fake MPI (fakempi.h): what it prints and its exit
 * status must be the same with and without libmpitrace.so preloaded. */
#include <stdio.h>
#include "fakempi.h"

int main(int argc, char **argv) {
    int rank = -1, size = -1, out[3] = { 7, 8, 9 }, in[3] = { 0, 0, 0 };
    MPI_Status st;
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 10;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rs = MPI_Send(out, 3, MPI_INT, 0, 5, MPI_COMM_WORLD);
    int rr = MPI_Recv(in, 3, MPI_INT, 0, 5, MPI_COMM_WORLD, &st);
    int rb = MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d of %d send %d recv %d barrier %d got %d %d %d status %ld %d %d c2f %d wtime %.1f\n", rank, size,
           rs, rr, rb, in[0], in[1], in[2], st.bytes, st.source, st.tag, MPI_Comm_c2f(MPI_COMM_WORLD), MPI_Wtime());
    MPI_Finalize();
    return 3;
}
