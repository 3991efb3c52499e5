/* The Sessions model (MPI 4.0 chapter 11): sessions, process sets, groups
 * from process sets, communicators and intercommunicators made from
 * groups, session error handlers.
 *
 *   sessions N          a sessions-only program (no MPI_Init) on N ranks
 *   sessions N world    MPI_Init first, a session alongside, MPI_Finalize
 *                       while the session is still open, then the session
 *                       goes on and ends the runtime
 *
 * Rank 0 prints "sessions OK on N ranks" (plus " (world)"). Also: threads
 * of a session at MPI_THREAD_MULTIPLE create communicators from one group
 * with different string tags at the same time. */
#include "check.h"
#include <pthread.h>

static int session_errors = 0;
static MPI_Session last_session = MPI_SESSION_NULL;
static int last_code = MPI_SUCCESS;

static void on_session_error(MPI_Session *s, int *code, ...) {
    session_errors++;
    last_session = *s;
    last_code = *code;
}

static int nprocs; /* expected number of processes (argv[1]) */

/* The value of `key` in `info` (must be there). */
static void info_value(MPI_Info info, const char *key, char *value, int cap) {
    int flag = 0, len = cap;
    CHECK_RC(MPI_Info_get_string(info, key, &len, value, &flag));
    CHECK(flag, "info key %s missing", key);
}

/* Process set names, their lengths, their info; groups from them. */
static void check_psets(MPI_Session s, int *wrank) {
    int n = -1;
    CHECK_RC(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n));
    CHECK(n == 2, "%d process sets", n);
    int seen_world = 0, seen_self = 0;
    for (int i = 0; i < n; i++) {
        char name[MPI_MAX_PSET_NAME_LEN];
        int len = 0;
        CHECK_RC(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, NULL));
        CHECK(len > 1 && len <= MPI_MAX_PSET_NAME_LEN, "length %d of pset %d", len, i);
        int cap = sizeof name;
        CHECK_RC(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &cap, name));
        CHECK((int)strlen(name) + 1 == len, "pset %d: '%s' but length %d", i, name, len);
        CHECK(cap == sizeof name, "a non-zero pset_len became %d", cap);
        seen_world += !strcmp(name, "mpi://WORLD");
        seen_self += !strcmp(name, "mpi://SELF");
        /* A short buffer gets a truncated, terminated name. */
        char small[5];
        cap = sizeof small;
        CHECK_RC(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &cap, small));
        CHECK(strlen(small) == 4 && !strncmp(small, name, 4), "truncated name '%s'", small);
    }
    CHECK(seen_world == 1 && seen_self == 1, "world %d self %d", seen_world, seen_self);

    MPI_Info info;
    char v[64];
    CHECK_RC(MPI_Session_get_pset_info(s, "mpi://WORLD", &info));
    info_value(info, "mpi_size", v, sizeof v);
    CHECK(atoi(v) == nprocs, "mpi_size of mpi://WORLD is %s, expected %d", v, nprocs);
    MPI_Info_free(&info);
    CHECK_RC(MPI_Session_get_pset_info(s, "mpi://SELF", &info));
    info_value(info, "mpi_size", v, sizeof v);
    CHECK(atoi(v) == 1, "mpi_size of mpi://SELF is %s", v);
    MPI_Info_free(&info);

    MPI_Group g;
    int size, rank;
    CHECK_RC(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    MPI_Group_size(g, &size);
    MPI_Group_rank(g, &rank);
    CHECK(size == nprocs && rank >= 0 && rank < size, "world group size %d rank %d", size, rank);
    *wrank = rank;
    MPI_Group_free(&g);
    CHECK_RC(MPI_Group_from_session_pset(s, "mpi://SELF", &g));
    MPI_Group_size(g, &size);
    MPI_Group_rank(g, &rank);
    CHECK(size == 1 && rank == 0, "self group size %d rank %d", size, rank);
    MPI_Group_free(&g);
}

/* A communicator of mpi://WORLD from session `s` with string tag `tag`;
 * its size, rank, error handler; an Allreduce and a Bcast on it. */
