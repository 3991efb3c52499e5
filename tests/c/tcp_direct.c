/* The blocking-receive fast path from a rank on another host (its socket
 * read directly) against what it must leave to the general path or get
 * right itself. Four ranks on two (fake) hosts: 0 and 1 share one, 2 and 3
 * the other (MPICORE_FAKE_HOSTS=2).
 *   A. A burst of three tags read in one go: asked for out of order, every
 *      tag's messages still arrive in send order.
 *   B. A local peer's message arrives while rank 0 waits for a remote one;
 *      and a remote wait that rank 0's own progress must end (its streamed
 *      rendezvous send to rank 3 is what makes rank 2 send).
 *   C. ANY_SOURCE and specific-source receives mixed, from a local and two
 *      remote senders: per-source order and statuses.
 *   D. A cancelled receive, Probe, then receives of probed and unprobed
 *      messages.
 *   E. Thousands of eager messages of changing sizes, more than the socket
 *      buffers hold: partly written records are finished in order. */
#include "check.h"

#define BIG (1 << 18)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 4, "needs 4 ranks, has %d", size);
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Status st;
    int v[4];

    /* A. */
    if (rank == 2) {
        for (int i = 0; i < 60; i++) { v[0] = i; CHECK_RC(MPI_Send(v, 1, MPI_INT, 0, i % 3, w)); }
    }
    MPI_Barrier(w);
    if (rank == 0) {
        for (int want = 2, i = 0; i < 60; i++) {
            if (i == 20) want = 0;
            int tag = i < 40 ? want : MPI_ANY_TAG;
            CHECK_RC(MPI_Recv(v, 1, MPI_INT, 2, tag, w, &st));
            int expect = i < 20 ? 3 * i + 2 : i < 40 ? 3 * (i - 20) : 3 * (i - 40) + 1;
            CHECK(v[0] == expect && st.MPI_TAG == expect % 3 && st.MPI_SOURCE == 2, "A %d: got %d tag %d", i, v[0], st.MPI_TAG);
        }
    }
    MPI_Barrier(w);

    /* B. */
    if (rank == 1) {
        v[0] = 111;
        CHECK_RC(MPI_Send(v, 1, MPI_INT, 0, 20, w));
        CHECK_RC(MPI_Send(v, 1, MPI_INT, 2, 21, w));
    } else if (rank == 2) {
        CHECK_RC(MPI_Recv(v, 1, MPI_INT, 1, 21, w, &st));
        v[0] = 222;
        CHECK_RC(MPI_Send(v, 1, MPI_INT, 0, 22, w));
    } else if (rank == 0) {
        CHECK_RC(MPI_Recv(v, 1, MPI_INT, 2, 22, w, &st));
        CHECK(v[0] == 222, "B remote: %d", v[0]);
        CHECK_RC(MPI_Recv(v, 1, MPI_INT, 1, 20, w, &st));
        CHECK(v[0] == 111, "B local: %d", v[0]);
    }
    int *big = malloc(BIG * sizeof(int));
    if (rank == 0) {
        for (int i = 0; i < BIG; i++) big[i] = i ^ 0x5a5a;
        MPI_Request r;
        CHECK_RC(MPI_Isend(big, BIG, MPI_INT, 3, 23, w, &r));
        CHECK_RC(MPI_Recv(v, 1, MPI_INT, 2, 25, w, &st));
        CHECK(v[0] == 333, "B after stream: %d", v[0]);
        CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else if (rank == 3) {
        CHECK_RC(MPI_Recv(big, BIG, MPI_INT, 0, 23, w, &st));
        for (int i = 0; i < BIG; i++) CHECK(big[i] == (i ^ 0x5a5a), "B big[%d] = %d", i, big[i]);
        v[0] = 333;
        CHECK_RC(MPI_Send(v, 1, MPI_INT, 2, 24, w));
    } else if (rank == 2) {
        CHECK_RC(MPI_Recv(v, 1, MPI_INT, 3, 24, w, &st));
        CHECK_RC(MPI_Send(v, 1, MPI_INT, 0, 25, w));
    }
    MPI_Barrier(w);

    /* C. */
    enum { K = 300 };
    if (rank != 0) {
        for (int i = 0; i < K; i++) { v[0] = rank; v[1] = i; CHECK_RC(MPI_Send(v, 2, MPI_INT, 0, 30, w)); }
    } else {
        int next[4] = {0, 0, 0, 0};
        for (int i = 0; i < 3 * K; i++) {
            int src = MPI_ANY_SOURCE;
            if (i % 3 == 0 && next[2] < K) src = 2;
            if (i % 3 == 1 && next[3] < K) src = 3;
            CHECK_RC(MPI_Recv(v, 2, MPI_INT, src, 30, w, &st));
            int s = st.MPI_SOURCE;
            CHECK(s >= 1 && s <= 3 && v[0] == s && (src == MPI_ANY_SOURCE || src == s), "C %d: from %d (asked %d) says %d", i, s, src, v[0]);
            CHECK(v[1] == next[s], "C %d: from %d seq %d, expected %d", i, s, v[1], next[s]);
            next[s]++;
        }
    }
    MPI_Barrier(w);

    /* D. */
    if (rank == 2) {
        v[0] = 7; CHECK_RC(MPI_Send(v, 1, MPI_INT, 0, 40, w));
        v[0] = 8; CHECK_RC(MPI_Send(v, 1, MPI_INT, 0, 41, w));
        CHECK_RC(MPI_Recv(v, 1, MPI_INT, 0, 42, w, &st));
        v[0] = 9; CHECK_RC(MPI_Send(v, 1, MPI_INT, 0, 99, w));
    } else if (rank == 0) {
        MPI_Request r;
        int x = -1, flag = 0, n = 0;
        CHECK_RC(MPI_Irecv(&x, 1, MPI_INT, 2, 99, w, &r));
        CHECK_RC(MPI_Cancel(&r));
        CHECK_RC(MPI_Wait(&r, &st));
        MPI_Test_cancelled(&st, &flag);
        CHECK(flag && x == -1, "D cancel: flag %d x %d", flag, x);
        CHECK_RC(MPI_Probe(2, 41, w, &st));
        MPI_Get_count(&st, MPI_INT, &n);
        CHECK(st.MPI_TAG == 41 && st.MPI_SOURCE == 2 && n == 1, "D probe: tag %d count %d", st.MPI_TAG, n);
        CHECK_RC(MPI_Recv(v, 1, MPI_INT, 2, 40, w, &st));
        CHECK(v[0] == 7, "D 40: %d", v[0]);
        CHECK_RC(MPI_Recv(v, 1, MPI_INT, 2, 41, w, &st));
        CHECK(v[0] == 8, "D 41: %d", v[0]);
        CHECK_RC(MPI_Send(v, 1, MPI_INT, 2, 42, w));
        CHECK_RC(MPI_Recv(v, 1, MPI_INT, 2, 99, w, &st));
        CHECK(v[0] == 9 && x == -1, "D 99: %d (cancelled buffer %d)", v[0], x);
    }
    MPI_Barrier(w);

    /* E. */
    enum { N = 3000 };
    if (rank == 3 || rank == 1) {
        int peer = 4 - rank;
        for (int i = 0; i < N; i++) {
            int n = 2 + (i * 997) % 2047;
            big[0] = i;
            big[n - 1] = -i;
            CHECK_RC(MPI_Send(big, n, MPI_INT, peer, 50, w));
        }
        for (int i = 0; i < N; i++) {
            int n = 2 + (i * 997) % 2047, got;
            CHECK_RC(MPI_Recv(big, 2048, MPI_INT, peer, 50, w, &st));
            MPI_Get_count(&st, MPI_INT, &got);
            CHECK(got == n && big[0] == i && big[n - 1] == -i, "E %d: count %d (want %d), %d .. %d", i, got, n, big[0], big[n - 1]);
        }
    }
    free(big);
    MPI_Barrier(w);
    if (rank == 0) printf("tcp_direct OK\n");
    MPI_Finalize();
    return 0;
}
