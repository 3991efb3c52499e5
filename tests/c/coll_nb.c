/* Nonblocking and persistent collectives: every MPI_I* call checked for
 * values; several outstanding at once on two communicators, completed in
 * scrambled order with Waitall, Waitany, Testall loops; overlap with
 * point-to-point traffic; progress of a collective while its rank waits on
 * something else; persistent collectives started many times. */
#include "check.h"
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int rank, size;

static int val(int r, long i) { return (int)(r * 1000003L + i * 7 + 1); }

/* One of each nonblocking collective, all outstanding together. */
static void every_nonblocking(MPI_Comm comm, int n) {
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    enum { K = 14 };
    MPI_Request q[K];
    int *s = malloc((n + 1) * sizeof(int)), *bc = malloc((n + 1) * sizeof(int));
    int *ar = malloc((n + 1) * sizeof(int)), *rd = malloc((n + 1) * sizeof(int)), *sc = malloc((n + 1) * sizeof(int));
    int *ex = malloc((n + 1) * sizeof(int)), *sct = malloc((n + 1) * sizeof(int)), *rsb = malloc((n + 1) * sizeof(int));
    int *rs = malloc((n + 1) * sizeof(int));
    int *ga = malloc(((long)n * p + 1) * sizeof(int)), *ag = malloc(((long)n * p + 1) * sizeof(int));
    int *aa = malloc(((long)n * p + 1) * sizeof(int)), *big = malloc(((long)n * p + 1) * sizeof(int));
    int *agv = malloc(((long)n * p + 1) * sizeof(int)), *gv = malloc(((long)n * p + 1) * sizeof(int));
    int *counts = malloc(p * sizeof(int)), *displs = malloc(p * sizeof(int));
    for (int k = 0; k < p; k++) {
        counts[k] = n;
        displs[k] = k * n;
    }
    for (long i = 0; i < n; i++) {
        s[i] = val(r, i);
        bc[i] = r == 0 ? val(42, i) : 0;
    }
    for (long i = 0; i < (long)n * p; i++) big[i] = val(r, i);
    int root = p - 1;
    CHECK_RC(MPI_Ibarrier(comm, &q[0]));
    CHECK_RC(MPI_Ibcast(bc, n, MPI_INT, 0, comm, &q[1]));
    CHECK_RC(MPI_Iallreduce(s, ar, n, MPI_INT, MPI_SUM, comm, &q[2]));
    CHECK_RC(MPI_Ireduce(s, rd, n, MPI_INT, MPI_MAX, root, comm, &q[3]));
    CHECK_RC(MPI_Iscan(s, sc, n, MPI_INT, MPI_SUM, comm, &q[4]));
    CHECK_RC(MPI_Iexscan(s, ex, n, MPI_INT, MPI_SUM, comm, &q[5]));
    CHECK_RC(MPI_Igather(s, n, MPI_INT, ga, n, MPI_INT, root, comm, &q[6]));
    CHECK_RC(MPI_Iallgather(s, n, MPI_INT, ag, n, MPI_INT, comm, &q[7]));
    CHECK_RC(MPI_Ialltoall(big, n, MPI_INT, aa, n, MPI_INT, comm, &q[8]));
    CHECK_RC(MPI_Iscatter(big, n, MPI_INT, sct, n, MPI_INT, 0, comm, &q[9]));
    CHECK_RC(MPI_Ireduce_scatter_block(big, rsb, n, MPI_INT, MPI_SUM, comm, &q[10]));
    CHECK_RC(MPI_Ireduce_scatter(big, rs, counts, MPI_INT, MPI_SUM, comm, &q[11]));
    CHECK_RC(MPI_Iallgatherv(s, n, MPI_INT, agv, counts, displs, MPI_INT, comm, &q[12]));
    CHECK_RC(MPI_Igatherv(s, n, MPI_INT, gv, counts, displs, MPI_INT, 0, comm, &q[13]));
    /* Complete in a scrambled order: odd ones first by Waitany. */
    for (int k = 1; k < K; k += 2) {
        int idx;
        MPI_Request odd[K / 2];
        for (int j = 0; j < K / 2; j++) odd[j] = q[2 * j + 1];
        CHECK_RC(MPI_Waitany(K / 2, odd, &idx, MPI_STATUS_IGNORE));
        CHECK(idx >= 0 && idx < K / 2, "waitany index %d", idx);
        q[2 * idx + 1] = odd[idx];
    }
    CHECK_RC(MPI_Waitall(K, q, MPI_STATUSES_IGNORE));
    for (int k = 0; k < K; k++) CHECK(q[k] == MPI_REQUEST_NULL, "request %d not freed", k);

    long sum0 = 0, pre0 = 0;
    for (int k = 0; k < p; k++) sum0 += val(k, 0);
    for (int k = 0; k < r; k++) pre0 += val(k, 0);
    for (long i = 0; i < n; i++) {
        CHECK(bc[i] == val(42, i), "ibcast [%ld]", i);
        CHECK(ar[i] == (int)(sum0 + 7L * p * i), "iallreduce n=%d [%ld]=%d", n, i, ar[i]);
        if (r == root) CHECK(rd[i] == val(p - 1, i), "ireduce max [%ld]", i);
        CHECK(sc[i] == (int)(pre0 + val(r, 0) + 7L * (r + 1) * i), "iscan [%ld]", i);
        if (r > 0) CHECK(ex[i] == (int)(pre0 + 7L * r * i), "iexscan [%ld]", i);
        CHECK(sct[i] == val(0, (long)r * n + i), "iscatter [%ld]", i);
        /* block r of big summed over ranks */
        long want = 0;
        for (int k = 0; k < p; k++) want += val(k, (long)r * n + i);
        CHECK(rsb[i] == (int)want, "ireduce_scatter_block [%ld]", i);
        CHECK(rs[i] == (int)want, "ireduce_scatter [%ld]", i);
    }
    for (int k = 0; k < p; k++)
        for (long i = 0; i < n; i++) {
            CHECK(ag[(long)k * n + i] == val(k, i), "iallgather from %d", k);
            CHECK(agv[(long)k * n + i] == val(k, i), "iallgatherv from %d", k);
            if (r == root) CHECK(ga[(long)k * n + i] == val(k, i), "igather from %d", k);
            if (r == 0) CHECK(gv[(long)k * n + i] == val(k, i), "igatherv from %d", k);
            CHECK(aa[(long)k * n + i] == val(k, (long)r * n + i), "ialltoall from %d", k);
        }
    free(s); free(bc); free(ar); free(rd); free(sc); free(ex); free(sct); free(rsb); free(rs);
    free(ga); free(ag); free(aa); free(big); free(agv); free(gv); free(counts); free(displs);
}

