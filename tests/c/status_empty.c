/* Completing only null or inactive requests gives an empty status: source
 * MPI_ANY_SOURCE, tag MPI_ANY_TAG, error MPI_SUCCESS, count 0, not
 * cancelled (MPI 3.1 3.7.3), also from the single-completion calls that
 * otherwise leave MPI_ERROR as the program set it (status_error_field.c):
 * Wait, Test, Waitany, Testany and Request_get_status, on MPI_REQUEST_NULL
 * and on an inactive persistent receive (MPICH suite: pt2pt/rqstatus).
 * Then the persistent receive, started, still gives the message's status
 * with MPI_ERROR untouched. Any number of ranks (each talks to itself). */
#include "check.h"

static void check_empty(const MPI_Status *s, const char *what) {
    int count = -1, cancelled = -1;
    MPI_Get_count(s, MPI_INT, &count);
    MPI_Test_cancelled(s, &cancelled);
    CHECK(s->MPI_SOURCE == MPI_ANY_SOURCE && s->MPI_TAG == MPI_ANY_TAG && s->MPI_ERROR == MPI_SUCCESS,
          "%s: source %d tag %d error %d, not an empty status", what, s->MPI_SOURCE, s->MPI_TAG, s->MPI_ERROR);
    CHECK(count == 0 && !cancelled, "%s: count %d cancelled %d", what, count, cancelled);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, x = 0, flag, idx;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Request inactive, reqs[2];
    CHECK_RC(MPI_Recv_init(&x, 1, MPI_INT, rank, 5, MPI_COMM_WORLD, &inactive));
    MPI_Request handles[2] = {MPI_REQUEST_NULL, inactive};
    const char *names[2] = {"MPI_REQUEST_NULL", "an inactive request"};
    MPI_Status s;
    for (int k = 0; k < 2; k++) {
        char what[80];
        MPI_Request r = handles[k];
        s = marked_status();
        CHECK_RC(MPI_Wait(&r, &s));
        snprintf(what, sizeof what, "MPI_Wait on %s", names[k]);
        check_empty(&s, what);
        CHECK(r == handles[k], "%s changed the handle", what);
        s = marked_status();
        flag = 0;
        CHECK_RC(MPI_Test(&r, &flag, &s));
        snprintf(what, sizeof what, "MPI_Test on %s", names[k]);
        CHECK(flag, "%s: flag false", what);
        check_empty(&s, what);
        s = marked_status();
        flag = 0;
        CHECK_RC(MPI_Request_get_status(r, &flag, &s));
        snprintf(what, sizeof what, "MPI_Request_get_status on %s", names[k]);
        CHECK(flag, "%s: flag false", what);
        check_empty(&s, what);
        reqs[0] = MPI_REQUEST_NULL;
        reqs[1] = r;
        s = marked_status();
        CHECK_RC(MPI_Waitany(2, reqs, &idx, &s));
        snprintf(what, sizeof what, "MPI_Waitany on null and %s", names[k]);
        CHECK(idx == MPI_UNDEFINED, "%s: index %d", what, idx);
        check_empty(&s, what);
        s = marked_status();
        flag = 0;
        CHECK_RC(MPI_Testany(2, reqs, &idx, &flag, &s));
        snprintf(what, sizeof what, "MPI_Testany on null and %s", names[k]);
        CHECK(flag && idx == MPI_UNDEFINED, "%s: flag %d index %d", what, flag, idx);
        check_empty(&s, what);
    }
    /* No request at all: the same. */
    s = marked_status();
    CHECK_RC(MPI_Waitany(0, NULL, &idx, &s));
    check_empty(&s, "MPI_Waitany of no requests");

    /* Active: the message's status, MPI_ERROR as the program left it. */
    int v = 40 + rank;
    CHECK_RC(MPI_Start(&inactive));
    CHECK_RC(MPI_Send(&v, 1, MPI_INT, rank, 5, MPI_COMM_WORLD));
    s = marked_status();
    CHECK_RC(MPI_Wait(&inactive, &s));
    CHECK(x == v && s.MPI_SOURCE == rank && s.MPI_TAG == 5, "got %d from %d tag %d", x, s.MPI_SOURCE, s.MPI_TAG);
    CHECK(s.MPI_ERROR == STATUS_MARK, "MPI_Wait on an active request changed MPI_ERROR to %d", s.MPI_ERROR);
    /* Inactive again once completed. */
    s = marked_status();
    CHECK_RC(MPI_Wait(&inactive, &s));
    check_empty(&s, "MPI_Wait on the completed persistent request");
    MPI_Request_free(&inactive);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("status_empty OK\n");
    MPI_Finalize();
    return 0;
}
