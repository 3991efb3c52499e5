/* Allreduce of more than the shared-memory large buffers (64 KiB), which
 * with a core per rank runs in shared memory in pieces (or, with
 * MPICORE_COLL_SHM_PIECES_OVERSUB=1, also with more ranks than cores; with
 * MPICORE_COLL_SHM_PIECES=0 through messages): counts around the
 * thresholds (one piece plus a few bytes, the largest size taken, one more
 * element), in place and not, SUM on ints and MAX on doubles checked on
 * every rank, many back to back (more operations than the segment's
 * buffers) mixed with small collectives, a non-commutative user operation
 * (not taken: messages), and, in pieces, counts that differ between ranks
 * (MPI_ERR_TRUNCATE everywhere, the ranks still in step). Then Allgather
 * and Alltoall of blocks around MPICORE_COLL_SHM_DIRECT (16 KiB), which
 * with a core per rank each rank reads straight from the others' buffers:
 * in place and not, and with one rank sending through a strided type or
 * an in-place Alltoall (every rank then takes another path); every block
 * checked on every rank. */
#include "check.h"

static int rank, size;

static int ival(int r, long i) { return 7 * r + (int)(i % 1001); }
static double dval(int r, long i) { return (double)((r * 13 + i) % 97) + 0.25 * r; }

