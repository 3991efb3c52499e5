/* Alltoallv and Alltoallw with counts that differ per pair, where some
 * ranks' blocks fit the shared-memory segment and others' go as messages
 * (more than 64 KiB in all), with a strided type on some blocks; then
 * counts that disagree between a sender and a receiver (in the segment
 * and by message) and a rank with a bad count: the right error class,
 * nobody hangs, and the next calls work. Argument "messages": the library
 * runs with messages only (no bad count then). */
#include "check.h"

static int rank, size;

/* Ints rank i sends to rank j in round `big` (0: all small; 1: rank 0's
 * blocks are large). */
static int cnt(int i, int j, int big) {
    if (big && i == 0) return 20000 + j;
    return (i + 2 * j) % 5 + (i == j);
}

static int val(int i, int j, int k) { return i * 1000003 + j * 1009 + k; }

static void round_v(int big, MPI_Comm comm) {
    int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
    int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int));
    int st = 0, rt = 0;
    for (int j = 0; j < size; j++) {
        sc[j] = cnt(rank, j, big);
        sd[j] = st + 1; /* a gap of one int before each block */
        st += sc[j] + 1;
        rc[j] = cnt(j, rank, big);
        rd[j] = rt;
        rt += rc[j] + 2;
    }
    int *s = malloc((st + 1) * sizeof(int)), *r = malloc((rt + 1) * sizeof(int));
    for (int j = 0; j < size; j++)
        for (int k = 0; k < sc[j]; k++) s[sd[j] + k] = val(rank, j, k);
    for (int k = 0; k < rt; k++) r[k] = -7;
    CHECK_RC(MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, comm));
    for (int j = 0; j < size; j++) {
        for (int k = 0; k < rc[j]; k++)
            CHECK(r[rd[j] + k] == val(j, rank, k), "alltoallv big=%d from %d [%d] = %d", big, j, k, r[rd[j] + k]);
        CHECK(r[rd[j] + rc[j]] == -7, "alltoallv big=%d wrote past the block from %d", big, j);
    }
    free(s);
    free(r);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

/* Alltoallw: block j is cnt(i, j) ints, sent as a strided vector (every
 * other int) to odd ranks and contiguous to even ones; received
 * contiguous; byte displacements. */
static void round_w(int big, MPI_Comm comm) {
    MPI_Datatype every_other;
    MPI_Type_vector(1, 1, 2, MPI_INT, &every_other);
    MPI_Datatype two;
    MPI_Type_create_resized(every_other, 0, 2 * sizeof(int), &two);
    MPI_Type_commit(&two);
    int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
    int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int));
    MPI_Datatype *stp = malloc(size * sizeof(MPI_Datatype)), *rtp = malloc(size * sizeof(MPI_Datatype));
    int st = 0, rt = 0;
    for (int j = 0; j < size; j++) {
        sc[j] = cnt(rank, j, big);
        stp[j] = j % 2 ? two : MPI_INT;
        sd[j] = st * (int)sizeof(int);
        st += sc[j] * (j % 2 ? 2 : 1);
        rc[j] = cnt(j, rank, big);
        rtp[j] = MPI_INT;
        rd[j] = rt * (int)sizeof(int);
        rt += rc[j];
    }
    int *s = malloc((st + 1) * sizeof(int)), *r = malloc((rt + 1) * sizeof(int));
    for (int j = 0; j < size; j++)
        for (int k = 0; k < sc[j]; k++) {
            int step = j % 2 ? 2 : 1;
            s[sd[j] / (int)sizeof(int) + k * step] = val(rank, j, k);
            if (step == 2) s[sd[j] / (int)sizeof(int) + k * step + 1] = -1;
        }
    CHECK_RC(MPI_Alltoallw(s, sc, sd, stp, r, rc, rd, rtp, comm));
    for (int j = 0; j < size; j++)
        for (int k = 0; k < rc[j]; k++)
            CHECK(r[rd[j] / (int)sizeof(int) + k] == val(j, rank, k), "alltoallw big=%d from %d [%d] = %d", big, j, k, r[rd[j] / (int)sizeof(int) + k]);
    MPI_Type_free(&two);
    MPI_Type_free(&every_other);
    free(s);
    free(r);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(stp);
    free(rtp);
}

/* Ints rank i contributes to a Gatherv (receives in a Scatterv) in round
 * `big` (1: rank 1's block is larger than the segment takes). */
static int gcnt(int i, int big) { return big && i == 1 ? 20000 : i % 4 + 1; }

