/* ULFM without failures: MPIX_Comm_revoke reaches ranks blocked in
 * MPI_Recv, MPI_Barrier, MPI_Probe, MPI_Mprobe, and waiting for nonblocking
 * operations on the communicator, without their taking part: all of them
 * get MPIX_ERR_REVOKED (under MPI_ERRORS_RETURN, and through a user error
 * handler), as does every later operation on it; MPIX_Comm_is_revoked says
 * so; MPIX_Comm_agree / iagree (bitwise AND) and MPIX_Comm_shrink still
 * work on it and give a working communicator; failure_ack / get_acked
 * report no failure; other communicators are not affected. */
#include <unistd.h>

#include "check.h"

static int handler_calls, handler_class;

static void on_error(MPI_Comm *comm, int *code, ...) {
    (void)comm;
    handler_calls++;
    MPI_Error_class(*code, &handler_class);
}

#define CHECK_REVOKED(call)                                                            \
    do {                                                                               \
        int rc_ = (call);                                                              \
        CHECK(error_class(rc_) == MPIX_ERR_REVOKED, "%s: rc %d (class %d), not revoked", \
              #call, rc_, error_class(rc_));                                           \
    } while (0)

static MPI_Comm fresh(void) {
    MPI_Comm c;
    CHECK_RC(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    CHECK_RC(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
    return c;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, flag, x = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int last = size - 1;

    /* Nothing revoked, nothing failed. */
    MPI_Comm a = fresh();
    CHECK_RC(MPIX_Comm_is_revoked(a, &flag));
    CHECK(flag == 0, "fresh communicator revoked");
    CHECK_RC(MPIX_Comm_failure_ack(a));
    MPI_Group g;
    CHECK_RC(MPIX_Comm_failure_get_acked(a, &g));
    CHECK(g == MPI_GROUP_EMPTY, "acknowledged failures without failures");

    /* Agreement: the bitwise AND of every rank's flag. */
    flag = rank == last ? 0x6 : 0x7;
    CHECK_RC(MPIX_Comm_agree(a, &flag));
    CHECK(flag == (size > 1 || last == 0 ? 0x6 : 0x7), "agree gave %#x", flag);
    flag = ~(1 << (rank % 16)) & 0xffff;
    MPI_Request rq;
    CHECK_RC(MPIX_Comm_iagree(a, &flag, &rq));
    /* Other traffic meanwhile (a blocking agree here would deadlock it). */
    int token = rank, got = -1;
    CHECK_RC(MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % size, 4, &got, 1, MPI_INT, (rank + size - 1) % size, 4, a,
                          MPI_STATUS_IGNORE));
    CHECK(got == (rank + size - 1) % size, "ring gave %d", got);
    CHECK_RC(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    int expect = 0xffff;
    for (int r = 0; r < size; r++) expect &= ~(1 << (r % 16));
    CHECK(flag == expect, "iagree gave %#x, expected %#x", flag, expect);

    /* 1. Revoked while the others wait in MPI_Recv from the revoker. */
    if (rank == 0) {
        usleep(200000);
        CHECK_RC(MPIX_Comm_revoke(a));
        CHECK_REVOKED(MPI_Send(&x, 1, MPI_INT, last, 0, a));
    } else {
        CHECK_REVOKED(MPI_Recv(&x, 1, MPI_INT, 0, 0, a, MPI_STATUS_IGNORE));
    }
    CHECK_RC(MPIX_Comm_is_revoked(a, &flag));
    CHECK(flag == 1, "not revoked after the revocation");
    /* Every later operation fails, communication and construction alike. */
    CHECK_REVOKED(MPI_Barrier(a));
    int sum = -1;
    CHECK_REVOKED(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, a));
    CHECK_REVOKED(MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 0, a, &rq));
    CHECK_REVOKED(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, a, &flag, MPI_STATUS_IGNORE));
    MPI_Comm d;
    CHECK_REVOKED(MPI_Comm_dup(a, &d));
    /* Revoking again is harmless. */
    CHECK_RC(MPIX_Comm_revoke(a));
    /* Agreement still works on it. */
    flag = rank == 0 ? 1 : 3;
    CHECK_RC(MPIX_Comm_agree(a, &flag));
    CHECK(flag == 1, "agree on a revoked communicator gave %d", flag);
    /* Shrink gives a working communicator of everybody. */
    MPI_Comm s;
    CHECK_RC(MPIX_Comm_shrink(a, &s));
    int srank, ssize;
    MPI_Comm_rank(s, &srank);
    MPI_Comm_size(s, &ssize);
    CHECK(srank == rank && ssize == size, "shrunk: rank %d size %d", srank, ssize);
    CHECK_RC(MPIX_Comm_is_revoked(s, &flag));
    CHECK(flag == 0, "shrunk communicator revoked");
    CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, s));
    CHECK(sum == size * (size - 1) / 2, "allreduce on the shrunk communicator: %d", sum);
    CHECK_RC(MPI_Barrier(s));
    CHECK_RC(MPI_Comm_free(&a));
    CHECK(a == MPI_COMM_NULL, "freed handle");

    /* 2. Revoked by the last rank while the others wait in MPI_Barrier,
     * reported through a user error handler. */
    MPI_Comm b = fresh();
    MPI_Errhandler eh;
    CHECK_RC(MPI_Comm_create_errhandler(on_error, &eh));
    CHECK_RC(MPI_Comm_set_errhandler(b, eh));
    CHECK_RC(MPI_Barrier(b));
    if (rank == last) {
        usleep(200000);
        CHECK_RC(MPIX_Comm_revoke(b));
    }
    int rc = MPI_Barrier(b);
    CHECK(error_class(rc) == MPIX_ERR_REVOKED, "barrier: rc %d", rc);
    CHECK(handler_calls == 1 && handler_class == MPIX_ERR_REVOKED, "handler called %d times, class %d", handler_calls,
          handler_class);
    CHECK_RC(MPI_Comm_set_errhandler(b, MPI_ERRORS_RETURN));
    CHECK_RC(MPI_Errhandler_free(&eh));

    /* 3. Nonblocking operations pending when it is revoked. */
    MPI_Comm c = fresh();
    MPI_Request rs[2];
    CHECK_RC(MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 7, c, &rs[0]));
    if (rank == 0) {
        CHECK_RC(MPI_Ibarrier(c, &rs[1]));
        usleep(100000);
        CHECK_RC(MPIX_Comm_revoke(c));
    } else {
        /* Rank 0 never joins this barrier before revoking. */
        CHECK_RC(MPI_Ibarrier(c, &rs[1]));
    }
    if (size > 1 || rank != 0) {
        CHECK_REVOKED(MPI_Wait(&rs[0], MPI_STATUS_IGNORE));
    } else {
        CHECK_REVOKED(MPI_Wait(&rs[0], MPI_STATUS_IGNORE));
    }
    rc = MPI_Wait(&rs[1], MPI_STATUS_IGNORE);
    /* The barrier may have completed before the revocation reached a rank
     * (everybody had joined it); otherwise it ends revoked. */
    CHECK(rc == MPI_SUCCESS || error_class(rc) == MPIX_ERR_REVOKED, "ibarrier: rc %d", rc);

    /* 4. Revoked while the others wait in MPI_Probe and MPI_Mprobe. */
    MPI_Comm e = fresh();
    if (rank == 0) {
        usleep(100000);
        CHECK_RC(MPIX_Comm_revoke(e));
    } else if (rank % 2) {
        CHECK_REVOKED(MPI_Probe(0, 3, e, MPI_STATUS_IGNORE));
    } else {
        MPI_Message m;
        CHECK_REVOKED(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, e, &m, MPI_STATUS_IGNORE));
    }
    CHECK_RC(MPI_Comm_free(&e));

    /* The other communicators are not affected. */
    CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size * (size - 1) / 2, "world allreduce %d", sum);
    MPI_Comm s2;
    CHECK_RC(MPIX_Comm_shrink(c, &s2));
    CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_MAX, s2));
    CHECK(sum == last, "max on the second shrunk communicator %d", sum);
    CHECK_RC(PMPIX_Comm_agree(s2, &flag));
    MPI_Comm_free(&b);
    MPI_Comm_free(&c);
    MPI_Comm_free(&s);
    MPI_Comm_free(&s2);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpix_ulfm OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
