/* Persistent requests: Send_init/Recv_init/Ssend_init, Start/Startall in a
 * loop, inactive requests in Wait, Request_free. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int n = 30000; /* large enough for the rendezvous protocol */
    int *out = malloc(n * sizeof(int)), *in = malloc(n * sizeof(int));
    int sv, rv;
    MPI_Request q[4];
    MPI_Status st[4];
    CHECK_RC(MPI_Send_init(out, n, MPI_INT, next, 1, MPI_COMM_WORLD, &q[0]));
    CHECK_RC(MPI_Recv_init(in, n, MPI_INT, prev, 1, MPI_COMM_WORLD, &q[1]));
    CHECK_RC(MPI_Ssend_init(&sv, 1, MPI_INT, next, 2, MPI_COMM_WORLD, &q[2]));
    CHECK_RC(MPI_Recv_init(&rv, 1, MPI_INT, prev, 2, MPI_COMM_WORLD, &q[3]));
    /* Inactive persistent requests complete at once with an empty status. */
    CHECK_RC(MPI_Wait(&q[0], &st[0]));
    CHECK(q[0] != MPI_REQUEST_NULL, "persistent request freed by Wait");
    for (int it = 0; it < 50; it++) {
        for (int i = 0; i < n; i++) out[i] = it * 7 + rank + i;
        sv = it * 100 + rank;
        CHECK_RC(MPI_Startall(4, q));
        CHECK_RC(MPI_Waitall(4, q, st));
        for (int i = 0; i < n; i++) CHECK(in[i] == it * 7 + prev + i, "iteration %d value %d", it, i);
        CHECK(rv == it * 100 + prev, "iteration %d ssend value %d", it, rv);
        CHECK(st[1].MPI_SOURCE == prev && st[3].MPI_TAG == 2, "status");
        for (int k = 0; k < 4; k++) CHECK(q[k] != MPI_REQUEST_NULL, "request %d freed", k);
    }
    /* Start one at a time. */
    CHECK_RC(MPI_Start(&q[1]));
    CHECK_RC(MPI_Start(&q[0]));
    CHECK_RC(MPI_Wait(&q[0], &st[0]));
    CHECK_RC(MPI_Wait(&q[1], &st[1]));
    for (int k = 0; k < 4; k++) {
        CHECK_RC(MPI_Request_free(&q[k]));
        CHECK(q[k] == MPI_REQUEST_NULL, "free did not null the handle");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("persistent OK on %d ranks\n", size);
    free(out); free(in);
    MPI_Finalize();
    return 0;
}
