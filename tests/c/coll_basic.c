/* Every blocking collective on several message sizes (0 bytes to a few
 * MiB) and every root, checking what every rank gets; MPI_IN_PLACE forms;
 * a non-contiguous datatype; a communicator from Comm_split.
 * Values are functions of (rank, index) so every element is checked. */
#include "check.h"

static int rank, size;

static int val(int r, long i) { return (int)(r * 1000003L + i * 7 + 1); }

static void test_bcast(MPI_Comm comm, long n) {
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    int *b = malloc((n + 1) * sizeof(int));
    for (int root = 0; root < p; root++) {
        for (long i = 0; i < n; i++) b[i] = r == root ? val(root, i) : -1;
        CHECK_RC(MPI_Bcast(b, (int)n, MPI_INT, root, comm));
        for (long i = 0; i < n; i++) CHECK(b[i] == val(root, i), "bcast n=%ld root=%d b[%ld]=%d", n, root, i, b[i]);
    }
    free(b);
}

static void test_reduce(MPI_Comm comm, long n) {
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    long *s = malloc((n + 1) * sizeof(long)), *d = malloc((n + 1) * sizeof(long));
    for (long i = 0; i < n; i++) s[i] = val(r, i);
    long sum0 = 0;
    for (int k = 0; k < p; k++) sum0 += val(k, 0);
#define EXPECT(i) (sum0 + (long)p * 7 * (i))
    /* Allreduce, normal and in place */
    CHECK_RC(MPI_Allreduce(s, d, (int)n, MPI_LONG, MPI_SUM, comm));
    for (long i = 0; i < n; i++) CHECK(d[i] == EXPECT(i), "allreduce n=%ld d[%ld]=%ld want %ld", n, i, d[i], EXPECT(i));
    for (long i = 0; i < n; i++) d[i] = val(r, i);
    CHECK_RC(MPI_Allreduce(MPI_IN_PLACE, d, (int)n, MPI_LONG, MPI_SUM, comm));
    for (long i = 0; i < n; i++) CHECK(d[i] == EXPECT(i), "allreduce in place n=%ld d[%ld]=%ld", n, i, d[i]);
    /* Reduce to every root, normal and in place at the root */
    for (int root = 0; root < p; root++) {
        for (long i = 0; i < n; i++) d[i] = -5;
        CHECK_RC(MPI_Reduce(s, d, (int)n, MPI_LONG, MPI_SUM, root, comm));
        for (long i = 0; i < n; i++)
            CHECK(r == root ? d[i] == EXPECT(i) : d[i] == -5, "reduce n=%ld root=%d d[%ld]=%ld", n, root, i, d[i]);
        if (r == root) {
            for (long i = 0; i < n; i++) d[i] = val(r, i);
            CHECK_RC(MPI_Reduce(MPI_IN_PLACE, d, (int)n, MPI_LONG, MPI_SUM, root, comm));
            for (long i = 0; i < n; i++) CHECK(d[i] == EXPECT(i), "reduce in place n=%ld d[%ld]=%ld", n, i, d[i]);
        } else {
            CHECK_RC(MPI_Reduce(s, NULL, (int)n, MPI_LONG, MPI_SUM, root, comm));
        }
    }
    /* Scan, Exscan */
    long pre0 = 0;
    for (int k = 0; k < r; k++) pre0 += val(k, 0);
    CHECK_RC(MPI_Scan(s, d, (int)n, MPI_LONG, MPI_SUM, comm));
    for (long i = 0; i < n; i++)
        CHECK(d[i] == pre0 + val(r, 0) + (long)(r + 1) * 7 * i, "scan n=%ld d[%ld]=%ld", n, i, d[i]);
    for (long i = 0; i < n; i++) d[i] = r == 0 ? 77 : val(r, i);
    CHECK_RC(MPI_Exscan(r == 0 ? s : MPI_IN_PLACE, d, (int)n, MPI_LONG, MPI_SUM, comm));
    for (long i = 0; i < n; i++)
        CHECK(r == 0 ? d[i] == 77 : d[i] == pre0 + (long)r * 7 * i, "exscan n=%ld d[%ld]=%ld", n, i, d[i]);
    free(s);
    free(d);
#undef EXPECT
}

