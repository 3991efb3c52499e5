/* MPI_THREAD_MULTIPLE: four threads per rank create communicators at the
 * same time, each from a parent of its own (dup, split with reversed keys,
 * create, create_group with two tags, Cart_create, and the dup of an
 * intercommunicator), and use each new communicator at once: a ring
 * exchange with the same tag in every thread (a context id shared by two
 * live communicators of one process would deliver one thread's message to
 * another: the values name the thread, the iteration and the kind) and an
 * allreduce. Context ids of all the communicators alive at the end are
 * checked distinct through their isolation as well. Then an agreement whose
 * member is held up (waiting for a message another agreement's thread sends
 * once its communicator exists) must not keep that other agreement from
 * finishing. argv[1]: iterations. */
#include "check.h"
#include <pthread.h>

#define NT 4
static int rank, size, iters = 40;
static MPI_Comm parent[NT];

/* Ring exchange and allreduce on c (rank r of n), identified by (t, it, kind). */
static void use(MPI_Comm c, int t, int it, int kind) {
    int r, n;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &n);
    int next = (r + 1) % n, prev = (r + n - 1) % n;
    int out[3] = {t, it, kind * 1000 + r}, in[3] = {-1, -1, -1};
    CHECK_RC(MPI_Sendrecv(out, 3, MPI_INT, next, 0, in, 3, MPI_INT, prev, 0, c, MPI_STATUS_IGNORE));
    CHECK(in[0] == t && in[1] == it && in[2] == kind * 1000 + prev,
          "thread %d iteration %d kind %d: got (%d, %d, %d) from rank %d", t, it, kind, in[0], in[1], in[2], prev);
    int v = r + 1 + t, sum = 0;
    CHECK_RC(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == n * (n + 1) / 2 + n * t, "thread %d kind %d: allreduce %d", t, kind, sum);
}

static void *worker(void *arg) {
    int t = (int)(long)arg;
    MPI_Comm p = parent[t];
    int pr, pn;
    MPI_Comm_rank(p, &pr);
    MPI_Comm_size(p, &pn);
    MPI_Group pg;
    MPI_Comm_group(p, &pg);
    /* The even ranks of the parent. */
    int ne = (pn + 1) / 2, ranges[1][3] = {{0, pn - 1, 2}};
    MPI_Group evens;
    MPI_Group_range_incl(pg, 1, ranges, &evens);
    for (int it = 0; it < iters; it++) {
        MPI_Comm c;
        CHECK_RC(MPI_Comm_dup(p, &c));
        use(c, t, it, 1);

        MPI_Comm s;
        CHECK_RC(MPI_Comm_split(p, (pr + it) % 2, pn - pr, &s));
        int sr;
        MPI_Comm_rank(s, &sr);
        use(s, t, it, 2);

        MPI_Comm e;
        CHECK_RC(MPI_Comm_create(p, evens, &e));
        CHECK((pr % 2 == 0) == (e != MPI_COMM_NULL), "create: rank %d got %s", pr, e == MPI_COMM_NULL ? "null" : "a comm");
        if (e != MPI_COMM_NULL) use(e, t, it, 3);

        MPI_Comm g1 = MPI_COMM_NULL, g2 = MPI_COMM_NULL;
        if (pr % 2 == 0) {
            CHECK_RC(MPI_Comm_create_group(p, evens, 7, &g1));
            CHECK_RC(MPI_Comm_create_group(p, evens, 8, &g2));
            int gn;
            MPI_Comm_size(g1, &gn);
            CHECK(gn == ne, "create_group size %d", gn);
            use(g1, t, it, 4);
            use(g2, t, it, 5);
        }

        int dims[1] = {0}, periods[1] = {1};
        MPI_Dims_create(pn, 1, dims);
        MPI_Comm cart;
        CHECK_RC(MPI_Cart_create(p, 1, dims, periods, 1, &cart));
        use(cart, t, it, 6);

        /* Everything is alive at once here: each must still be isolated. */
        use(c, t, it, 7);
        use(s, t, it, 8);
        MPI_Comm_free(&c);
        MPI_Comm_free(&s);
        MPI_Comm_free(&cart);
        if (e != MPI_COMM_NULL) MPI_Comm_free(&e);
        if (g1 != MPI_COMM_NULL) {
            use(g1, t, it, 9);
            MPI_Comm_free(&g1);
            MPI_Comm_free(&g2);
        }
    }
    MPI_Group_free(&evens);
    MPI_Group_free(&pg);
    return NULL;
}

