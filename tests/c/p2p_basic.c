/* Blocking point-to-point: values, ring, ANY_SOURCE/ANY_TAG ordering
 * (non-overtaking per sender), zero-byte messages, PROC_NULL, Get_count,
 * Sendrecv_replace, self messages, pair types. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Status st;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    /* Ring of arrays. */
    int out[100], in[100];
    for (int i = 0; i < 100; i++) out[i] = rank * 1000 + i;
    CHECK_RC(MPI_Sendrecv(out, 100, MPI_INT, next, 5, in, 100, MPI_INT, prev, 5, MPI_COMM_WORLD, &st));
    for (int i = 0; i < 100; i++) CHECK(in[i] == prev * 1000 + i, "in[%d]=%d", i, in[i]);
    CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == 5, "status %d %d", st.MPI_SOURCE, st.MPI_TAG);
    int cnt;
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == 100, "count %d", cnt);
    MPI_Get_count(&st, MPI_DOUBLE, &cnt);
    CHECK(cnt == 50, "count as double %d", cnt);

    /* Every rank but 0 sends 200 messages with increasing payloads and
     * varying tags; rank 0 receives them with ANY_SOURCE/ANY_TAG and checks
     * that each sender's messages arrive in order. */
    const int M = 200;
    if (rank == 0) {
        int *last = calloc(size, sizeof(int));
        for (int i = 1; i < size; i++) last[i] = -1;
        for (int k = 0; k < M * (size - 1); k++) {
            int v;
            CHECK_RC(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            CHECK(v == last[st.MPI_SOURCE] + 1, "from %d got %d after %d", st.MPI_SOURCE, v, last[st.MPI_SOURCE]);
            CHECK(st.MPI_TAG == v % 7, "tag %d for %d", st.MPI_TAG, v);
            last[st.MPI_SOURCE] = v;
        }
        for (int i = 1; i < size; i++) CHECK(last[i] == M - 1, "sender %d last %d", i, last[i]);
        free(last);
    } else {
        for (int v = 0; v < M; v++) CHECK_RC(MPI_Send(&v, 1, MPI_INT, 0, v % 7, MPI_COMM_WORLD));
    }

    MPI_Barrier(MPI_COMM_WORLD);

    /* Tag selection: receive tag 2 before tag 1 from the same sender. */
    if (rank == 1 && size > 1) {
        int a = 11, b = 22;
        MPI_Send(&a, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        MPI_Send(&b, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
    } else if (rank == 0 && size > 1) {
        int a, b;
        MPI_Recv(&b, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, &st);
        MPI_Recv(&a, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &st);
        CHECK(a == 11 && b == 22, "a=%d b=%d", a, b);
        MPI_Get_count(&st, MPI_DOUBLE, &cnt);
        CHECK(cnt == MPI_UNDEFINED, "4 bytes counted as doubles: %d", cnt);
    }

    /* Zero-byte messages carry their envelope. */
    CHECK_RC(MPI_Sendrecv(NULL, 0, MPI_BYTE, next, 9, NULL, 0, MPI_BYTE, prev, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == 0 && st.MPI_TAG == 9 && st.MPI_SOURCE == prev, "zero-byte: count %d tag %d", cnt, st.MPI_TAG);

    /* PROC_NULL: immediate, status says so. */
    int x = 42;
    CHECK_RC(MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    CHECK_RC(MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && cnt == 0 && x == 42, "proc null");

    /* Messages to self, small and large. */
    for (int n = 1; n <= (1 << 20); n *= 64) {
        char *s = malloc(n), *r = malloc(n);
        for (int i = 0; i < n; i++) s[i] = (char)(i ^ rank);
        MPI_Request q;
        CHECK_RC(MPI_Irecv(r, n, MPI_CHAR, rank, 3, MPI_COMM_WORLD, &q));
        CHECK_RC(MPI_Send(s, n, MPI_CHAR, rank, 3, MPI_COMM_WORLD));
        CHECK_RC(MPI_Wait(&q, &st));
        CHECK(memcmp(s, r, n) == 0, "self message of %d bytes differs", n);
        free(s);
        free(r);
    }

    /* Sendrecv_replace. */
    int rep[3] = {rank, rank + 1, rank + 2};
    CHECK_RC(MPI_Sendrecv_replace(rep, 3, MPI_INT, next, 4, prev, 4, MPI_COMM_WORLD, &st));
    CHECK(rep[0] == prev && rep[2] == prev + 2, "replace %d %d", rep[0], rep[2]);

    /* A predefined pair type with padding (MPI_DOUBLE_INT: 12 bytes in 16). */
    struct { double v; int i; } pin[3], pout[3];
    for (int i = 0; i < 3; i++) { pout[i].v = rank + i * 0.5; pout[i].i = rank * 10 + i; }
    CHECK_RC(MPI_Sendrecv(pout, 3, MPI_DOUBLE_INT, next, 6, pin, 3, MPI_DOUBLE_INT, prev, 6, MPI_COMM_WORLD, &st));
    for (int i = 0; i < 3; i++) CHECK(pin[i].v == prev + i * 0.5 && pin[i].i == prev * 10 + i, "pair %d", i);
    MPI_Get_count(&st, MPI_DOUBLE_INT, &cnt);
    CHECK(cnt == 3, "pair count %d", cnt);
    MPI_Get_elements(&st, MPI_DOUBLE_INT, &cnt);
    CHECK(cnt == 6, "pair elements %d", cnt);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("p2p_basic OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