/* Reduce_scatter(_block): block j of the sum goes to rank j. */
static void test_reduce_scatter(MPI_Comm comm, int blk) {
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    int *counts = malloc(p * sizeof(int));
    long total = 0;
    for (int j = 0; j < p; j++) total += counts[j] = blk + (j % 3);
    int *s = malloc((total + 1) * sizeof(int)), *d = malloc((total + 1) * sizeof(int));
    for (long i = 0; i < total; i++) s[i] = val(r, i);
    long off = 0;
    for (int j = 0; j < r; j++) off += counts[j];
    int sum0 = 0;
    for (int k = 0; k < p; k++) sum0 += val(k, 0);
    CHECK_RC(MPI_Reduce_scatter(s, d, counts, MPI_INT, MPI_SUM, comm));
    for (int i = 0; i < counts[r]; i++)
        CHECK(d[i] == sum0 + p * 7 * (off + i), "reduce_scatter blk=%d d[%d]=%d", blk, i, d[i]);
    memcpy(d, s, total * sizeof(int));
    CHECK_RC(MPI_Reduce_scatter(MPI_IN_PLACE, d, counts, MPI_INT, MPI_SUM, comm));
    for (int i = 0; i < counts[r]; i++)
        CHECK(d[i] == sum0 + p * 7 * (off + i), "reduce_scatter in place blk=%d d[%d]=%d", blk, i, d[i]);
    CHECK_RC(MPI_Reduce_scatter_block(s, d, blk, MPI_INT, MPI_SUM, comm));
    for (int i = 0; i < blk; i++)
        CHECK(d[i] == sum0 + p * 7 * ((long)r * blk + i), "reduce_scatter_block blk=%d d[%d]=%d", blk, i, d[i]);
    memcpy(d, s, (size_t)blk * p * sizeof(int));
    CHECK_RC(MPI_Reduce_scatter_block(MPI_IN_PLACE, d, blk, MPI_INT, MPI_SUM, comm));
    for (int i = 0; i < blk; i++)
        CHECK(d[i] == sum0 + p * 7 * ((long)r * blk + i), "reduce_scatter_block in place blk=%d d[%d]=%d", blk, i, d[i]);
    free(s);
    free(d);
    free(counts);
}

