/* Derived datatypes in point-to-point communication: halo exchange with
 * vector types, a vector into a contiguous receive and back, matrix blocks
 * with subarrays, structs at absolute addresses from MPI_BOTTOM, a
 * block-cyclic darray checked element by element (C and Fortran order),
 * resized types in arrays, partial receives with Get_elements, large
 * non-contiguous messages (rendezvous), and a type freed while in use. */
#include "check.h"
#include <stddef.h>

static int rank, size;

/* Ghost exchange on a ring of ranks: each owns an R x C block of a grid
 * with one ghost layer; columns go left/right as vector types. */
static void halo(void) {
    enum { R = 50, C = 40, LD = C + 2 };
    static double g[R + 2][LD];
    for (int i = 0; i < R + 2; i++)
        for (int j = 0; j < LD; j++) g[i][j] = (i >= 1 && i <= R && j >= 1 && j <= C) ? rank * 100000 + i * 100 + j : -1;
    MPI_Datatype col;
    CHECK_RC(MPI_Type_vector(R, 1, LD, MPI_DOUBLE, &col));
    CHECK_RC(MPI_Type_commit(&col));
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    /* Send my last interior column right, receive my left ghost column. */
    CHECK_RC(MPI_Sendrecv(&g[1][C], 1, col, right, 1, &g[1][0], 1, col, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_RC(MPI_Sendrecv(&g[1][1], 1, col, left, 2, &g[1][C + 1], 1, col, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 1; i <= R; i++) {
        CHECK(g[i][0] == left * 100000 + i * 100 + C, "left ghost row %d: %g", i, g[i][0]);
        CHECK(g[i][C + 1] == right * 100000 + i * 100 + 1, "right ghost row %d: %g", i, g[i][C + 1]);
    }
    CHECK(g[0][0] == -1 && g[R + 1][0] == -1, "corners untouched");
    /* Nonblocking, with a whole-column count of 2 interleaved columns. */
    MPI_Datatype col2;
    CHECK_RC(MPI_Type_create_resized(col, 0, sizeof(double), &col2));
    CHECK_RC(MPI_Type_commit(&col2));
    MPI_Request rq[2];
    static double recv2[R + 2][LD];
    memset(recv2, 0, sizeof recv2);
    CHECK_RC(MPI_Irecv(&recv2[1][1], 2, col2, left, 3, MPI_COMM_WORLD, &rq[0]));
    CHECK_RC(MPI_Isend(&g[1][C - 1], 2, col2, right, 3, MPI_COMM_WORLD, &rq[1]));
    CHECK_RC(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    for (int i = 1; i <= R; i++)
        for (int j = 0; j < 2; j++)
            CHECK(recv2[i][1 + j] == left * 100000 + i * 100 + C - 1 + j, "two columns (%d,%d): %g", i, j, recv2[i][1 + j]);
    MPI_Type_free(&col);
    MPI_Type_free(&col2);
}

/* A column sent as a vector, received as contiguous doubles, and back into
 * a different column. */
static void vector_contiguous(void) {
    enum { N = 30 };
    double m[N][N], v[N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) m[i][j] = i * N + j;
    MPI_Datatype col;
    CHECK_RC(MPI_Type_vector(N, 1, N, MPI_DOUBLE, &col));
    CHECK_RC(MPI_Type_commit(&col));
    MPI_Status st;
    int n;
    if (rank == 0) {
        CHECK_RC(MPI_Send(&m[0][3], 1, col, 1, 10, MPI_COMM_WORLD));
        double back[N][N];
        memset(back, 0, sizeof back);
        CHECK_RC(MPI_Recv(&back[0][7], 1, col, 1, 11, MPI_COMM_WORLD, &st));
        CHECK_RC(MPI_Get_count(&st, col, &n));
        CHECK(n == 1, "count of columns %d", n);
        for (int i = 0; i < N; i++) CHECK(back[i][7] == i * N + 3 + 0.5, "column back %d: %g", i, back[i][7]);
        CHECK(back[0][6] == 0 && back[1][8] == 0, "neighbours untouched");
    } else if (rank == 1) {
        CHECK_RC(MPI_Recv(v, N, MPI_DOUBLE, 0, 10, MPI_COMM_WORLD, &st));
        CHECK_RC(MPI_Get_count(&st, MPI_DOUBLE, &n));
        CHECK(n == N, "count %d", n);
        for (int i = 0; i < N; i++) CHECK(v[i] == i * N + 3, "v[%d] = %g", i, v[i]);
        for (int i = 0; i < N; i++) v[i] += 0.5;
        CHECK_RC(MPI_Send(v, N, MPI_DOUBLE, 0, 11, MPI_COMM_WORLD));
    }
    MPI_Type_free(&col);
}

/* Rank 0 scatters blocks of a matrix with subarray types and gathers them
 * back transposed-in-place into another matrix. */
static void subarray_blocks(void) {
    enum { B = 6 };
    int n = B * size;
    int *a = malloc(sizeof(int) * n * n), *b = malloc(sizeof(int) * n * n), blk[B][B];
    for (int i = 0; i < n * n; i++) a[i] = i, b[i] = -1;
    /* Rank r gets the B x B block of rows [0,B) and columns [rB, rB+B). */
    int sizes[] = {n, n}, subs[] = {B, B};
    if (rank == 0) {
        MPI_Request *rq = malloc(sizeof(MPI_Request) * size);
        MPI_Datatype *t = malloc(sizeof(MPI_Datatype) * size);
        for (int r = 0; r < size; r++) {
            int starts[] = {0, r * B};
            CHECK_RC(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t[r]));
            CHECK_RC(MPI_Type_commit(&t[r]));
            CHECK_RC(MPI_Isend(a, 1, t[r], r, 20, MPI_COMM_WORLD, &rq[r]));
        }
        CHECK_RC(MPI_Recv(blk, B * B, MPI_INT, 0, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_RC(MPI_Waitall(size, rq, MPI_STATUSES_IGNORE));
        /* Gather: block r goes to rows [rB, rB+B), columns [0, B). */
        for (int r = 0; r < size; r++) {
            MPI_Type_free(&t[r]);
            int starts[] = {r * B, 0};
            CHECK_RC(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t[r]));
            CHECK_RC(MPI_Type_commit(&t[r]));
            CHECK_RC(MPI_Irecv(b, 1, t[r], r, 21, MPI_COMM_WORLD, &rq[r]));
        }
        CHECK_RC(MPI_Send(blk, B * B, MPI_INT, 0, 21, MPI_COMM_WORLD));
        CHECK_RC(MPI_Waitall(size, rq, MPI_STATUSES_IGNORE));
        for (int r = 0; r < size; r++) MPI_Type_free(&t[r]);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                int want = j < B ? a[(i % B) * n + (i / B) * B + j] : -1;
                CHECK(b[i * n + j] == want, "gathered (%d,%d) = %d want %d", i, j, b[i * n + j], want);
            }
        free(rq);
        free(t);
    } else {
        CHECK_RC(MPI_Recv(blk, B * B, MPI_INT, 0, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < B; i++)
            for (int j = 0; j < B; j++) CHECK(blk[i][j] == i * n + rank * B + j, "block (%d,%d) = %d", i, j, blk[i][j]);
        CHECK_RC(MPI_Send(blk, B * B, MPI_INT, 0, 21, MPI_COMM_WORLD));
    }
    free(a);
    free(b);
}

/* A struct type over separate variables, at absolute addresses. */
static void bottom_struct(void) {
    int count;
    double vals[3];
    char tag[5];
    MPI_Datatype t;
    int bl[] = {1, 3, 5};
    MPI_Aint d[3];
    MPI_Datatype ty[] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    MPI_Get_address(&count, &d[0]);
    MPI_Get_address(vals, &d[1]);
    MPI_Get_address(tag, &d[2]);
    CHECK_RC(MPI_Type_create_struct(3, bl, d, ty, &t));
    CHECK_RC(MPI_Type_commit(&t));
    int partner = rank ^ 1;
    if (partner >= size) {
        MPI_Type_free(&t);
        return;
    }
    if (rank % 2 == 0) {
        count = 42 + rank;
        vals[0] = 1.25, vals[1] = -2.5, vals[2] = rank;
        memcpy(tag, "abcd", 5);
        CHECK_RC(MPI_Send(MPI_BOTTOM, 1, t, partner, 30, MPI_COMM_WORLD));
    } else {
        count = 0;
        memset(vals, 0, sizeof vals);
        memset(tag, 0, sizeof tag);
        MPI_Status st;
        CHECK_RC(MPI_Recv(MPI_BOTTOM, 1, t, partner, 30, MPI_COMM_WORLD, &st));
        CHECK(count == 42 + partner && vals[0] == 1.25 && vals[1] == -2.5 && vals[2] == partner && strcmp(tag, "abcd") == 0,
              "struct at MPI_BOTTOM: %d %g %g %g %s", count, vals[0], vals[1], vals[2], tag);
        int n;
        CHECK_RC(MPI_Get_elements(&st, t, &n));
        CHECK(n == 9, "elements %d", n);
    }
    MPI_Type_free(&t);
}

/* Global indices a process owns along one dimension, increasing. */
static int owned(int g, int b, int p, int c, int *out) {
    int n = 0;
    for (int i = 0; i < g; i++)
        if ((i / b) % p == c) out[n++] = i;
    return n;
}

/* Rank 0 sends each rank its part of a global array with that rank's
 * darray type; each rank receives contiguous values and checks them. */
static void darray_check(int order) {
    enum { G0 = 11, G1 = 9 };
    int p0 = size, p1 = 1;
    if (size % 2 == 0 && size > 2) p0 = 2, p1 = size / 2;
    int gs[] = {G0, G1}, dist[] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_CYCLIC}, dargs[] = {2, 3}, ps[] = {p0, p1};
    double glob[G0 * G1];
    for (int i = 0; i < G0 * G1; i++) glob[i] = i + 0.25;
    MPI_Request *rq = malloc(sizeof(MPI_Request) * size);
    MPI_Datatype *t = malloc(sizeof(MPI_Datatype) * size);
    if (rank == 0) {
        for (int r = 0; r < size; r++) {
            CHECK_RC(MPI_Type_create_darray(size, r, 2, gs, dist, dargs, ps, order, MPI_DOUBLE, &t[r]));
            CHECK_RC(MPI_Type_commit(&t[r]));
            MPI_Aint lb, ext;
            MPI_Type_get_extent(t[r], &lb, &ext);
            CHECK(lb == 0 && ext == (MPI_Aint)sizeof glob, "darray extent %ld", (long)ext);
            CHECK_RC(MPI_Isend(glob, 1, t[r], r, 40, MPI_COMM_WORLD, &rq[r]));
        }
    }
    int rows[G0], cols[G1];
    int c0 = rank / p1, c1 = rank % p1;
    int nr = owned(G0, 2, p0, c0, rows), nc = owned(G1, 3, p1, c1, cols);
    double loc[G0 * G1];
    MPI_Status st;
    CHECK_RC(MPI_Recv(loc, G0 * G1, MPI_DOUBLE, 0, 40, MPI_COMM_WORLD, &st));
    int n;
    MPI_Get_count(&st, MPI_DOUBLE, &n);
    CHECK(n == nr * nc, "darray rank %d: %d values, want %d x %d", rank, n, nr, nc);
    for (int i = 0; i < nr; i++)
        for (int j = 0; j < nc; j++) {
            double want, got;
            if (order == MPI_ORDER_C) {
                want = rows[i] * G1 + cols[j] + 0.25;
                got = loc[i * nc + j];
            } else {
                want = rows[i] + cols[j] * G0 + 0.25;
                got = loc[i + j * nr];
            }
            CHECK(got == want, "darray order %d rank %d local (%d,%d): %g want %g", order, rank, i, j, got, want);
        }
    if (rank == 0) {
        CHECK_RC(MPI_Waitall(size, rq, MPI_STATUSES_IGNORE));
        for (int r = 0; r < size; r++) MPI_Type_free(&t[r]);
    }
    free(rq);
    free(t);
}

/* Every third int of an array through a resized type. */
static void resized_array(void) {
    enum { N = 100 };
    int a[3 * N], b[N];
    for (int i = 0; i < 3 * N; i++) a[i] = i;
    MPI_Datatype r;
    CHECK_RC(MPI_Type_create_resized(MPI_INT, 0, 3 * sizeof(int), &r));
    CHECK_RC(MPI_Type_commit(&r));
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    CHECK_RC(MPI_Sendrecv(a + 1, N, r, to, 50, b, N, MPI_INT, from, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < N; i++) CHECK(b[i] == 3 * i + 1, "resized b[%d] = %d", i, b[i]);
    /* And into the resized type on the receiving side. */
    int c[3 * N];
    memset(c, 0, sizeof c);
    CHECK_RC(MPI_Sendrecv(b, N, MPI_INT, to, 51, c + 2, N, r, from, 51, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < N; i++) CHECK(c[3 * i + 2] == 3 * i + 1 && c[3 * i] == 0, "resized recv %d", i);
    MPI_Type_free(&r);
}

/* A message carrying 2.5 elements of a {int, double} struct type. */
static void partial(void) {
    struct s { int i; double d; } in[4], out[3] = {{1, 1.5}, {2, 2.5}, {3, 3.5}};
    MPI_Datatype t;
    int bl[] = {1, 1};
    MPI_Aint d[] = {offsetof(struct s, i), offsetof(struct s, d)};
    MPI_Datatype ty[] = {MPI_INT, MPI_DOUBLE};
    CHECK_RC(MPI_Type_create_struct(2, bl, d, ty, &t));
    CHECK_RC(MPI_Type_commit(&t));
    if (rank == 0) {
        /* Send the signature int,double,int,double,int: 2 structs + an int. */
        MPI_Datatype part;
        int pbl[] = {2, 1};
        MPI_Aint pd[] = {0, 2 * sizeof(struct s)};
        MPI_Datatype pty[] = {t, MPI_INT};
        CHECK_RC(MPI_Type_create_struct(2, pbl, pd, pty, &part));
        CHECK_RC(MPI_Type_commit(&part));
        CHECK_RC(MPI_Send(out, 1, part, 1, 60, MPI_COMM_WORLD));
        MPI_Type_free(&part);
    } else if (rank == 1) {
        memset(in, 0, sizeof in);
        MPI_Status st;
        CHECK_RC(MPI_Recv(in, 4, t, 0, 60, MPI_COMM_WORLD, &st));
        int n, e;
        MPI_Count ex;
        CHECK_RC(MPI_Get_count(&st, t, &n));
        CHECK_RC(MPI_Get_elements(&st, t, &e));
        CHECK_RC(MPI_Get_elements_x(&st, t, &ex));
        CHECK(n == MPI_UNDEFINED && e == 5 && ex == 5, "partial: count %d elements %d", n, e);
        CHECK(in[0].i == 1 && in[1].d == 2.5 && in[2].i == 3 && in[2].d == 0, "partial values");
    }
    MPI_Type_free(&t);
}

/* Large non-contiguous messages (well above the eager limit). */
static void large(void) {
    enum { N = 200000 };
    double *a = malloc(sizeof(double) * 3 * N), *b = malloc(sizeof(double) * 3 * N);
    for (int i = 0; i < 3 * N; i++) a[i] = rank * 1e7 + i, b[i] = -1;
    MPI_Datatype v3, v2;
    CHECK_RC(MPI_Type_vector(N, 1, 3, MPI_DOUBLE, &v3));
    CHECK_RC(MPI_Type_vector(N, 1, 2, MPI_DOUBLE, &v2));
    CHECK_RC(MPI_Type_commit(&v3));
    CHECK_RC(MPI_Type_commit(&v2));
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    /* Strided to strided (different strides). */
    MPI_Request rq[2];
    CHECK_RC(MPI_Irecv(b, 1, v2, from, 70, MPI_COMM_WORLD, &rq[0]));
    CHECK_RC(MPI_Isend(a + 1, 1, v3, to, 70, MPI_COMM_WORLD, &rq[1]));
    /* Freed while the operations are pending: they keep the type. */
    CHECK_RC(MPI_Type_free(&v3));
    CHECK_RC(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    for (int i = 0; i < N; i++) CHECK(b[2 * i] == from * 1e7 + 3 * i + 1, "large strided %d: %g", i, b[2 * i]);
    for (int i = 0; i < N; i++) CHECK(b[2 * i + 1] == -1, "gap %d touched", i);
    /* Strided to contiguous and back. */
    double *c = malloc(sizeof(double) * N);
    CHECK_RC(MPI_Sendrecv(b, 1, v2, to, 71, c, N, MPI_DOUBLE, from, 71, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    int ff = (from + size - 1) % size;
    for (int i = 0; i < N; i++) CHECK(c[i] == ff * 1e7 + 3 * i + 1, "large to contiguous %d", i);
    memset(b, 0, sizeof(double) * 3 * N);
    CHECK_RC(MPI_Sendrecv(c, N, MPI_DOUBLE, to, 72, b + 1, 1, v2, from, 72, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    int fff = (ff + size - 1) % size;
    for (int i = 0; i < N; i++) CHECK(b[2 * i + 1] == fff * 1e7 + 3 * i + 1 && b[2 * i] == 0, "large from contiguous %d", i);
    /* A short message into the large type: the receive is partial. */
    MPI_Status st;
    CHECK_RC(MPI_Sendrecv(c, 1000, MPI_DOUBLE, to, 73, b, 1, v2, from, 73, MPI_COMM_WORLD, &st));
    int e;
    MPI_Get_elements(&st, v2, &e);
    CHECK(e == 1000, "elements of a short message %d", e);
    MPI_Type_free(&v2);
    free(a);
    free(b);
    free(c);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    halo();
    if (size >= 2) vector_contiguous();
    subarray_blocks();
    bottom_struct();
    darray_check(MPI_ORDER_C);
    darray_check(MPI_ORDER_FORTRAN);
    resized_array();
    if (size >= 2) partial();
    large();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("dt_comm OK\n");
    MPI_Finalize();
    return 0;
}
