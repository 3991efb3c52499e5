/* MPI 4.0 point-to-point: Isendrecv, Isendrecv_replace, partitioned
 * communication (Psend_init/Precv_init/Pready, Pready_range, Pready_list, Parrived). */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Request q;
    MPI_Status st;

    for (int n = 1; n <= 100000; n *= 100) {
        int *a = malloc(n * sizeof(int)), *b = malloc(n * sizeof(int));
        for (int i = 0; i < n; i++) a[i] = rank * 7 + i;
        CHECK_RC(MPI_Isendrecv(a, n, MPI_INT, next, 1, b, n, MPI_INT, prev, 1, MPI_COMM_WORLD, &q));
        CHECK_RC(MPI_Wait(&q, &st));
        CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == 1, "isendrecv status");
        for (int i = 0; i < n; i++) CHECK(b[i] == prev * 7 + i, "isendrecv %d", i);
        CHECK_RC(MPI_Isendrecv_replace(a, n, MPI_INT, next, 2, prev, 2, MPI_COMM_WORLD, &q));
        int flag = 0;
        while (!flag) CHECK_RC(MPI_Test(&q, &flag, &st));
        for (int i = 0; i < n; i++) CHECK(a[i] == prev * 7 + i, "isendrecv_replace %d", i);
        free(a); free(b);
    }

    /* Partitioned: 8 partitions of 1000 doubles, marked ready out of order. */
    const int P = 8, C = 1000;
    double *sb = malloc(P * C * sizeof(double)), *rb = malloc(P * C * sizeof(double));
    MPI_Request sq, rq;
    CHECK_RC(MPI_Psend_init(sb, P, C, MPI_DOUBLE, next, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &sq));
    CHECK_RC(MPI_Precv_init(rb, P, C, MPI_DOUBLE, prev, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &rq));
    for (int round = 0; round < 3; round++) {
        CHECK_RC(MPI_Start(&rq));
        CHECK_RC(MPI_Start(&sq));
        for (int p = P - 1; p >= 0; p--) {
            for (int i = 0; i < C; i++) sb[p * C + i] = round * 1e6 + rank * 1e4 + p * C + i;
            if (p == 3) CHECK_RC(MPI_Pready_range(2, 3, sq));
            else if (p == 0) { int l[2] = {0, 1}; CHECK_RC(MPI_Pready_list(2, l, sq)); }
            else if (p != 2 && p != 1) CHECK_RC(MPI_Pready(p, sq));
        }
        int arrived = 0;
        while (!arrived) CHECK_RC(MPI_Parrived(rq, P - 1, &arrived));
        CHECK_RC(MPI_Wait(&sq, MPI_STATUS_IGNORE));
        CHECK_RC(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        for (int k = 0; k < P * C; k++) CHECK(rb[k] == round * 1e6 + prev * 1e4 + k, "partitioned round %d elem %d", round, k);
    }
    MPI_Request_free(&sq);
    MPI_Request_free(&rq);
    free(sb); free(rb);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("p2p_mpi4 OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