/* Gatherv to `root` (odd ranks send a strided type) and Scatterv from it
 * (even ranks receive a strided type), checked everywhere. */
static void round_rooted(int big, int root, MPI_Comm comm) {
    MPI_Datatype every_other, two;
    MPI_Type_vector(1, 1, 2, MPI_INT, &every_other);
    MPI_Type_create_resized(every_other, 0, 2 * sizeof(int), &two);
    MPI_Type_commit(&two);
    int *c = malloc(size * sizeof(int)), *d = malloc(size * sizeof(int)), tot = 0;
    for (int j = 0; j < size; j++) {
        c[j] = gcnt(j, big);
        d[j] = tot + 1;
        tot += c[j] + 1;
    }
    int n = gcnt(rank, big);
    int *mine = malloc(2 * (n + 1) * sizeof(int)), *all = malloc((tot + 1) * sizeof(int));
    for (int k = 0; k < n; k++) {
        mine[2 * k] = val(rank, root, k);
        mine[2 * k + 1] = rank % 2 ? -1 : val(rank, root, k + n);
    }
    /* Odd ranks send every other int of `mine`, even ones the first n. */
    if (rank % 2 == 0)
        for (int k = 0; k < n; k++) mine[k] = val(rank, root, k);
    for (int k = 0; k < tot; k++) all[k] = -7;
    CHECK_RC(MPI_Gatherv(mine, n, rank % 2 ? two : MPI_INT, all, c, d, MPI_INT, root, comm));
    if (rank == root)
        for (int j = 0; j < size; j++) {
            for (int k = 0; k < c[j]; k++) CHECK(all[d[j] + k] == val(j, root, k), "gatherv big=%d root=%d from %d [%d] = %d", big, root, j, k, all[d[j] + k]);
            CHECK(all[d[j] - 1] == -7, "gatherv big=%d wrote before the block of %d", big, j);
        }
    /* Scatterv back: block j is val(root, j, k). */
    if (rank == root)
        for (int j = 0; j < size; j++)
            for (int k = 0; k < c[j]; k++) all[d[j] + k] = val(root, j, k);
    for (int k = 0; k < 2 * n; k++) mine[k] = -5;
    CHECK_RC(MPI_Scatterv(all, c, d, MPI_INT, mine, n, rank % 2 ? MPI_INT : two, root, comm));
    for (int k = 0; k < n; k++) {
        int got = rank % 2 ? mine[k] : mine[2 * k];
        CHECK(got == val(root, rank, k), "scatterv big=%d root=%d [%d] = %d", big, root, k, got);
        if (rank % 2 == 0) CHECK(mine[2 * k + 1] == -5, "scatterv wrote between the strided ints");
    }
    MPI_Type_free(&two);
    MPI_Type_free(&every_other);
    free(c);
    free(d);
    free(mine);
    free(all);
}

/* After a call whose counts of `n` and `n - 1` ints disagree: rank `at`
 * failed with MPI_ERR_TRUNCATE, the others succeeded or failed the same. */
static void truncated_at(int rc, int at, const char *what, int n) {
    int cls;
    MPI_Error_class(rc, &cls);
    if (rank == at) CHECK(cls == MPI_ERR_TRUNCATE, "%s %d/%d at rank %d gave class %d", what, n, n - 1, at, cls);
    else CHECK(rc == MPI_SUCCESS || cls == MPI_ERR_TRUNCATE, "%s mismatch gave class %d", what, cls);
}

/* Rank 1's block is `n` ints but the root counts `n - 1` for it: the root
 * of the Gatherv and rank 1 of the Scatterv fail with MPI_ERR_TRUNCATE. */
static void rooted_mismatch(int n) {
    int *c = malloc(size * sizeof(int)), *d = malloc(size * sizeof(int));
    for (int j = 0; j < size; j++) {
        c[j] = j == 1 ? n - 1 : 1;
        d[j] = j * n;
    }
    int *a = calloc((size_t)size * n, sizeof(int)), *b = calloc(n, sizeof(int));
    truncated_at(MPI_Gatherv(b, rank == 1 ? n : 1, MPI_INT, a, c, d, MPI_INT, 0, MPI_COMM_WORLD), 0, "gatherv", n);
    for (int j = 0; j < size; j++) c[j] = j == 1 ? n : 1;
    truncated_at(MPI_Scatterv(a, c, d, MPI_INT, b, rank == 1 ? n - 1 : 1, MPI_INT, 0, MPI_COMM_WORLD), 1, "scatterv", n);
    free(a);
    free(b);
    free(c);
    free(d);
}

