/* Generalized requests (MPI 3.1 section 12.2): MPI_Grequest_start and
 * MPI_Grequest_complete with Wait/Test and their any/all/some forms,
 * Request_get_status, Request_free before and after completion, Cancel,
 * completion from another thread while the main thread waits, callbacks
 * that call MPI (MPI_Status_set_elements) and callbacks that fail. Every
 * callback counts its calls, so each check says how often and in which
 * order MPI called them. Prints "grequest OK". */
#include "check.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


typedef struct {
    int queries, frees, cancels, last_complete;
    int order; /* 1 if every free came after a query */
    int source, elements;
    int query_rc, free_rc;
} State;

static int query(void *extra, MPI_Status *status) {
    State *s = extra;
    s->queries++;
    status->MPI_SOURCE = s->source;
    status->MPI_TAG = 42;
    MPI_Status_set_elements(status, MPI_INT, s->elements);
    MPI_Status_set_cancelled(status, 0);
    return s->query_rc;
}

static int release(void *extra) {
    State *s = extra;
    if (s->queries == 0) s->order = 0;
    s->frees++;
    return s->free_rc;
}

static int cancel(void *extra, int complete) {
    State *s = extra;
    s->cancels++;
    s->last_complete = complete;
    return MPI_SUCCESS;
}

static State fresh(int source, int elements) {
    State s;
    memset(&s, 0, sizeof s);
    s.order = 1;
    s.source = source;
    s.elements = elements;
    return s;
}

static void *complete_later(void *arg) {
    usleep(50000);
    MPI_Grequest_complete(*(MPI_Request *)arg);
    return NULL;
}

