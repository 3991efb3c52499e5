/* MPICH's extended generalized requests: MPIX_Grequest_start with a
 * poll_fn (the library calls it until it completes the request), with a
 * wait_fn (MPI_Wait calls it), and requests of a class
 * (MPIX_Grequest_class_create / _allocate); Test, Wait, Waitall, Waitany,
 * Testall, together with a real receive; query and free run once each. */
#include "check.h"

typedef struct {
    MPI_Request req;
    int polls;      /* poll_fn calls */
    int complete_after;
    int waits;      /* wait_fn calls */
    int queried, freed;
    int value;
} state_t;

static int query_fn(void *extra, MPI_Status *status) {
    state_t *s = extra;
    s->queried++;
    MPI_Status_set_elements(status, MPI_INT, s->value);
    MPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

static int free_fn(void *extra) {
    ((state_t *)extra)->freed++;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete) {
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

static int poll_fn(void *extra, MPI_Status *status) {
    (void)status;
    state_t *s = extra;
    s->polls++;
    if (s->polls == s->complete_after) CHECK_RC(MPI_Grequest_complete(s->req));
    return MPI_SUCCESS;
}

static int wait_fn(int count, void **states, double timeout, MPI_Status *status) {
    (void)timeout;
    (void)status;
    for (int i = 0; i < count; i++) {
        state_t *s = states[i];
        s->waits++;
        CHECK_RC(MPI_Grequest_complete(s->req));
    }
    return MPI_SUCCESS;
}

static int failing_poll(void *extra, MPI_Status *status) {
    (void)extra;
    (void)status;
    return MPI_ERR_OTHER;
}

static void fresh(state_t *s, int after, int value) {
    memset(s, 0, sizeof *s);
    s->complete_after = after;
    s->value = value;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Status st;
    int count, flag;

    /* Poll: MPI_Wait polls until poll_fn completes it (5th call). */
    state_t a;
    fresh(&a, 5, 3);
    CHECK_RC(MPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, NULL, &a, &a.req));
    MPI_Request r = a.req;
    CHECK_RC(MPI_Wait(&r, &st));
    CHECK(r == MPI_REQUEST_NULL, "request not freed");
    CHECK(a.polls == 5, "polled %d times", a.polls);
    CHECK(a.queried == 1 && a.freed == 1, "query %d free %d", a.queried, a.freed);
    CHECK_RC(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 3, "count %d", count);

    /* Poll by MPI_Test: one poll per call, no completion before the 3rd. */
    fresh(&a, 3, 1);
    CHECK_RC(MPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, NULL, &a, &a.req));
    r = a.req;
    int tests = 0;
    do {
        CHECK_RC(MPI_Test(&r, &flag, &st));
        tests++;
        CHECK(tests <= 3, "not complete after %d tests", tests);
    } while (!flag);
    CHECK(tests == 3 && a.polls == 3, "tests %d polls %d", tests, a.polls);
    CHECK(a.queried == 1 && a.freed == 1, "query %d free %d", a.queried, a.freed);

    /* Wait function: MPI_Wait calls it once, it completes the request. */
    fresh(&a, 1000, 2);
    CHECK_RC(MPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, &a, &a.req));
    r = a.req;
    CHECK_RC(MPI_Wait(&r, &st));
    CHECK(a.waits == 1, "wait_fn called %d times", a.waits);
    CHECK(a.polls < 1000, "completed by polls");
    CHECK(a.queried == 1 && a.freed == 1, "query %d free %d", a.queried, a.freed);

    /* A class: two requests of it, with a real receive, in Waitall. */
    MPIX_Grequest_class cls;
    CHECK_RC(MPIX_Grequest_class_create(query_fn, free_fn, cancel_fn, poll_fn, NULL, &cls));
    state_t b, c;
    fresh(&b, 2, 4);
    fresh(&c, 7, 5);
    CHECK_RC(MPIX_Grequest_class_allocate(cls, &b, &b.req));
    CHECK_RC(MPIX_Grequest_class_allocate(cls, &c, &c.req));
    int token = rank, got = -1;
    MPI_Request rs[3] = {b.req, MPI_REQUEST_NULL, c.req};
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    CHECK_RC(MPI_Irecv(&got, 1, MPI_INT, left, 9, MPI_COMM_WORLD, &rs[1]));
    CHECK_RC(MPI_Send(&token, 1, MPI_INT, right, 9, MPI_COMM_WORLD));
    MPI_Status sts[3];
    CHECK_RC(MPI_Waitall(3, rs, sts));
    CHECK(got == left, "received %d", got);
    CHECK(b.polls == 2 && c.polls == 7, "polls %d %d", b.polls, c.polls);
    CHECK(b.freed == 1 && c.freed == 1, "frees %d %d", b.freed, c.freed);
    CHECK_RC(MPI_Get_count(&sts[0], MPI_INT, &count));
    CHECK(count == 4, "count of the first %d", count);
    CHECK_RC(MPI_Get_count(&sts[2], MPI_INT, &count));
    CHECK(count == 5, "count of the third %d", count);

    /* Waitany: the one whose poll completes it first. */
    fresh(&b, 50, 1);
    fresh(&c, 2, 2);
    CHECK_RC(MPIX_Grequest_class_allocate(cls, &b, &b.req));
    CHECK_RC(MPIX_Grequest_class_allocate(cls, &c, &c.req));
    MPI_Request two[2] = {b.req, c.req};
    int idx = -1;
    CHECK_RC(MPI_Waitany(2, two, &idx, &st));
    CHECK(idx == 1, "waitany index %d", idx);
    CHECK(c.freed == 1 && b.freed == 0, "frees %d %d", b.freed, c.freed);
    CHECK_RC(MPI_Wait(&two[0], &st));
    CHECK(b.polls == 50 && b.freed == 1, "second: polls %d frees %d", b.polls, b.freed);

    /* A class handle that is none. */
    int rc = MPIX_Grequest_class_allocate(12345, &b, &r);
    CHECK(error_class(rc) == MPI_ERR_ARG, "bad class: rc %d", rc);

    /* A poll function's error is the call's. */
    fresh(&a, 0, 0);
    CHECK_RC(MPIX_Grequest_start(query_fn, free_fn, cancel_fn, failing_poll, NULL, &a, &a.req));
    r = a.req;
    rc = MPI_Test(&r, &flag, &st);
    CHECK(error_class(rc) == MPI_ERR_OTHER, "poll error: rc %d", rc);
    CHECK_RC(MPI_Grequest_complete(a.req));
    CHECK_RC(MPI_Wait(&r, &st));
    CHECK(a.freed == 1, "freed %d", a.freed);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpix_greq OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
