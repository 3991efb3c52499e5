/* Microbenchmarks measured the way the OSU micro-benchmarks measure them
 * (written here from their published method, not their code), so that the
 * figures compare with what users run:
 *
 *   latency    2 ranks, ping-pong; per size a warm-up, then the time of
 *              `iters` round trips / 2 (osu_latency)
 *   bw         2 ranks, windowed: rank 0 posts WINDOW MPI_Isend, MPI_Waitall,
 *              rank 1 the matching MPI_Irecv, then a 4-byte ack; bytes per
 *              second over all windows, and messages per second (osu_bw,
 *              osu_mbw_mr with one pair)
 *   bcast, allreduce, reduce, alltoall, barrier
 *              every rank times each call (MPI_Wtime around it, a barrier
 *              after it, untimed), averages over the iterations after the
 *              warm-up; then min, average and max over the ranks
 *              (osu_bcast, osu_allreduce, ...)
 *
 * Usage: osu MODE [MAX_BYTES] [SCALE]   (SCALE divides the iterations)
 * Output: one line per size, "MODE BYTES VALUE [MIN MAX]", rank 0 only:
 * latency and collectives in microseconds, bw in MB/s followed by
 * messages/s. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64
#define LARGE 8192

static int rank, size, scale = 1;

static int iters_for(int bytes, int small, int large) {
    int n = (bytes > LARGE ? large : small) / scale;
    return n > 0 ? n : 1;
}

static void latency(char *s, char *r, int max) {
    for (int n = 0; n <= max; n = n ? n * 2 : 1) {
        int iters = iters_for(n, 10000, 1000), skip = iters_for(n, 100, 10);
        double t0 = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < iters + skip; i++) {
            if (i == skip) t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(s, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(r, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(r, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(s, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
        }
        double us = (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
        if (rank == 0) printf("latency %d %.3f\n", n, us);
    }
}

static void bw(char *s, char *r, int max) {
    MPI_Request q[WINDOW];
    char ack[4] = {0};
    for (int n = 1; n <= max; n *= 2) {
        int iters = iters_for(n, 100, 20), skip = iters_for(n, 10, 2);
        double t0 = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < iters + skip; i++) {
            if (i == skip) t0 = MPI_Wtime();
            if (rank == 0) {
                for (int w = 0; w < WINDOW; w++) MPI_Isend(s, n, MPI_CHAR, 1, 100, MPI_COMM_WORLD, &q[w]);
                MPI_Waitall(WINDOW, q, MPI_STATUSES_IGNORE);
                MPI_Recv(ack, 4, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                for (int w = 0; w < WINDOW; w++) MPI_Irecv(r, n, MPI_CHAR, 0, 100, MPI_COMM_WORLD, &q[w]);
                MPI_Waitall(WINDOW, q, MPI_STATUSES_IGNORE);
                MPI_Send(ack, 4, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
            }
        }
        double secs = MPI_Wtime() - t0;
        double msgs = (double)iters * WINDOW;
        if (rank == 0) printf("bw %d %.2f %.0f\n", n, msgs * n / secs / 1e6, msgs / secs);
    }
}

enum coll { BCAST, ALLREDUCE, REDUCE, ALLTOALL, BARRIER };

static void one(enum coll c, char *s, char *r, int n) {
    switch (c) {
    case BCAST: MPI_Bcast(s, n, MPI_CHAR, 0, MPI_COMM_WORLD); break;
    case ALLREDUCE: MPI_Allreduce(s, r, n / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case REDUCE: MPI_Reduce(s, r, n / 4, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD); break;
    case ALLTOALL: MPI_Alltoall(s, n, MPI_CHAR, r, n, MPI_CHAR, MPI_COMM_WORLD); break;
    case BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
    }
}

static void coll_size(enum coll c, const char *name, char *s, char *r, int n) {
    int iters = iters_for(n, 1000, 100), skip = iters_for(n, 100, 10);
    double sum = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters + skip; i++) {
        double t = MPI_Wtime();
        one(c, s, r, n);
        t = MPI_Wtime() - t;
        if (i >= skip) sum += t;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    double mine = sum * 1e6 / iters, lo, hi, avg;
    MPI_Reduce(&mine, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &avg, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%s %d %.3f %.3f %.3f\n", name, n, avg / size, lo, hi);
}

static void coll(enum coll c, const char *name, char *s, char *r, int max) {
    if (c == BARRIER) {
        coll_size(c, name, s, r, 0);
        return;
    }
    /* Reductions work on floats: sizes from 4 bytes. */
    for (int n = c == ALLREDUCE || c == REDUCE ? 4 : 1; n <= max; n *= 2) coll_size(c, name, s, r, n);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "latency";
    int max = argc > 2 ? atoi(argv[2]) : 1 << 20;
    if (argc > 3) scale = atoi(argv[3]) > 0 ? atoi(argv[3]) : 1;
    /* Alltoall sends max bytes to every rank. */
    size_t cap = (size_t)max * (strcmp(mode, "alltoall") ? 1 : size) + 64;
    char *s = malloc(cap), *r = malloc(cap);
    memset(s, 1, cap);
    memset(r, 0, cap);
    if (!strcmp(mode, "latency") || !strcmp(mode, "bw")) {
        if (size < 2) {
            if (rank == 0) fprintf(stderr, "%s needs 2 ranks\n", mode);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (mode[0] == 'l') latency(s, r, max); else bw(s, r, max);
    } else if (!strcmp(mode, "bcast")) coll(BCAST, mode, s, r, max);
    else if (!strcmp(mode, "allreduce")) coll(ALLREDUCE, mode, s, r, max);
    else if (!strcmp(mode, "reduce")) coll(REDUCE, mode, s, r, max);
    else if (!strcmp(mode, "alltoall")) coll(ALLTOALL, mode, s, r, max);
    else if (!strcmp(mode, "barrier")) coll(BARRIER, mode, s, r, max);
    else {
        if (rank == 0) fprintf(stderr, "unknown mode %s\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