int main(int argc, char **argv) {
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    MPI_Request r;
    MPI_Status st;
    int flag, count, rc;

    /* Test before and after completion; the query sets the status. */
    State a = fresh(7, 5);
    rc = MPI_Grequest_start(query, release, cancel, &a, &r);
    CHECK(rc == MPI_SUCCESS && r != MPI_REQUEST_NULL, "start rc %d", rc);
    MPI_Test(&r, &flag, &st);
    CHECK(!flag && a.queries == 0 && a.frees == 0, "not complete: flag %d queries %d frees %d", flag, a.queries, a.frees);
    MPI_Grequest_complete(r);
    st.MPI_ERROR = 12345;
    rc = MPI_Test(&r, &flag, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(rc == MPI_SUCCESS && flag && r == MPI_REQUEST_NULL, "complete: rc %d flag %d", rc, flag);
    CHECK(st.MPI_SOURCE == 7 && st.MPI_TAG == 42 && count == 5, "status source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, count);
    CHECK(st.MPI_ERROR == 12345, "MPI_Test changed the error field: %d", st.MPI_ERROR);
    CHECK(a.queries == 1 && a.frees == 1 && a.order, "queries %d frees %d order %d", a.queries, a.frees, a.order);

    /* Request_get_status queries without freeing; Wait then frees. */
    State b = fresh(3, 2);
    MPI_Grequest_start(query, release, cancel, &b, &r);
    MPI_Request_get_status(r, &flag, &st);
    CHECK(!flag && b.queries == 0, "get_status before completion: flag %d queries %d", flag, b.queries);
    MPI_Grequest_complete(r);
    MPI_Request_get_status(r, &flag, &st);
    CHECK(flag && b.queries == 1 && b.frees == 0 && st.MPI_SOURCE == 3, "get_status: flag %d queries %d frees %d source %d", flag, b.queries, b.frees, st.MPI_SOURCE);
    rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS && r == MPI_REQUEST_NULL && b.queries == 2 && b.frees == 1, "wait: rc %d queries %d frees %d", rc, b.queries, b.frees);

    /* Completed by another thread while this one waits. */
    State c = fresh(1, 1);
    MPI_Grequest_start(query, release, cancel, &c, &r);
    pthread_t t;
    pthread_create(&t, NULL, complete_later, &r);
    MPI_Request copy = r;
    rc = MPI_Wait(&copy, &st);
    pthread_join(t, NULL);
    CHECK(rc == MPI_SUCCESS && c.queries == 1 && c.frees == 1 && st.MPI_SOURCE == 1, "threaded wait: rc %d queries %d frees %d", rc, c.queries, c.frees);

    /* Freed before completion: free_fn runs at Grequest_complete, once, and
     * no query. Freed after: free_fn runs in Request_free. */
    State d = fresh(0, 0);
    MPI_Grequest_start(query, release, cancel, &d, &r);
    MPI_Request keep = r;
    MPI_Request_free(&r);
    CHECK(r == MPI_REQUEST_NULL && d.frees == 0, "freed early: frees %d", d.frees);
    MPI_Grequest_complete(keep);
    CHECK(d.frees == 1 && d.queries == 0, "complete after free: frees %d queries %d", d.frees, d.queries);
    State e = fresh(0, 0);
    MPI_Grequest_start(query, release, cancel, &e, &r);
    MPI_Grequest_complete(r);
    MPI_Request_free(&r);
    CHECK(e.frees == 1 && e.queries == 0, "free after complete: frees %d queries %d", e.frees, e.queries);

    /* Cancel tells the callback whether the request is complete. */
    State f = fresh(0, 0);
    MPI_Grequest_start(query, release, cancel, &f, &r);
    MPI_Cancel(&r);
    CHECK(f.cancels == 1 && f.last_complete == 0, "cancel before: cancels %d complete %d", f.cancels, f.last_complete);
    MPI_Grequest_complete(r);
    MPI_Cancel(&r);
    CHECK(f.cancels == 2 && f.last_complete != 0, "cancel after: cancels %d complete %d", f.cancels, f.last_complete);
    MPI_Wait(&r, &st);
    CHECK(f.frees == 1, "frees %d", f.frees);

    /* Waitall over a receive, a send and two generalized requests, one of
     * whose free_fn fails: MPI_ERR_IN_STATUS, its status has the code. */
    int peer = (rank + 1) % size, from = (rank + size - 1) % size, in = -1, out = rank;
    State g1 = fresh(11, 1), g2 = fresh(12, 2);
    g2.free_rc = MPI_ERR_OTHER;
    MPI_Request rs[4];
    MPI_Status sts[4];
    MPI_Irecv(&in, 1, MPI_INT, from, 5, MPI_COMM_WORLD, &rs[0]);
    MPI_Grequest_start(query, release, cancel, &g1, &rs[1]);
    MPI_Isend(&out, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, &rs[2]);
    MPI_Grequest_start(query, release, cancel, &g2, &rs[3]);
    MPI_Grequest_complete(rs[1]);
    MPI_Grequest_complete(rs[3]);
    rc = MPI_Waitall(4, rs, sts);
    CHECK(rc == MPI_ERR_IN_STATUS, "waitall rc %d", rc);
    CHECK(in == from && sts[0].MPI_SOURCE == from && sts[0].MPI_ERROR == MPI_SUCCESS, "received %d from %d", in, sts[0].MPI_SOURCE);
    CHECK(sts[1].MPI_SOURCE == 11 && sts[1].MPI_ERROR == MPI_SUCCESS, "greq 1 source %d error %d", sts[1].MPI_SOURCE, sts[1].MPI_ERROR);
    CHECK(sts[3].MPI_SOURCE == 12 && error_class(sts[3].MPI_ERROR) == MPI_ERR_OTHER, "greq 2 source %d error %d", sts[3].MPI_SOURCE, sts[3].MPI_ERROR);
    CHECK(g1.frees == 1 && g2.frees == 1 && g1.order && g2.order, "frees %d %d", g1.frees, g2.frees);
    for (int k = 0; k < 4; k++) CHECK(rs[k] == MPI_REQUEST_NULL, "request %d not null", k);

    /* Waitany / Testsome pick the complete ones only. */
    State h1 = fresh(21, 0), h2 = fresh(22, 0);
    MPI_Grequest_start(query, release, cancel, &h1, &rs[0]);
    MPI_Grequest_start(query, release, cancel, &h2, &rs[1]);
    MPI_Grequest_complete(rs[1]);
    int idx = -1, outcount = -1, idxs[2];
    rc = MPI_Waitany(2, rs, &idx, &st);
    CHECK(rc == MPI_SUCCESS && idx == 1 && st.MPI_SOURCE == 22 && h2.frees == 1 && h1.queries == 0, "waitany idx %d source %d", idx, st.MPI_SOURCE);
    rc = MPI_Testsome(2, rs, &outcount, idxs, sts);
    CHECK(rc == MPI_SUCCESS && outcount == 0, "testsome before: outcount %d", outcount);
    MPI_Grequest_complete(rs[0]);
    rc = MPI_Testsome(2, rs, &outcount, idxs, sts);
    CHECK(rc == MPI_SUCCESS && outcount == 1 && idxs[0] == 0 && sts[0].MPI_SOURCE == 21 && h1.frees == 1, "testsome: outcount %d source %d", outcount, sts[0].MPI_SOURCE);

    /* A failing query: MPI_Wait returns its code. */
    State q = fresh(0, 0);
    q.query_rc = MPI_ERR_OTHER;
    MPI_Grequest_start(query, release, cancel, &q, &r);
    MPI_Grequest_complete(r);
    rc = MPI_Wait(&r, &st);
    CHECK(rc == MPI_ERR_OTHER && q.frees == 1, "failing query: rc %d frees %d", rc, q.frees);

    /* NULL callbacks are allowed; bad uses are errors. */
    MPI_Grequest_start(NULL, NULL, NULL, NULL, &r);
    MPI_Grequest_complete(r);
    rc = MPI_Wait(&r, &st);
    CHECK(rc == MPI_SUCCESS && r == MPI_REQUEST_NULL, "null callbacks: rc %d", rc);
    MPI_Irecv(&in, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r);
    rc = MPI_Grequest_complete(r);
    CHECK(error_class(rc) == MPI_ERR_REQUEST, "complete of a receive: rc %d", rc);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    State z = fresh(0, 0);
    MPI_Grequest_start(query, release, cancel, &z, &r);
    MPI_Grequest_complete(r);
    rc = MPI_Grequest_complete(r);
    CHECK(error_class(rc) == MPI_ERR_REQUEST, "second complete: rc %d", rc);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    rc = MPI_Grequest_start(query, release, cancel, &z, NULL);
    CHECK(error_class(rc) == MPI_ERR_ARG, "NULL request: rc %d", rc);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("grequest OK\n");
    MPI_Finalize();
    return 0;
}
