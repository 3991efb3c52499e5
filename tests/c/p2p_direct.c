/* The blocking-receive fast path (a small message taken straight from the
 * sender's ring) against the cases it must hand to the general path or get
 * right itself: messages of other tags ahead in the ring (kept, in order),
 * ANY_TAG, an earlier posted Irecv that must match first, truncation,
 * synchronous and large (rendezvous) messages, zero bytes, self, and a
 * ping-pong long enough to run it thousands of times. Ranks pair up
 * (0-1, 2-3, ...); an odd last rank talks to itself. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = (rank ^ 1) < size ? (rank ^ 1) : rank;
    int lead = rank < peer || peer == rank;
    MPI_Status st;
    int v[4], big[20000];

    /* 1. Tags 1,2,3 sent in order; the receiver asks for 3 first, then
     * ANY_TAG twice: it must get 1 then 2 (order of the ring kept). */
    if (peer != rank) {
        if (lead) {
            for (int t = 1; t <= 3; t++) { v[0] = 10 * t; CHECK_RC(MPI_Send(v, 1, MPI_INT, peer, t, MPI_COMM_WORLD)); }
        } else {
            CHECK_RC(MPI_Recv(v, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, &st));
            CHECK(v[0] == 30 && st.MPI_TAG == 3 && st.MPI_SOURCE == peer, "tag 3 first: %d tag %d", v[0], st.MPI_TAG);
            CHECK_RC(MPI_Recv(v, 1, MPI_INT, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            CHECK(v[0] == 10 && st.MPI_TAG == 1, "then tag 1: %d tag %d", v[0], st.MPI_TAG);
            CHECK_RC(MPI_Recv(v, 1, MPI_INT, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            CHECK(v[0] == 20 && st.MPI_TAG == 2, "then tag 2: %d tag %d", v[0], st.MPI_TAG);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 2. A posted Irecv matches before a later blocking receive. */
    if (peer != rank) {
        if (lead) {
            v[0] = 1; CHECK_RC(MPI_Send(v, 1, MPI_INT, peer, 7, MPI_COMM_WORLD));
            v[0] = 2; CHECK_RC(MPI_Send(v, 1, MPI_INT, peer, 7, MPI_COMM_WORLD));
        } else {
            MPI_Request r;
            int a = 0, b = 0;
            CHECK_RC(MPI_Irecv(&a, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, &r));
            CHECK_RC(MPI_Recv(&b, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, &st));
            CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
            CHECK(a == 1 && b == 2, "posted first: a=%d b=%d", a, b);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3. Truncation is reported, synchronous and rendezvous messages arrive,
     * zero bytes carry a status. */
    if (peer != rank) {
        if (lead) {
            int w[3] = {5, 6, 7};
            CHECK_RC(MPI_Send(w, 3, MPI_INT, peer, 8, MPI_COMM_WORLD));
            CHECK_RC(MPI_Ssend(w, 2, MPI_INT, peer, 9, MPI_COMM_WORLD));
            for (int i = 0; i < 20000; i++) big[i] = i;
            CHECK_RC(MPI_Send(big, 20000, MPI_INT, peer, 10, MPI_COMM_WORLD));
            CHECK_RC(MPI_Send(NULL, 0, MPI_INT, peer, 11, MPI_COMM_WORLD));
        } else {
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
            int rc = MPI_Recv(v, 2, MPI_INT, peer, 8, MPI_COMM_WORLD, &st);
            CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "truncation: rc %d", rc);
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
            CHECK_RC(MPI_Recv(v, 4, MPI_INT, peer, 9, MPI_COMM_WORLD, &st));
            int n;
            MPI_Get_count(&st, MPI_INT, &n);
            CHECK(n == 2 && v[0] == 5 && v[1] == 6, "ssend: n=%d", n);
            CHECK_RC(MPI_Recv(big, 20000, MPI_INT, peer, 10, MPI_COMM_WORLD, &st));
            for (int i = 0; i < 20000; i++) CHECK(big[i] == i, "big[%d]=%d", i, big[i]);
            CHECK_RC(MPI_Recv(v, 4, MPI_INT, peer, 11, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_INT, &n);
            CHECK(n == 0 && st.MPI_TAG == 11 && st.MPI_SOURCE == peer, "zero bytes: n=%d", n);
        }
    } else {
        v[0] = 42;
        CHECK_RC(MPI_Sendrecv(v, 1, MPI_INT, rank, 1, v + 1, 1, MPI_INT, rank, 1, MPI_COMM_WORLD, &st));
        CHECK(v[1] == 42, "self: %d", v[1]);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 4. A long ping-pong with changing values and sizes. */
    if (peer != rank) {
        for (int i = 0; i < 5000; i++) {
            int n = 1 + i % 4;
            if (lead) {
                for (int k = 0; k < n; k++) v[k] = i * 4 + k;
                CHECK_RC(MPI_Send(v, n, MPI_INT, peer, i % 3, MPI_COMM_WORLD));
                CHECK_RC(MPI_Recv(v, 4, MPI_INT, peer, i % 3, MPI_COMM_WORLD, &st));
                for (int k = 0; k < n; k++) CHECK(v[k] == -(i * 4 + k), "pong %d.%d = %d", i, k, v[k]);
            } else {
                CHECK_RC(MPI_Recv(v, 4, MPI_INT, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                int got;
                MPI_Get_count(&st, MPI_INT, &got);
                CHECK(got == n && st.MPI_TAG == i % 3, "ping %d: count %d tag %d", i, got, st.MPI_TAG);
                for (int k = 0; k < n; k++) v[k] = -v[k];
                CHECK_RC(MPI_Send(v, n, MPI_INT, peer, i % 3, MPI_COMM_WORLD));
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("p2p_direct OK\n");
    MPI_Finalize();
    return 0;
}