static void test_gathers(MPI_Comm comm, int n) {
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    int *s = malloc((n + 4) * sizeof(int)), *all = malloc(((long)n * p + 1) * sizeof(int));
    int *counts = malloc(p * sizeof(int)), *displs = malloc(p * sizeof(int));
    for (int i = 0; i < n + 4; i++) s[i] = val(r, i);
    /* Allgather, normal and in place */
    CHECK_RC(MPI_Allgather(s, n, MPI_INT, all, n, MPI_INT, comm));
    for (int k = 0; k < p; k++)
        for (int i = 0; i < n; i++) CHECK(all[(long)k * n + i] == val(k, i), "allgather n=%d from %d [%d]", n, k, i);
    for (long i = 0; i < (long)n * p; i++) all[i] = i / (n ? n : 1) == r ? val(r, i % n) : -1;
    CHECK_RC(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, n, MPI_INT, comm));
    for (int k = 0; k < p; k++)
        for (int i = 0; i < n; i++) CHECK(all[(long)k * n + i] == val(k, i), "allgather in place n=%d from %d", n, k);
    /* Gather / Scatter at every root */
    for (int root = 0; root < p; root++) {
        for (long i = 0; i < (long)n * p; i++) all[i] = -1;
        CHECK_RC(MPI_Gather(s, n, MPI_INT, all, n, MPI_INT, root, comm));
        if (r == root)
            for (int k = 0; k < p; k++)
                for (int i = 0; i < n; i++) CHECK(all[(long)k * n + i] == val(k, i), "gather n=%d root=%d from %d", n, root, k);
        if (r == root) {
            for (long i = 0; i < (long)n * p; i++) all[i] = i / n == r ? val(r, i % n) : -1;
            CHECK_RC(MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, n, MPI_INT, root, comm));
            for (int k = 0; k < p; k++)
                for (int i = 0; i < n; i++) CHECK(all[(long)k * n + i] == val(k, i), "gather in place n=%d root=%d", n, root);
        } else {
            CHECK_RC(MPI_Gather(s, n, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, root, comm));
        }
        /* Scatter back what rank k would get: val(k + 100, i) */
        for (long i = 0; i < (long)n * p; i++) all[i] = val((int)(i / n) + 100, i % n);
        int *d = malloc((n + 1) * sizeof(int));
        CHECK_RC(MPI_Scatter(all, n, MPI_INT, d, n, MPI_INT, root, comm));
        for (int i = 0; i < n; i++) CHECK(d[i] == val(r + 100, i), "scatter n=%d root=%d [%d]=%d", n, root, i, d[i]);
        if (r == root) CHECK_RC(MPI_Scatter(all, n, MPI_INT, MPI_IN_PLACE, n, MPI_INT, root, comm));
        else CHECK_RC(MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, d, n, MPI_INT, root, comm));
        for (int i = 0; i < n; i++) CHECK(d[i] == val(r + 100, i), "scatter in place n=%d root=%d", n, root);
        free(d);
        /* Gatherv / Scatterv with rank k sending k % 3 + n / 2 items at reversed places */
        long tot = 0;
        for (int k = p - 1; k >= 0; k--) {
            counts[k] = k % 3 + n / 2;
            displs[k] = (int)tot;
            tot += counts[k] + 1;
        }
        int *v = malloc((tot + 1) * sizeof(int));
        for (long i = 0; i < tot; i++) v[i] = -7;
        CHECK_RC(MPI_Gatherv(s, counts[r], MPI_INT, v, counts, displs, MPI_INT, root, comm));
        if (r == root)
            for (int k = 0; k < p; k++) {
                for (int i = 0; i < counts[k]; i++) CHECK(v[displs[k] + i] == val(k, i), "gatherv root=%d from %d", root, k);
                CHECK(v[displs[k] + counts[k]] == -7, "gatherv wrote a gap");
            }
        int *d2 = malloc((counts[r] + 1) * sizeof(int));
        CHECK_RC(MPI_Scatterv(v, counts, displs, MPI_INT, d2, counts[r], MPI_INT, root, comm));
        if (r == root)
            for (int i = 0; i < counts[r]; i++) CHECK(d2[i] == val(r, i), "scatterv root");
        free(d2);
        free(v);
    }
    /* Allgatherv */
    long tot = 0;
    for (int k = 0; k < p; k++) {
        counts[k] = (k * 5) % 4 + n;
        displs[k] = (int)tot + 2;
        tot += counts[k] + 2;
    }
    int *v = malloc((tot + 3) * sizeof(int));
    for (long i = 0; i < tot + 2; i++) v[i] = -3;
    int *s2 = malloc((counts[r] + 1) * sizeof(int));
    for (int i = 0; i < counts[r]; i++) s2[i] = val(r, i);
    CHECK_RC(MPI_Allgatherv(s2, counts[r], MPI_INT, v, counts, displs, MPI_INT, comm));
    for (int k = 0; k < p; k++)
        for (int i = 0; i < counts[k]; i++) CHECK(v[displs[k] + i] == val(k, i), "allgatherv n=%d from %d [%d]", n, k, i);
    for (int k = 0; k < p; k++) CHECK(v[displs[k] - 1] == -3 && v[displs[k] - 2] == -3, "allgatherv gap");
    for (long i = 0; i < tot + 2; i++) v[i] = -3;
    for (int i = 0; i < counts[r]; i++) v[displs[r] + i] = val(r, i);
    CHECK_RC(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, v, counts, displs, MPI_INT, comm));
    for (int k = 0; k < p; k++)
        for (int i = 0; i < counts[k]; i++) CHECK(v[displs[k] + i] == val(k, i), "allgatherv in place from %d", k);
    free(v);
    free(s2);
    free(s);
    free(all);
    free(counts);
    free(displs);
}