/* Two groups (even and odd world ranks) joined by an intercommunicator per
 * thread; each thread dups its intercommunicator and exchanges across. */
static MPI_Comm inter[NT];
static void *inter_worker(void *arg) {
    int t = (int)(long)arg;
    int lr, rn;
    MPI_Comm_rank(inter[t], &lr);
    MPI_Comm_remote_size(inter[t], &rn);
    for (int it = 0; it < iters; it++) {
        MPI_Comm d;
        CHECK_RC(MPI_Comm_dup(inter[t], &d));
        if (lr < rn) {
            int out[2] = {t, it}, in[2] = {-1, -1};
            CHECK_RC(MPI_Sendrecv(out, 2, MPI_INT, lr, 0, in, 2, MPI_INT, lr, 0, d, MPI_STATUS_IGNORE));
            CHECK(in[0] == t && in[1] == it, "intercomm dup: thread %d iteration %d got (%d, %d)", t, it, in[0], in[1]);
        }
        MPI_Comm_free(&d);
    }
    return NULL;
}

/* Ranks 0 and 1: on rank 1 thread 0 first waits for a message that thread 1
 * of rank 0 sends after its dup; thread 0 of rank 0 starts its dup (of the
 * parent with the smaller context id) at once and must wait without
 * blocking thread 1's dup. */
static MPI_Comm held[2];
static void *held_worker(void *arg) {
    int t = (int)(long)arg;
    for (int it = 0; it < iters; it++) {
        int v = -1;
        if (t == 0 && rank == 1) CHECK_RC(MPI_Recv(&v, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_Comm d;
        CHECK_RC(MPI_Comm_dup(held[t], &d));
        if (t == 1 && rank == 0) CHECK_RC(MPI_Send(&it, 1, MPI_INT, 1, 99, MPI_COMM_WORLD));
        if (t == 0 && rank == 1) CHECK(v == it, "held-up member: got %d in iteration %d", v, it);
        use(d, t, it, 10);
        MPI_Comm_free(&d);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1) iters = atoi(argv[1]);
    /* Parents: dups of the world, and for odd threads a communicator
     * without the last rank (so parents have different groups). */
    for (int t = 0; t < NT; t++) {
        if (t % 2 == 0 || size == 1) {
            CHECK_RC(MPI_Comm_dup(MPI_COMM_WORLD, &parent[t]));
        } else {
            MPI_Comm q;
            CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, rank == size - 1 ? MPI_UNDEFINED : 0, rank, &q));
            if (q == MPI_COMM_NULL) CHECK_RC(MPI_Comm_dup(MPI_COMM_SELF, &q));
            parent[t] = q;
        }
    }
    pthread_t th[NT];
    for (long t = 0; t < NT; t++) pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < NT; t++) MPI_Comm_free(&parent[t]);

    if (size >= 2) {
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        for (int t = 0; t < NT; t++) CHECK_RC(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - rank % 2, t, &inter[t]));
        for (long t = 0; t < NT; t++) pthread_create(&th[t], NULL, inter_worker, (void *)t);
        for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
        for (int t = 0; t < NT; t++) MPI_Comm_free(&inter[t]);
        MPI_Comm_free(&half);
    }
    if (size >= 2) {
        MPI_Comm pair;
        MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
        if (pair != MPI_COMM_NULL) {
            MPI_Comm_dup(pair, &held[0]);
            MPI_Comm_dup(pair, &held[1]);
            for (long t = 0; t < 2; t++) pthread_create(&th[t], NULL, held_worker, (void *)t);
            for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
            MPI_Comm_free(&held[0]);
            MPI_Comm_free(&held[1]);
            MPI_Comm_free(&pair);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("comm_threads OK on %d ranks, %d iterations\n", size, iters);
    MPI_Finalize();
    return 0;
}