/* The remaining I-calls: scatterv, alltoallv, alltoallw, in place forms. */
static void more_nonblocking(void) {
    int n = 5;
    int *cnt = malloc(size * sizeof(int)), *dsp = malloc(size * sizeof(int)), *bdsp = malloc(size * sizeof(int));
    MPI_Datatype *ts = malloc(size * sizeof(MPI_Datatype));
    int *src = malloc(n * size * sizeof(int)), *dst = malloc(n * size * sizeof(int)), *one = malloc(n * sizeof(int));
    for (int k = 0; k < size; k++) {
        cnt[k] = n;
        dsp[k] = k * n;
        bdsp[k] = k * n * (int)sizeof(int);
        ts[k] = MPI_INT;
    }
    for (int i = 0; i < n * size; i++) src[i] = val(rank, i);
    MPI_Request q[5];
    CHECK_RC(MPI_Iscatterv(src, cnt, dsp, MPI_INT, one, n, MPI_INT, 0, MPI_COMM_WORLD, &q[0]));
    CHECK_RC(MPI_Wait(&q[0], MPI_STATUS_IGNORE));
    for (int i = 0; i < n; i++) CHECK(one[i] == val(0, rank * n + i), "iscatterv");
    CHECK_RC(MPI_Ialltoallv(src, cnt, dsp, MPI_INT, dst, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &q[1]));
    CHECK_RC(MPI_Wait(&q[1], MPI_STATUS_IGNORE));
    for (int k = 0; k < size; k++)
        for (int i = 0; i < n; i++) CHECK(dst[k * n + i] == val(k, rank * n + i), "ialltoallv");
    memset(dst, 0, n * size * sizeof(int));
    CHECK_RC(MPI_Ialltoallw(src, cnt, bdsp, ts, dst, cnt, bdsp, ts, MPI_COMM_WORLD, &q[2]));
    CHECK_RC(MPI_Wait(&q[2], MPI_STATUS_IGNORE));
    for (int k = 0; k < size; k++)
        for (int i = 0; i < n; i++) CHECK(dst[k * n + i] == val(k, rank * n + i), "ialltoallw");
    memcpy(dst, src, n * size * sizeof(int));
    CHECK_RC(MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, dst, n, MPI_INT, MPI_COMM_WORLD, &q[3]));
    for (int i = 0; i < n; i++) one[i] = val(rank, i);
    CHECK_RC(MPI_Iallreduce(MPI_IN_PLACE, one, n, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &q[4]));
    CHECK_RC(MPI_Waitall(2, &q[3], MPI_STATUSES_IGNORE));
    for (int k = 0; k < size; k++)
        for (int i = 0; i < n; i++) CHECK(dst[k * n + i] == val(k, rank * n + i), "ialltoall in place");
    for (int i = 0; i < n; i++) CHECK(one[i] == val(0, i), "iallreduce in place min");
    free(cnt); free(dsp); free(bdsp); free(ts); free(src); free(dst); free(one);
}