static void sums(long n, int inplace, int it) {
    int *a = malloc(n * sizeof(int)), *b = malloc(n * sizeof(int));
    for (long i = 0; i < n; i++) a[i] = ival(rank, i + it), b[i] = -1;
    if (inplace) CHECK_RC(MPI_Allreduce(MPI_IN_PLACE, a, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    else CHECK_RC(MPI_Allreduce(a, b, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    int *r = inplace ? a : b;
    for (long i = 0; i < n; i++) {
        int want = 7 * size * (size - 1) / 2 + size * (int)((i + it) % 1001);
        CHECK(r[i] == want, "sum n=%ld inplace=%d i=%ld: %d, want %d", n, inplace, i, r[i], want);
    }
    if (!inplace)
        for (long i = 0; i < n; i++) CHECK(a[i] == ival(rank, i + it), "sendbuf changed at %ld", i);
    free(a);
    free(b);
}

static void maxes(long n, int inplace) {
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
    for (long i = 0; i < n; i++) a[i] = dval(rank, i), b[i] = -1;
    if (inplace) CHECK_RC(MPI_Allreduce(MPI_IN_PLACE, a, (int)n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    else CHECK_RC(MPI_Allreduce(a, b, (int)n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    double *r = inplace ? a : b;
    for (long i = 0; i < n; i++) {
        double want = dval(0, i);
        for (int k = 1; k < size; k++) want = dval(k, i) > want ? dval(k, i) : want;
        CHECK(r[i] == want, "max n=%ld inplace=%d i=%ld: %g, want %g", n, inplace, i, r[i], want);
    }
    free(a);
    free(b);
}

/* Non-commutative: the left operand (so the result is rank 0's vector). */
static void left(void *in, void *inout, int *len, MPI_Datatype *t) {
    (void)t;
    memcpy(inout, in, (size_t)*len * sizeof(int));
}

static char bval(int from, int to, long i) { return (char)(from * 31 + to * 7 + i % 251); }

/* Allgather (`a2a` 0) or Alltoall of `blk` bytes per block; `strided`:
 * rank 1 sends through a vector type (every other byte of a buffer). */
static void gathers(int a2a, long blk, int inplace, int strided) {
    long total = blk * size;
    char *s = malloc(2 * total), *r = malloc(total);
    int st = strided && rank == 1;
    MPI_Datatype vec = MPI_DATATYPE_NULL;
    if (st) {
        CHECK_RC(MPI_Type_vector((int)blk, 1, 2, MPI_CHAR, &vec));
        CHECK_RC(MPI_Type_commit(&vec));
    }
    for (long k = 0; k < (a2a ? size : 1); k++)
        for (long i = 0; i < blk; i++) {
            char v = bval(rank, a2a ? (int)k : 0, i);
            if (st) s[k * (2 * blk - 1) + 2 * i] = v; /* the vector's extent: 2 blk - 1 */
            else s[k * blk + i] = v;
        }
    memset(r, -1, total);
    if (inplace) {
        if (a2a) memcpy(r, s, total);
        else memcpy(r + rank * blk, s, blk);
    }
    const void *sb = inplace ? MPI_IN_PLACE : s;
    if (a2a) {
        if (st) CHECK_RC(MPI_Alltoall(sb, 1, vec, r, (int)blk, MPI_CHAR, MPI_COMM_WORLD));
        else CHECK_RC(MPI_Alltoall(sb, (int)blk, MPI_CHAR, r, (int)blk, MPI_CHAR, MPI_COMM_WORLD));
    } else {
        if (st) CHECK_RC(MPI_Allgather(sb, 1, vec, r, (int)blk, MPI_CHAR, MPI_COMM_WORLD));
        else CHECK_RC(MPI_Allgather(sb, (int)blk, MPI_CHAR, r, (int)blk, MPI_CHAR, MPI_COMM_WORLD));
    }
    for (int k = 0; k < size; k++)
        for (long i = 0; i < blk; i++) {
            char want = bval(k, a2a ? rank : 0, i);
            CHECK(r[k * blk + i] == want, "%s blk=%ld inplace=%d strided=%d from %d at %ld: %d, want %d",
                  a2a ? "alltoall" : "allgather", blk, inplace, strided, k, i, r[k * blk + i], want);
        }
    if (st) MPI_Type_free(&vec);
    free(s);
    free(r);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int one = 1, all = 0;
    CHECK_RC(MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD)); /* the segment */
    long counts[] = {16384, 16385, 16384 + 3, 3 * 16384 + 7, 262144, 262145};
    for (int k = 0; k < 6; k++)
        for (int inplace = 0; inplace < 2; inplace++) {
            sums(counts[k], inplace, k);
            maxes(counts[k] / 2 + 1, inplace);
        }
    /* Back to back, more operations than the buffers, with small ones. */
    for (int it = 0; it < 12; it++) {
        sums(100000 + it, it % 2, it);
        int v = rank + it, s = 0;
        CHECK_RC(MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        CHECK(s == size * (size - 1) / 2 + size * it, "small allreduce %d", s);
        CHECK_RC(MPI_Barrier(MPI_COMM_WORLD));
    }
    /* A non-commutative user operation. */
    MPI_Op op;
    CHECK_RC(MPI_Op_create(left, 0, &op));
    long n = 40000;
    int *a = malloc(n * sizeof(int));
    for (long i = 0; i < n; i++) a[i] = ival(rank, i);
    CHECK_RC(MPI_Allreduce(MPI_IN_PLACE, a, (int)n, MPI_INT, op, MPI_COMM_WORLD));
    for (long i = 0; i < n; i++) CHECK(a[i] == ival(0, i), "user op at %ld: %d", i, a[i]);
    MPI_Op_free(&op);
    /* Counts that differ between ranks (in pieces: the messages' algorithms
     * see it on some ranks only). */
    const char *pc = getenv("MPICORE_COLL_SHM_PIECES");
    int *b = malloc(n * sizeof(int));
    if (!pc || atoi(pc) != 0) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int rc = MPI_Allreduce(a, b, rank == 0 ? 20000 : 40000, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "mismatched counts gave %d", rc);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    }
    int v = rank, s = 0;
    CHECK_RC(MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(s == size * (size - 1) / 2, "allreduce after the mismatch: %d", s);
    sums(70000, 0, 3);
    long blks[] = {16383, 16384, 65536, 100000};
    for (int k = 0; k < 4; k++)
        for (int a2a = 0; a2a < 2; a2a++)
            for (int v = 0; v < 3; v++) gathers(a2a, blks[k], v == 1, v == 2);
    free(a);
    free(b);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("coll_pieces OK\n");
    MPI_Finalize();
    return 0;
}