static MPI_Comm world_comm(MPI_Session s, const char *tag, int wrank) {
    MPI_Group g;
    MPI_Comm c;
    CHECK_RC(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    CHECK_RC(MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    MPI_Group_free(&g);
    int size, rank, sum = -1;
    MPI_Comm_size(c, &size);
    MPI_Comm_rank(c, &rank);
    CHECK(size == nprocs && rank == wrank, "%s: size %d rank %d", tag, size, rank);
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(c, &eh);
    CHECK(eh == MPI_ERRORS_RETURN, "%s: error handler %x", tag, (unsigned)eh);
    CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == size * (size - 1) / 2, "%s: allreduce %d", tag, sum);
    int v = rank == size - 1 ? 4242 : -1;
    CHECK_RC(MPI_Bcast(&v, 1, MPI_INT, size - 1, c));
    CHECK(v == 4242, "%s: bcast %d", tag, v);
    return c;
}

/* Even and odd ranks of mpi://WORLD joined by an intercommunicator made
 * from the two groups; a message exchange, a collective, a merge. */
static void evens_and_odds(MPI_Session s, int wrank) {
    if (nprocs < 2) return;
    MPI_Group world, evens, odds;
    CHECK_RC(MPI_Group_from_session_pset(s, "mpi://WORLD", &world));
    int range[1][3] = {{0, nprocs - 1, 2}};
    MPI_Group_range_incl(world, 1, range, &evens);
    MPI_Group_range_excl(world, 1, range, &odds);
    int color = wrank % 2, me = wrank / 2;
    int ne = (nprocs + 1) / 2, no = nprocs / 2;
    MPI_Comm inter;
    CHECK_RC(MPI_Intercomm_create_from_groups(color ? odds : evens, 0, color ? evens : odds, 0,
                                              "org.test.sessions.evens-odds", MPI_INFO_NULL,
                                              MPI_ERRORS_RETURN, &inter));
    int flag, n, r;
    MPI_Comm_test_inter(inter, &flag);
    CHECK(flag, "not an intercommunicator");
    MPI_Comm_size(inter, &n);
    MPI_Comm_rank(inter, &r);
    CHECK(n == (color ? no : ne) && r == me, "inter size %d rank %d", n, r);
    MPI_Comm_remote_size(inter, &n);
    CHECK(n == (color ? ne : no), "remote size %d", n);

    /* Local rank i and remote rank i swap their world ranks. */
    int nremote = color ? ne : no;
    if (me < nremote) {
        int out = 1000 + wrank, in = -1;
        CHECK_RC(MPI_Sendrecv(&out, 1, MPI_INT, me, 7, &in, 1, MPI_INT, me, 7, inter, MPI_STATUS_IGNORE));
        CHECK(in == 1000 + (color ? wrank - 1 : wrank + 1), "got %d from remote rank %d", in, me);
    }
    /* Allreduce on an intercommunicator: the sum of the other side's values. */
    int sum = -1, expect = 0;
    CHECK_RC(MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, inter));
    for (int w = 1 - color; w < nprocs; w += 2) expect += w;
    CHECK(sum == expect, "inter allreduce %d, expected %d", sum, expect);

    MPI_Comm merged;
    CHECK_RC(MPI_Intercomm_merge(inter, color, &merged));
    MPI_Comm_size(merged, &n);
    MPI_Comm_rank(merged, &r);
    CHECK(n == nprocs && r == (color ? ne + me : me), "merged size %d rank %d", n, r);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Group_free(&evens);
    MPI_Group_free(&odds);
    MPI_Group_free(&world);
}