static void test_alltoall(MPI_Comm comm, int n) {
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    long tot = (long)n * p;
    int *s = malloc((tot + 1) * sizeof(int)), *d = malloc((tot + 1) * sizeof(int));
    /* Block for k: val(r * 64 + k, i) */
    for (int k = 0; k < p; k++)
        for (int i = 0; i < n; i++) s[(long)k * n + i] = val(r * 64 + k, i);
    CHECK_RC(MPI_Alltoall(s, n, MPI_INT, d, n, MPI_INT, comm));
    for (int k = 0; k < p; k++)
        for (int i = 0; i < n; i++) CHECK(d[(long)k * n + i] == val(k * 64 + r, i), "alltoall n=%d from %d [%d]", n, k, i);
    memcpy(d, s, tot * sizeof(int));
    CHECK_RC(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d, n, MPI_INT, comm));
    for (int k = 0; k < p; k++)
        for (int i = 0; i < n; i++) CHECK(d[(long)k * n + i] == val(k * 64 + r, i), "alltoall in place n=%d from %d", n, k);
    /* Alltoallv: r sends (r + k) % 3 + n items to k */
    int *sc = malloc(p * sizeof(int)), *sd = malloc(p * sizeof(int)), *rc = malloc(p * sizeof(int)), *rd = malloc(p * sizeof(int));
    long so = 0, ro = 0;
    for (int k = 0; k < p; k++) {
        sc[k] = (r + k) % 3 + n;
        sd[k] = (int)so;
        so += sc[k];
        rc[k] = (k + r) % 3 + n;
        rd[k] = (int)ro + 1;
        ro += rc[k] + 1;
    }
    int *vs = malloc((so + 1) * sizeof(int)), *vr = malloc((ro + 2) * sizeof(int));
    for (int k = 0; k < p; k++)
        for (int i = 0; i < sc[k]; i++) vs[sd[k] + i] = val(r * 64 + k, i);
    CHECK_RC(MPI_Alltoallv(vs, sc, sd, MPI_INT, vr, rc, rd, MPI_INT, comm));
    for (int k = 0; k < p; k++)
        for (int i = 0; i < rc[k]; i++) CHECK(vr[rd[k] + i] == val(k * 64 + r, i), "alltoallv from %d [%d]", k, i);
    /* Alltoallw with byte displacements, same data */
    int *wsd = malloc(p * sizeof(int)), *wrd = malloc(p * sizeof(int));
    MPI_Datatype *ts = malloc(p * sizeof(MPI_Datatype));
    for (int k = 0; k < p; k++) {
        wsd[k] = sd[k] * (int)sizeof(int);
        wrd[k] = rd[k] * (int)sizeof(int);
        ts[k] = MPI_INT;
    }
    memset(vr, 0, (ro + 2) * sizeof(int));
    CHECK_RC(MPI_Alltoallw(vs, sc, wsd, ts, vr, rc, wrd, ts, comm));
    for (int k = 0; k < p; k++)
        for (int i = 0; i < rc[k]; i++) CHECK(vr[rd[k] + i] == val(k * 64 + r, i), "alltoallw from %d [%d]", k, i);
    /* In-place alltoallv: symmetric counts n + (r + k) % 3 */
    for (int k = 0; k < p; k++)
        for (int i = 0; i < rc[k]; i++) vr[rd[k] + i] = val(r * 64 + k, i);
    CHECK_RC(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, vr, rc, rd, MPI_INT, comm));
    for (int k = 0; k < p; k++)
        for (int i = 0; i < rc[k]; i++) CHECK(vr[rd[k] + i] == val(k * 64 + r, i), "alltoallv in place from %d [%d]", k, i);
    free(wsd);
    free(wrd);
    free(ts);
    free(vs);
    free(vr);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(s);
    free(d);
}

