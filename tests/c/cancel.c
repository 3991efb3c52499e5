/* Cancel: a posted receive that never matches, and an unmatched large
 * (rendezvous) send; the cancelled send must never be received. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, flag;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Status st;
    MPI_Request q;

    int v;
    CHECK_RC(MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &q));
    CHECK_RC(MPI_Cancel(&q));
    CHECK_RC(MPI_Wait(&q, &st));
    CHECK_RC(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "receive was not cancelled");
    CHECK(q == MPI_REQUEST_NULL, "request not freed");

    int n = 1 << 20;
    char *big = malloc(n);
    memset(big, 7, n);
    if (rank == 0 && size > 1) {
        CHECK_RC(MPI_Isend(big, n, MPI_CHAR, 1, 55, MPI_COMM_WORLD, &q));
        CHECK_RC(MPI_Cancel(&q));
        CHECK_RC(MPI_Wait(&q, &st));
        CHECK_RC(MPI_Test_cancelled(&st, &flag));
        CHECK(flag, "unmatched rendezvous send was not cancelled");
        /* A second message with the same tag is what rank 1 must get. */
        memset(big, 9, n);
        CHECK_RC(MPI_Isend(big, n, MPI_CHAR, 1, 55, MPI_COMM_WORLD, &q));
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_RC(MPI_Wait(&q, &st));
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_RC(MPI_Recv(big, n, MPI_CHAR, 0, 55, MPI_COMM_WORLD, &st));
        CHECK(big[0] == 9 && big[n - 1] == 9, "received the cancelled message (%d)", big[0]);
        MPI_Barrier(MPI_COMM_WORLD); /* any cancelled message would be here by now */
        int f = 1;
        MPI_Iprobe(0, 55, MPI_COMM_WORLD, &f, &st);
        CHECK(!f, "a second message is pending: the cancel did not remove it");
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* Cancelling a completed send is not an error; the status says
     * "not cancelled". */
    if (size > 1) {
        int peer = rank ^ 1;
        if (peer < size) {
            int a = rank, b;
            CHECK_RC(MPI_Isend(&a, 1, MPI_INT, peer, 66, MPI_COMM_WORLD, &q));
            CHECK_RC(MPI_Recv(&b, 1, MPI_INT, peer, 66, MPI_COMM_WORLD, &st));
            CHECK_RC(MPI_Cancel(&q));
            CHECK_RC(MPI_Wait(&q, &st));
            CHECK_RC(MPI_Test_cancelled(&st, &flag));
            CHECK(!flag && b == peer, "completed send reported cancelled");
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("cancel OK on %d ranks\n", size);
    free(big);
    MPI_Finalize();
    return 0;
}
