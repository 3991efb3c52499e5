/* Derived-datatype benchmark: strided messages and packing.
 * Ranks 0 and 1 exchange messages; rank 0 alone packs (the others wait).
 * Prints one line per case: "name microseconds_per_operation".
 *
 *   halo_col      2-D halo exchange: Sendrecv of one column of a 1024x1026
 *                 grid of doubles (vector of 1024 doubles, stride 1026)
 *   strided_2MB   ping-pong of a vector of 262144 doubles with stride 2 into
 *                 a contiguous receive (half round trip)
 *   pack_vec      MPI_Pack of a vector of 65536 doubles, stride 4 (512 KiB)
 *   unpack_vec    MPI_Unpack of the same
 *   pack_sub      MPI_Pack of a 512x512 subarray of a 1024x1024 double matrix
 *   unpack_sub    MPI_Unpack of the same
 *   pack_small    MPI_Pack of a vector of 64 doubles, stride 8 (512 B)
 *
 * Arguments: [scale [cases [cpu]]]: iterations are divided by `scale`;
 * `cases`, a comma-separated list of case names, runs only those ("all":
 * every case, the default); `cpu`: time with the calling thread's CPU time
 * instead of MPI_Wtime (for the cases only rank 0 runs, on a loaded machine:
 * the time spent descheduled is left out).
 * Every buffer is written before its case is timed, and each case runs a
 * warm-up of a tenth of its iterations first.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank;
static const char *only;
static int cputime;

/* Seconds, wall clock or (with `cpu`) this thread's CPU time. */
static double now(void) {
    if (!cputime) return MPI_Wtime();
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Whether case `name` is selected by the `cases` argument. */
static int want(const char *name) {
    if (!only || strcmp(only, "all") == 0) return 1;
    size_t n = strlen(name);
    for (const char *p = only; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && strncmp(p, name, n) == 0) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

static void report(const char *name, double t, int iters) {
    if (rank == 0) {
        printf("%s %.3f\n", name, t / iters * 1e6);
        fflush(stdout);
    }
}

/* Times `iters` calls of `op` (after a warm-up) on the ranks below `who`
 * (2: the pair communicates; 1: rank 0 alone packs, the others wait). */
#define TIME(name, iters, who, op)                               \
    do {                                                         \
        if (!want(name)) break;                                  \
        MPI_Barrier(MPI_COMM_WORLD);                             \
        double t0 = 0;                                           \
        for (int it_ = -(iters) / 10 - 1; it_ < (iters); it_++) { \
            if (it_ == 0) t0 = now();                            \
            if (rank < (who)) { op; }                            \
        }                                                        \
        report(name, now() - t0, iters);                          \
    } while (0)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    only = argc > 2 ? argv[2] : NULL;
    cputime = argc > 3 && strcmp(argv[3], "cpu") == 0;
    int peer = 1 - rank;

    /* Halo column exchange. */
    enum { R = 1024, LD = 1026 };
    double *grid = malloc(sizeof(double) * (R + 2) * LD);
    for (long i = 0; i < (long)(R + 2) * LD; i++) grid[i] = i;
    MPI_Datatype col;
    MPI_Type_vector(R, 1, LD, MPI_DOUBLE, &col);
    MPI_Type_commit(&col);
    TIME("halo_col", 4000 / scale, 2,
         MPI_Sendrecv(grid + LD + LD - 2, 1, col, peer, 1, grid + LD, 1, col, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));

    /* Large strided message into a contiguous buffer. */
    enum { NS = 262144 };
    double *big = malloc(sizeof(double) * 2 * NS), *flat = malloc(sizeof(double) * NS);
    for (long i = 0; i < 2L * NS; i++) big[i] = i;
    MPI_Datatype str2;
    MPI_Type_vector(NS, 1, 2, MPI_DOUBLE, &str2);
    MPI_Type_commit(&str2);
    TIME("strided_2MB", 400 / scale, 2, {
        if (rank == 0) {
            MPI_Send(big, 1, str2, 1, 2, MPI_COMM_WORLD);
            MPI_Recv(big, 1, str2, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(flat, NS, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(flat, NS, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD);
        }
    });

    /* Pack / unpack of a vector. */
    enum { NV = 65536 };
    double *src = malloc(sizeof(double) * 4 * NV);
    for (long i = 0; i < 4L * NV; i++) src[i] = i;
    MPI_Datatype v4;
    MPI_Type_vector(NV, 1, 4, MPI_DOUBLE, &v4);
    MPI_Type_commit(&v4);
    int psize;
    MPI_Pack_size(1, v4, MPI_COMM_WORLD, &psize);
    char *pbuf = malloc(psize);
    memset(pbuf, 0, psize);
    int pos;
    TIME("pack_vec", 2000 / scale, 1, { pos = 0; MPI_Pack(src, 1, v4, pbuf, psize, &pos, MPI_COMM_WORLD); });
    TIME("unpack_vec", 2000 / scale, 1, { pos = 0; MPI_Unpack(pbuf, psize, &pos, src, 1, v4, MPI_COMM_WORLD); });

    /* Pack / unpack of a subarray. */
    enum { G = 1024, S = 512 };
    double *mat = malloc(sizeof(double) * G * G);
    for (long i = 0; i < (long)G * G; i++) mat[i] = i;
    int sizes[] = {G, G}, subs[] = {S, S}, starts[] = {100, 200};
    MPI_Datatype sub;
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_DOUBLE, &sub);
    MPI_Type_commit(&sub);
    int ssize;
    MPI_Pack_size(1, sub, MPI_COMM_WORLD, &ssize);
    char *sbuf = malloc(ssize);
    memset(sbuf, 0, ssize);
    TIME("pack_sub", 1000 / scale, 1, { pos = 0; MPI_Pack(mat, 1, sub, sbuf, ssize, &pos, MPI_COMM_WORLD); });
    TIME("unpack_sub", 1000 / scale, 1, { pos = 0; MPI_Unpack(sbuf, ssize, &pos, mat, 1, sub, MPI_COMM_WORLD); });

    /* Small strided pack: per-call overhead. */
    MPI_Datatype v8;
    MPI_Type_vector(64, 1, 8, MPI_DOUBLE, &v8);
    MPI_Type_commit(&v8);
    TIME("pack_small", 200000 / scale, 1, { pos = 0; MPI_Pack(src, 1, v8, pbuf, psize, &pos, MPI_COMM_WORLD); });

    MPI_Type_free(&col);
    MPI_Type_free(&str2);
    MPI_Type_free(&v4);
    MPI_Type_free(&sub);
    MPI_Type_free(&v8);
    free(grid);
    free(big);
    free(flat);
    free(src);
    free(pbuf);
    free(mat);
    free(sbuf);
    MPI_Finalize();
    return 0;
}