/* Collectives overlapped with point-to-point on the same communicator. */
static void overlap_p2p(int n) {
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
    int *ping = malloc(n * sizeof(int)), *pong = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) {
        x[i] = rank + i;
        ping[i] = val(rank, i);
    }
    MPI_Request q[4];
    CHECK_RC(MPI_Irecv(pong, n, MPI_INT, prev, 7, MPI_COMM_WORLD, &q[0]));
    CHECK_RC(MPI_Iallreduce(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[1]));
    CHECK_RC(MPI_Isend(ping, n, MPI_INT, next, 7, MPI_COMM_WORLD, &q[2]));
    CHECK_RC(MPI_Ibarrier(MPI_COMM_WORLD, &q[3]));
    int flag = 0, spins = 0;
    while (!flag) {
        CHECK_RC(MPI_Testall(4, q, &flag, MPI_STATUSES_IGNORE));
        spins++;
    }
    for (int i = 0; i < n; i++) {
        CHECK(pong[i] == val(prev, i), "p2p during collectives [%d]", i);
        CHECK(y[i] == (double)size * (size - 1) / 2 + (double)size * i, "iallreduce with p2p [%d]=%g", i, y[i]);
    }
    free(x); free(y); free(ping); free(pong);
}

/* Rank 0 waits for a message that rank 1 sends only after its Iallreduce
 * completed, which needs rank 0's part: rank 0's collective must progress
 * while it waits in MPI_Wait on the receive. */
