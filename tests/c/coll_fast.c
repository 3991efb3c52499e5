/* Small blocking collectives in shared memory where the ranks of one
 * operation take different paths: ranks with contiguous data take the
 * library's fast path, ranks describing the same data with a strided
 * derived type take the general one (odd ranks, or every rank in turns),
 * and both must meet in the same operation. Bcast (many back to back, the
 * root rotating, more than the segment's buffers), Allreduce (in place and
 * not), Allgather and Alltoall (in place and not), Barrier; every rank's
 * values checked. Then (in shared memory) mismatched sizes give
 * MPI_ERR_TRUNCATE on the fast path too and the ranks stay in step. With
 * MPICORE_COLL_SHM_MAX=0 the same values go through messages. */
#include "check.h"

#define N 6 /* ints per block */

static int rank, size;

/* Every other int of a buffer of 2 * count ints. */
static MPI_Datatype strided(int count) {
    MPI_Datatype t;
    CHECK_RC(MPI_Type_vector(count, 1, 2, MPI_INT, &t));
    CHECK_RC(MPI_Type_commit(&t));
    return t;
}

/* Whether this rank uses the strided type in round `it`. */
static int odd_path(int it) { return (rank + it) % 2 == 1; }

static int val(int r, int i, int it) { return 1000 * r + 10 * i + it; }

static void bcasts(int it) {
    MPI_Datatype t = strided(N);
    for (int k = 0; k < 150; k++) {
        int root = (k + it) % size, a[2 * N];
        for (int i = 0; i < 2 * N; i++) a[i] = -1;
        int use_t = odd_path(it + k / 7);
        for (int i = 0; i < N; i++)
            if (rank == root) a[use_t ? 2 * i : i] = val(root, i, k);
        if (use_t) CHECK_RC(MPI_Bcast(a, 1, t, root, MPI_COMM_WORLD));
        else CHECK_RC(MPI_Bcast(a, N, MPI_INT, root, MPI_COMM_WORLD));
        for (int i = 0; i < N; i++)
            CHECK(a[use_t ? 2 * i : i] == val(root, i, k), "bcast %d root %d: [%d] = %d", k, root, i, a[use_t ? 2 * i : i]);
        if (use_t)
            for (int i = 0; i < N; i++) CHECK(a[2 * i + 1] == -1, "bcast %d wrote a gap", k);
    }
    MPI_Type_free(&t);
}

static void allreduces(int it) {
    MPI_Datatype t = strided(N);
    int in[2 * N], out[2 * N], s = odd_path(it) ? 2 : 1;
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 2 * N; i++) in[i] = out[i] = -7;
        for (int i = 0; i < N; i++) in[s * i] = val(rank, i, k);
        if (k == 2) memcpy(out, in, sizeof in);
        const void *src = k == 2 ? MPI_IN_PLACE : in;
        if (s == 2) CHECK_RC(MPI_Allreduce(src, out, 1, t, MPI_SUM, MPI_COMM_WORLD));
        else CHECK_RC(MPI_Allreduce(src, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < N; i++) {
            int want = 0;
            for (int r = 0; r < size; r++) want += val(r, i, k);
            CHECK(out[s * i] == want, "allreduce %d: [%d] = %d, want %d", k, i, out[s * i], want);
        }
        if (s == 2)
            for (int i = 0; i < N; i++) CHECK(out[2 * i + 1] == -7, "allreduce wrote a gap");
    }
    MPI_Type_free(&t);
}

/* Allgather (alltoall 0) or Alltoall, in place (k 1) or not. */
static void gathers(int it, int alltoall) {
    int per = N * size; /* ints of a full receive buffer */
    int *snd = malloc(sizeof(int) * 2 * per), *rcv = malloc(sizeof(int) * 2 * per);
    MPI_Datatype blk = strided(N);
    int s = odd_path(it) ? 2 : 1;
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 2 * per; i++) snd[i] = rcv[i] = -5;
        /* Block j of the send buffer is for rank j (Alltoall). */
        for (int j = 0; j < (alltoall ? size : 1); j++)
            for (int i = 0; i < N; i++) snd[s * (j * N + i)] = val(rank, i, j + 100 * k);
        const void *src = snd;
        if (k == 1) {
            src = MPI_IN_PLACE;
            if (alltoall) memcpy(rcv, snd, sizeof(int) * 2 * per);
            else
                for (int i = 0; i < N; i++) rcv[s * (rank * N + i)] = snd[s * i];
        }
        if (s == 2) {
            /* A block of N strided ints spans 2N ints: resize so blocks follow each other. */
            MPI_Datatype r;
            CHECK_RC(MPI_Type_create_resized(blk, 0, (MPI_Aint)(2 * N * sizeof(int)), &r));
            CHECK_RC(MPI_Type_commit(&r));
            if (alltoall) CHECK_RC(MPI_Alltoall(src, 1, r, rcv, 1, r, MPI_COMM_WORLD));
            else CHECK_RC(MPI_Allgather(src, 1, r, rcv, 1, r, MPI_COMM_WORLD));
            MPI_Type_free(&r);
        } else if (alltoall) CHECK_RC(MPI_Alltoall(src, N, MPI_INT, rcv, N, MPI_INT, MPI_COMM_WORLD));
        else CHECK_RC(MPI_Allgather(src, N, MPI_INT, rcv, N, MPI_INT, MPI_COMM_WORLD));
        for (int r = 0; r < size; r++)
            for (int i = 0; i < N; i++) {
                int want = val(r, i, (alltoall ? rank : 0) + 100 * k);
                CHECK(rcv[s * (r * N + i)] == want, "%s %d: from %d [%d] = %d, want %d", alltoall ? "alltoall" : "allgather", k, r, i,
                      rcv[s * (r * N + i)], want);
                if (s == 2) CHECK(rcv[2 * (r * N + i) + 1] == -5, "wrote a gap");
            }
    }
    MPI_Type_free(&blk);
    free(snd);
    free(rcv);
}

/* Sizes that differ between ranks: the ranks that see the difference get
 * MPI_ERR_TRUNCATE, the others succeed, and all go on in step. */
static void mismatches(void) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int a[2 * N] = {0}, b[2 * N * 16] = {0};
    int n = rank == 0 ? N : N - 1;
    int rc = MPI_Bcast(a, n, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) CHECK(rc == MPI_SUCCESS, "bcast root gave %d", rc);
    else CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "bcast mismatch gave %d", rc);
    rc = MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "allreduce mismatch gave %d", rc);
    rc = MPI_Allgather(a, n, MPI_INT, b, n, MPI_INT, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "allgather mismatch gave %d", rc);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    /* Still in step. */
    int v = rank, s = 0;
    CHECK_RC(MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(s == size * (size - 1) / 2, "allreduce after the mismatches: %d", s);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int it = 0; it < 3; it++) {
        bcasts(it);
        allreduces(it);
        gathers(it, 0);
        gathers(it, 1);
        CHECK_RC(MPI_Barrier(MPI_COMM_WORLD));
    }
    const char *max = getenv("MPICORE_COLL_SHM_MAX");
    if (size > 1 && !(max && atoi(max) == 0)) mismatches();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("coll_fast OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