/* Wrong session handles, unknown process sets, the session's own handler. */
static void errors(MPI_Session s) {
    int n, rc;
    /* No valid session: raised on MPI_COMM_SELF (MPI 4.0 section 9.3). */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    rc = MPI_Session_get_num_psets(MPI_SESSION_NULL, MPI_INFO_NULL, &n);
    CHECK(error_class(rc) == MPI_ERR_SESSION, "MPI_SESSION_NULL gave %d", rc);
    rc = MPI_Session_get_num_psets((MPI_Session)0x12345, MPI_INFO_NULL, &n);
    CHECK(error_class(rc) == MPI_ERR_SESSION, "a bogus session gave %d", rc);
    rc = MPI_Session_get_num_psets(MPI_COMM_WORLD, MPI_INFO_NULL, &n);
    CHECK(error_class(rc) == MPI_ERR_SESSION, "a communicator as a session gave %d", rc);

    /* The session's handler: MPI_ERRORS_RETURN from MPI_Session_init. */
    MPI_Group g = MPI_GROUP_NULL;
    MPI_Info info;
    rc = MPI_Group_from_session_pset(s, "mpi://nowhere", &g);
    CHECK(error_class(rc) == MPI_ERR_ARG && g == MPI_GROUP_NULL, "unknown pset gave %d", rc);
    /* Names are URIs, case-insensitive (as MPICH). */
    CHECK_RC(MPI_Group_from_session_pset(s, "mpi://world", &g));
    CHECK_RC(MPI_Group_free(&g));
    rc = MPI_Session_get_pset_info(s, "mpi://nowhere", &info);
    CHECK(error_class(rc) == MPI_ERR_ARG, "pset info of an unknown pset gave %d", rc);
    int len = 0;
    rc = MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 2, &len, NULL);
    CHECK(error_class(rc) == MPI_ERR_ARG, "pset number 2 gave %d", rc);
    rc = MPI_Session_get_nth_pset(s, MPI_INFO_NULL, -1, &len, NULL);
    CHECK(error_class(rc) == MPI_ERR_ARG, "pset number -1 gave %d", rc);

    /* The constructors from groups report through the handler they are
     * given (checked locally, before any communication). */
    MPI_Comm c = MPI_COMM_NULL;
    rc = MPI_Comm_create_from_group(MPI_GROUP_NULL, "org.test.sessions.bad", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
    CHECK(error_class(rc) == MPI_ERR_GROUP && c == MPI_COMM_NULL, "MPI_GROUP_NULL gave %d", rc);
    char long_tag[MPI_MAX_STRINGTAG_LEN + 8];
    memset(long_tag, 'x', sizeof long_tag - 1);
    long_tag[sizeof long_tag - 1] = 0;
    MPI_Group world;
    CHECK_RC(MPI_Group_from_session_pset(s, "mpi://WORLD", &world));
    rc = MPI_Comm_create_from_group(world, long_tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
    CHECK(error_class(rc) == MPI_ERR_ARG, "a string tag too long gave %d", rc);
    rc = MPI_Intercomm_create_from_groups(world, 0, world, 0, "org.test.sessions.overlap", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
    CHECK(error_class(rc) == MPI_ERR_GROUP, "overlapping groups gave %d", rc);
    rc = MPI_Intercomm_create_from_groups(world, -1, MPI_GROUP_EMPTY, 0, "org.test.sessions.leader", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
    CHECK(error_class(rc) == MPI_ERR_RANK, "local_leader -1 gave %d", rc);
    MPI_Group_free(&world);

    /* A user handler on the session: called with the session and the code. */
    MPI_Errhandler eh, got, comm_eh;
    CHECK_RC(MPI_Session_create_errhandler(on_session_error, &eh));
    CHECK_RC(MPI_Session_set_errhandler(s, eh));
    CHECK_RC(MPI_Session_get_errhandler(s, &got));
    CHECK(got == eh, "get_errhandler %x, set %x", (unsigned)got, (unsigned)eh);
    rc = MPI_Group_from_session_pset(s, "mpi://nowhere", &g);
    CHECK(error_class(rc) == MPI_ERR_ARG && session_errors == 1 && last_session == s && last_code == rc,
          "user handler: rc %d, %d calls, session %x, code %d", rc, session_errors, (unsigned)last_session, last_code);
    CHECK_RC(MPI_Session_call_errhandler(s, MPI_ERR_OTHER));
    CHECK(session_errors == 2 && last_code == MPI_ERR_OTHER, "call_errhandler: %d calls, code %d", session_errors, last_code);
    /* A communicator's handler is not a session's. */
    CHECK_RC(MPI_Comm_create_errhandler((MPI_Comm_errhandler_function *)on_session_error, &comm_eh));
    rc = MPI_Session_set_errhandler(s, comm_eh);
    CHECK(error_class(rc) == MPI_ERR_ARG && session_errors == 3, "comm handler on a session gave %d", rc);
    CHECK_RC(MPI_Session_set_errhandler(s, MPI_ERRORS_RETURN));
    MPI_Errhandler_free(&eh);
    MPI_Errhandler_free(&comm_eh);
}

/* Threads that each create (and use, and free) communicators of
 * mpi://WORLD with a string tag of their own, all at once. */
#define NTHREADS 3
#define ROUNDS 8
struct job {
    MPI_Group world;
    int id, wrank;
};

static void *creator(void *arg) {
    struct job *j = arg;
    char tag[64];
    snprintf(tag, sizeof tag, "org.test.sessions.thread-%d", j->id);
    for (int it = 0; it < ROUNDS; it++) {
        MPI_Comm c;
        CHECK_RC(MPI_Comm_create_from_group(j->world, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
        int v = 100 * j->wrank + j->id, sum = -1;
        CHECK_RC(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c));
        CHECK(sum == 100 * nprocs * (nprocs - 1) / 2 + nprocs * j->id, "thread %d round %d: sum %d", j->id, it, sum);
        CHECK_RC(MPI_Comm_free(&c));
    }
    return NULL;
}

static void threads(int wrank) {
    MPI_Info info;
    MPI_Session s;
    MPI_Info_create(&info);
    MPI_Info_set(info, "thread_level", "MPI_THREAD_MULTIPLE");
    CHECK_RC(MPI_Session_init(info, MPI_ERRORS_RETURN, &s));
    MPI_Info_free(&info);
    int provided;
    CHECK_RC(MPI_Query_thread(&provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "thread level %d", provided);
    struct job jobs[NTHREADS];
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        jobs[t].id = t;
        jobs[t].wrank = wrank;
        CHECK_RC(MPI_Group_from_session_pset(s, "mpi://WORLD", &jobs[t].world));
        pthread_create(&th[t], NULL, creator, &jobs[t]);
    }
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        MPI_Group_free(&jobs[t].world);
    }
    CHECK_RC(MPI_Session_finalize(&s));
}

int main(int argc, char **argv) {
    nprocs = argc > 1 ? atoi(argv[1]) : 1;
    int world = argc > 2 && !strcmp(argv[2], "world");
    int flag = -1, wrank = -1, rank;
    if (world) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    }
    MPI_Initialized(&flag);
    CHECK(flag == world, "MPI_Initialized %d before the session", flag);

    MPI_Session s1, s2;
    CHECK_RC(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s1));
    CHECK(s1 != MPI_SESSION_NULL, "no session");
    MPI_Initialized(&flag);
    CHECK(flag == world, "MPI_Initialized %d with a session open", flag);
    MPI_Finalized(&flag);
    CHECK(flag == 0, "MPI_Finalized %d with a session open", flag);
    MPI_Errhandler eh;
    CHECK_RC(MPI_Session_get_errhandler(s1, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "session handler %x", (unsigned)eh);

    check_psets(s1, &wrank);
    if (world) CHECK(wrank == rank, "rank %d in mpi://WORLD, %d in MPI_COMM_WORLD", wrank, rank);
    MPI_Comm c1 = world_comm(s1, "org.test.sessions.a", wrank);
    if (world) {
        int res;
        MPI_Comm_compare(c1, MPI_COMM_WORLD, &res);
        CHECK(res == MPI_CONGRUENT, "compare with MPI_COMM_WORLD: %d", res);
    }

    /* A second session, asking for another thread level. */
    MPI_Info info;
    char v[64];
    MPI_Info_create(&info);
    MPI_Info_set(info, "thread_level", "MPI_THREAD_FUNNELED");
    MPI_Info_set(info, "org.test.key", "x");
    CHECK_RC(MPI_Session_init(info, MPI_ERRORS_RETURN, &s2));
    MPI_Info_free(&info);
    CHECK(s2 != s1, "two sessions with one handle");
    CHECK_RC(MPI_Session_get_info(s2, &info));
    info_value(info, "thread_level", v, sizeof v);
    CHECK(!strcmp(v, "MPI_THREAD_FUNNELED"), "session 2 thread_level %s", v);
    info_value(info, "org.test.key", v, sizeof v);
    CHECK(!strcmp(v, "x"), "session 2 org.test.key %s", v);
    MPI_Info_free(&info);
    CHECK_RC(MPI_Session_get_info(s1, &info));
    info_value(info, "thread_level", v, sizeof v);
    CHECK(!strcmp(v, "MPI_THREAD_SINGLE"), "session 1 thread_level %s", v);
    MPI_Info_free(&info);

    MPI_Comm c2 = world_comm(s2, "org.test.sessions.b", wrank);
    int res;
    MPI_Comm_compare(c1, c2, &res);
    CHECK(res == MPI_CONGRUENT, "compare c1 c2: %d", res);
    /* The two communicators do not mix: the same tag on both, received
     * in the opposite order. */
    int size = nprocs, to = (wrank + 1) % size, from = (wrank + size - 1) % size;
    int a = 10 + wrank, b = 20 + wrank, ga = -1, gb = -1;
    MPI_Request rq[4];
    MPI_Irecv(&gb, 1, MPI_INT, from, 5, c2, &rq[0]);
    MPI_Irecv(&ga, 1, MPI_INT, from, 5, c1, &rq[1]);
    MPI_Isend(&a, 1, MPI_INT, to, 5, c1, &rq[2]);
    MPI_Isend(&b, 1, MPI_INT, to, 5, c2, &rq[3]);
    CHECK_RC(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
    CHECK(ga == 10 + from && gb == 20 + from, "c1 got %d, c2 got %d", ga, gb);

    /* A communicator of mpi://SELF. */
    MPI_Group g;
    MPI_Comm cs;
    CHECK_RC(MPI_Group_from_session_pset(s2, "mpi://SELF", &g));
    CHECK_RC(MPI_Comm_create_from_group(g, "org.test.sessions.self", MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &cs));
    MPI_Group_free(&g);
    MPI_Comm_size(cs, &size);
    CHECK(size == 1, "self communicator size %d", size);
    CHECK_RC(MPI_Barrier(cs));
    MPI_Comm_free(&cs);

    evens_and_odds(s2, wrank);
    errors(s2);
    threads(wrank);

    if (world) {
        /* The world model ends; the session goes on. */
        MPI_Finalize();
        MPI_Initialized(&flag);
        CHECK(flag == 1, "MPI_Initialized %d after MPI_Finalize", flag);
        MPI_Finalized(&flag);
        CHECK(flag == 1, "MPI_Finalized %d after MPI_Finalize", flag);
        int sum = -1;
        CHECK_RC(MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, c2));
        CHECK(sum == nprocs * (nprocs - 1) / 2, "allreduce after MPI_Finalize: %d", sum);
    }

    MPI_Comm_free(&c1);
    MPI_Comm_free(&c2);
    MPI_Session old = s2;
    CHECK_RC(MPI_Session_finalize(&s2));
    CHECK(s2 == MPI_SESSION_NULL, "finalize left the handle %x", (unsigned)s2);
    int n, rc = MPI_Session_get_num_psets(old, MPI_INFO_NULL, &n);
    CHECK(error_class(rc) == MPI_ERR_SESSION, "a finalized session gave %d", rc);
    rc = MPI_Session_finalize(&s2);
    CHECK(error_class(rc) == MPI_ERR_SESSION, "finalizing MPI_SESSION_NULL gave %d", rc);
    CHECK_RC(MPI_Session_get_num_psets(s1, MPI_INFO_NULL, &n));
    CHECK_RC(MPI_Session_finalize(&s1));

    /* Everything is over: the runtime cannot start again. */
    MPI_Initialized(&flag);
    CHECK(flag == world, "MPI_Initialized %d at the end", flag);
    MPI_Finalized(&flag);
    CHECK(flag == world, "MPI_Finalized %d at the end", flag);
    MPI_Session s3 = MPI_SESSION_NULL;
    rc = MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s3);
    CHECK(rc == MPI_ERR_OTHER && s3 == MPI_SESSION_NULL, "MPI_Session_init after the end gave %d", rc);

    if (wrank == 0) printf("sessions OK on %d ranks%s\n", nprocs, world ? " (world)" : "");
    return 0;
}