/* A vector type (every other int): packing on both sides. */
static void test_derived(MPI_Comm comm) {
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    MPI_Datatype vec;
    MPI_Type_vector(5, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int b[10], out[10];
    for (int i = 0; i < 10; i++) b[i] = i % 2 ? -1 : val(r, i);
    CHECK_RC(MPI_Allreduce(b, out, 1, vec, MPI_SUM, comm));
    int sum0 = 0;
    for (int k = 0; k < p; k++) sum0 += val(k, 0);
    for (int i = 0; i < 10; i += 2) CHECK(out[i] == sum0 + p * 7 * i, "derived allreduce [%d]=%d", i, out[i]);
    for (int i = 0; i < 10; i++) b[i] = i % 2 ? -1 : (r == p - 1 ? val(9, i) : 0);
    CHECK_RC(MPI_Bcast(b, 1, vec, p - 1, comm));
    for (int i = 0; i < 10; i++) CHECK(b[i] == (i % 2 ? -1 : val(9, i)), "derived bcast [%d]=%d", i, b[i]);
    int *all = malloc(10 * p * sizeof(int));
    for (int i = 0; i < 10 * p; i++) all[i] = -2;
    for (int i = 0; i < 10; i++) b[i] = val(r, i);
    CHECK_RC(MPI_Allgather(b, 5, MPI_INT, all, 1, vec, comm));
    /* vec has extent 9 ints: block k starts at 9k, data at even offsets */
    for (int k = 0; k < p; k++)
        for (int i = 0; i < 5; i++) CHECK(all[9 * k + 2 * i] == val(k, i), "derived allgather k=%d i=%d got %d", k, i, all[9 * k + 2 * i]);
    free(all);
    MPI_Type_free(&vec);
}

/* Many small collectives back to back with changing roots and sizes: the
 * shared-memory path reuses its buffers every other call. */
static void stress_small(MPI_Comm comm, int iters) {
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    int b[4], x[3], y[3], all[3 * 64];
    for (int it = 0; it < iters; it++) {
        int n = it % 4, root = (it * 7) % p;
        for (int i = 0; i < n; i++) b[i] = r == root ? val(it, i) : -1;
        CHECK_RC(MPI_Bcast(b, n, MPI_INT, root, comm));
        for (int i = 0; i < n; i++) CHECK(b[i] == val(it, i), "stress bcast it=%d", it);
        for (int i = 0; i < 3; i++) x[i] = val(r, it + i);
        CHECK_RC(MPI_Allreduce(x, y, 3, MPI_INT, MPI_MAX, comm));
        for (int i = 0; i < 3; i++) CHECK(y[i] == val(p - 1, it + i), "stress allreduce it=%d", it);
        CHECK_RC(MPI_Reduce(x, y, 3, MPI_INT, MPI_MIN, root, comm));
        if (r == root)
            for (int i = 0; i < 3; i++) CHECK(y[i] == val(0, it + i), "stress reduce it=%d", it);
        if (it % 5 == 0) CHECK_RC(MPI_Barrier(comm));
        if (p <= 64 && it % 3 == 0) {
            CHECK_RC(MPI_Allgather(x, 3, MPI_INT, all, 3, MPI_INT, comm));
            for (int k = 0; k < p; k++)
                for (int i = 0; i < 3; i++) CHECK(all[3 * k + i] == val(k, it + i), "stress allgather it=%d", it);
        }
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 0; i < 10; i++) CHECK_RC(MPI_Barrier(MPI_COMM_WORLD));

    long sizes[] = {0, 1, 3, 1000, 5000, 300000};
    int big = argc > 1 && !strcmp(argv[1], "big");
    int ns = big ? 6 : 5;
    for (int k = 0; k < ns; k++) {
        test_bcast(MPI_COMM_WORLD, sizes[k]);
        test_reduce(MPI_COMM_WORLD, sizes[k]);
    }
    if (big) test_bcast(MPI_COMM_WORLD, 1 << 20);
    int blks[] = {0, 1, 100, 20000};
    for (int k = 0; k < (big ? 4 : 3); k++) test_reduce_scatter(MPI_COMM_WORLD, blks[k]);
    int gs[] = {0, 1, 10, 3000, 70000};
    for (int k = 0; k < (big ? 5 : 4); k++) {
        test_gathers(MPI_COMM_WORLD, gs[k]);
        test_alltoall(MPI_COMM_WORLD, gs[k]);
    }
    test_derived(MPI_COMM_WORLD);
    stress_small(MPI_COMM_WORLD, 3000);

    /* The same on a split communicator (odd and even ranks, reversed). */
    MPI_Comm half;
    CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half));
    test_bcast(half, 1000);
    test_reduce(half, 1000);
    test_reduce_scatter(half, 10);
    test_gathers(half, 10);
    test_alltoall(half, 10);
    stress_small(half, 500);
    MPI_Comm_free(&half);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("coll_basic OK\n");
    MPI_Finalize();
    return 0;
}