static void progress_while_waiting(int n) {
    if (size < 2) return;
    double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++) x[i] = rank;
    MPI_Request q;
    CHECK_RC(MPI_Iallreduce(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q));
    int token = 0;
    if (rank == 0) {
        CHECK_RC(MPI_Recv(&token, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(token == 1234, "token");
    } else if (rank == 1) {
        CHECK_RC(MPI_Wait(&q, MPI_STATUS_IGNORE));
        token = 1234;
        CHECK_RC(MPI_Send(&token, 1, MPI_INT, 0, 99, MPI_COMM_WORLD));
    }
    if (rank != 1) CHECK_RC(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (int i = 0; i < n; i++) CHECK(y[i] == (double)size * (size - 1) / 2, "allreduce result %g", y[i]);
    free(x);
    free(y);
}

/* Rank 0 starts an Iallreduce and computes for 400 ms without calling
 * MPI; the others wait for theirs. Rank 0's part must progress meanwhile
 * (the library's progress thread), so the others finish long before. */
static void progress_while_computing(int n) {
    if (size < 2) return;
    double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++) x[i] = rank;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Request q;
    double t0 = now();
    CHECK_RC(MPI_Iallreduce(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q));
    double waited = 0;
    if (rank == 0) {
        volatile double sink = 0;
        while (now() - t0 < 0.4) sink += 1e-9;
    } else {
        CHECK_RC(MPI_Wait(&q, MPI_STATUS_IGNORE));
        waited = now() - t0;
    }
    if (rank == 0) CHECK_RC(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (int i = 0; i < n; i++) CHECK(y[i] == (double)size * (size - 1) / 2, "allreduce result %g", y[i]);
    double worst = 0;
    MPI_Reduce(&waited, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) CHECK(worst < 0.3, "the others waited %.3f s for rank 0, which was computing", worst);
    free(x);
    free(y);
}

/* Many outstanding on two communicators at once. */
static void many_outstanding(void) {
    MPI_Comm dup;
    CHECK_RC(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    enum { M = 24 };
    MPI_Request q[M];
    int in[M], out[M], b[M];
    for (int k = 0; k < M; k++) {
        in[k] = rank + k;
        b[k] = rank == k % size ? 1000 + k : -1;
        MPI_Comm c = k % 3 ? MPI_COMM_WORLD : dup;
        if (k % 2) CHECK_RC(MPI_Iallreduce(&in[k], &out[k], 1, MPI_INT, MPI_SUM, c, &q[k]));
        else CHECK_RC(MPI_Ibcast(&b[k], 1, MPI_INT, k % size, c, &q[k]));
    }
    /* Reverse completion order with Wait. */
    for (int k = M - 1; k >= 0; k--) CHECK_RC(MPI_Wait(&q[k], MPI_STATUS_IGNORE));
    for (int k = 0; k < M; k++) {
        if (k % 2) CHECK(out[k] == size * (size - 1) / 2 + size * k, "many: allreduce %d = %d", k, out[k]);
        else CHECK(b[k] == 1000 + k, "many: bcast %d = %d", k, b[k]);
    }
    MPI_Comm_free(&dup);
}

static void persistent(void) {
    int n = 1000;
    double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
    int b[3];
    MPI_Request q[3];
    CHECK_RC(MPI_Allreduce_init(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]));
    CHECK_RC(MPI_Bcast_init(b, 3, MPI_INT, size - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]));
    CHECK_RC(MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &q[2]));
    for (int it = 0; it < 20; it++) {
        for (int i = 0; i < n; i++) x[i] = rank * it + i;
        for (int i = 0; i < 3; i++) b[i] = rank == size - 1 ? it * 10 + i : -1;
        if (it % 2) {
            CHECK_RC(MPI_Startall(3, q));
        } else {
            for (int k = 0; k < 3; k++) CHECK_RC(MPI_Start(&q[k]));
        }
        CHECK_RC(MPI_Waitall(3, q, MPI_STATUSES_IGNORE));
        CHECK(q[0] != MPI_REQUEST_NULL, "persistent request freed by wait");
        for (int i = 0; i < n; i++) CHECK(y[i] == (double)it * size * (size - 1) / 2 + (double)size * i, "persistent allreduce it=%d", it);
        for (int i = 0; i < 3; i++) CHECK(b[i] == it * 10 + i, "persistent bcast it=%d", it);
    }
    for (int k = 0; k < 3; k++) CHECK_RC(MPI_Request_free(&q[k]));
    /* A persistent reduce with a user-visible start/test loop. */
    int s = rank + 1, r = 0;
    MPI_Request pr;
    CHECK_RC(MPI_Reduce_init(&s, &r, 1, MPI_INT, MPI_PROD, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &pr));
    for (int it = 0; it < 5; it++) {
        CHECK_RC(MPI_Start(&pr));
        int flag = 0;
        while (!flag) CHECK_RC(MPI_Test(&pr, &flag, MPI_STATUS_IGNORE));
        if (rank == 0) {
            int f = 1;
            for (int k = 1; k <= size; k++) f *= k;
            CHECK(r == f, "persistent reduce it=%d r=%d", it, r);
        }
    }
    CHECK_RC(MPI_Request_free(&pr));
    free(x);
    free(y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int ns[] = {0, 1, 100, 20000};
    for (int k = 0; k < 4; k++) every_nonblocking(MPI_COMM_WORLD, ns[k]);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    every_nonblocking(half, 10);
    MPI_Comm_free(&half);
    more_nonblocking();
    overlap_p2p(10);
    overlap_p2p(100000);
    progress_while_waiting(10);
    progress_while_waiting(200000);
    many_outstanding();
    persistent();
    progress_while_computing(10);
    progress_while_computing(100000);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("coll_nb OK\n");
    MPI_Finalize();
    return 0;
}