static void still_works(const char *after) {
    round_v(0, MPI_COMM_WORLD);
    int x = rank + 1, y = 0;
    CHECK_RC(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(y == size * (size + 1) / 2, "allreduce after %s gave %d", after, y);
}

/* Every rank sends `n` ints to every rank but rank 1 expects `n - 1` from
 * rank 0: rank 1 fails with MPI_ERR_TRUNCATE, the others may succeed. */
static void mismatch(int n) {
    int *c = malloc(size * sizeof(int)), *d = malloc(size * sizeof(int)), *rc = malloc(size * sizeof(int));
    for (int j = 0; j < size; j++) {
        c[j] = n;
        d[j] = j * n;
        rc[j] = rank == 1 && j == 0 ? n - 1 : n;
    }
    int *s = calloc((size_t)size * n, sizeof(int)), *r = calloc((size_t)size * n, sizeof(int));
    truncated_at(MPI_Alltoallv(s, c, d, MPI_INT, r, rc, d, MPI_INT, MPI_COMM_WORLD), 1, "alltoallv", n);
    free(s);
    free(r);
    free(c);
    free(d);
    free(rc);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int rep = 0; rep < 3; rep++) {
        round_v(0, MPI_COMM_WORLD);
        round_w(0, MPI_COMM_WORLD);
        round_v(1, MPI_COMM_WORLD);
        round_w(1, MPI_COMM_WORLD);
        for (int root = 0; root < size; root++) {
            round_rooted(0, root, MPI_COMM_WORLD);
            round_rooted(1, root, MPI_COMM_WORLD);
        }
    }
    /* On a communicator of its own (a segment of its own, made by this call). */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int hr, hs;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    {
        int sr = rank, ss = size;
        rank = hr;
        size = hs;
        round_v(0, half);
        round_v(1, half);
        rank = sr;
        size = ss;
    }
    MPI_Comm_free(&half);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size > 1) {
        mismatch(3);     /* in the segment */
        still_works("a mismatch in the segment");
        mismatch(20000); /* by message: rank 0's blocks do not fit */
        still_works("a mismatch by message");
        rooted_mismatch(3);
        still_works("a rooted mismatch in the segment");
        rooted_mismatch(20000);
        still_works("a rooted mismatch by message");
        /* A negative count at the last rank: MPI_ERR_COUNT there, the
         * others learn it or not, nobody hangs (in the segment; by
         * message, "messages", the others would wait for that rank). */
        if (argc > 1 && !strcmp(argv[1], "messages")) goto done;
        int c[64], d[64], s[64] = {0}, r[64];
        for (int j = 0; j < size; j++) {
            c[j] = rank == size - 1 && j == 0 ? -1 : 1;
            d[j] = j;
        }
        int rc_ = MPI_Alltoallv(s, c, d, MPI_INT, r, c, d, MPI_INT, MPI_COMM_WORLD), cls;
        MPI_Error_class(rc_, &cls);
        if (rank == size - 1) CHECK(cls == MPI_ERR_COUNT, "negative count gave class %d", cls);
        else CHECK(rc_ == MPI_SUCCESS || cls == MPI_ERR_TRUNCATE, "the others of a negative count gave class %d", cls);
        still_works("a negative count");
        /* The same in a Gatherv (at a sender) and a Scatterv (at the root). */
        rc_ = MPI_Gatherv(s, rank == size - 1 ? -1 : 1, MPI_INT, r, c, d, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Error_class(rc_, &cls);
        if (rank == size - 1) CHECK(cls == MPI_ERR_COUNT, "gatherv negative sendcount gave class %d", cls);
        else if (rank == 0) CHECK(cls == MPI_ERR_TRUNCATE, "the root of a gatherv with a bad sender gave class %d", cls);
        still_works("a negative count in gatherv");
        for (int j = 0; j < size; j++) c[j] = j == 1 ? -1 : 1;
        rc_ = MPI_Scatterv(s, c, d, MPI_INT, r, 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Error_class(rc_, &cls);
        if (rank == 0) CHECK(cls == MPI_ERR_COUNT, "scatterv negative sendcount gave class %d", cls);
        else CHECK(cls == MPI_ERR_TRUNCATE, "the others of a scatterv with a bad root gave class %d", cls);
        still_works("a negative count in scatterv");
    }
done:
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("coll_vshm OK\n");
    MPI_Finalize();
    return 0;
}
