/* One-sided communication latency on 2 ranks: rank 0 is the origin, rank 1
 * the target (waiting in MPI_Barrier, which is where a target that needs
 * to enter MPI for progress makes it). Prints "case bytes microseconds"
 * per case: Put/Get/Accumulate + MPI_Win_flush under a shared lock (time to
 * remote completion), Fetch_and_op, an empty MPI_Win_fence, Put + fence;
 * first on a window of MPI_Win_allocate, then ("-create" cases) on one of
 * MPI_Win_create over malloc'ed memory.
 * Each case runs for about `budget` seconds (argv[1], default 0.2). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double budget = 0.2;

/* Iterations for about `budget` seconds of `f`, measured on rank 0 and
 * agreed by both ranks. */
static int calibrate(double once) {
    int n = once > 0 ? (int)(budget / once) : 1000;
    if (n < 10) n = 10;
    if (n > 200000) n = 200000;
    MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return n;
}

typedef enum { PUT, GET, ACC, FOP } Kind;

static void passive(const char *name, Kind k, int bytes, char *src, MPI_Win win, int rank) {
    double once = 0;
    int n = 0;
    for (int phase = 0; phase < 2; phase++) {
        n = phase == 0 ? 20 : calibrate(once);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
            double t = MPI_Wtime();
            long one = 1, old;
            for (int i = 0; i < n; i++) {
                switch (k) {
                case PUT: MPI_Put(src, bytes, MPI_BYTE, 1, 0, bytes, MPI_BYTE, win); break;
                case GET: MPI_Get(src, bytes, MPI_BYTE, 1, 0, bytes, MPI_BYTE, win); break;
                case ACC: MPI_Accumulate(src, bytes / 8, MPI_LONG, 1, 0, bytes / 8, MPI_LONG, MPI_SUM, win); break;
                case FOP: MPI_Fetch_and_op(&one, &old, MPI_LONG, 1, 0, MPI_SUM, win); break;
                }
                MPI_Win_flush(1, win);
            }
            once = (MPI_Wtime() - t) / n;
            MPI_Win_unlock(1, win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0) printf("%s %d %.3f\n", name, bytes, once * 1e6);
}

static void fence(const char *name, int bytes, char *src, MPI_Win win, int rank) {
    double once = 0;
    for (int phase = 0; phase < 2; phase++) {
        int n = phase == 0 ? 20 : calibrate(once);
        MPI_Win_fence(0, win);
        double t = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            if (bytes > 0 && rank == 0) MPI_Put(src, bytes, MPI_BYTE, 1, 0, bytes, MPI_BYTE, win);
            MPI_Win_fence(0, win);
        }
        once = (MPI_Wtime() - t) / n;
        MPI_Bcast(&once, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    }
    if (rank == 0) printf("%s %d %.3f\n", name, bytes, once * 1e6);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc > 1) budget = atof(argv[1]);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "run on 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int max = 1 << 16;
    char *mem, *src = calloc(max, 1), *user = calloc(max, 1);
    for (int flavor = 0; flavor < 2; flavor++) {
        MPI_Win win;
        if (flavor == 0)
            MPI_Win_allocate(max, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
        else
            MPI_Win_create(user, max, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Barrier(MPI_COMM_WORLD);
        const char *sfx = flavor == 0 ? "" : "-create";
        char name[64];
#define CASE(n) (snprintf(name, sizeof name, "%s%s", n, sfx), name)
        passive(CASE("put"), PUT, 8, src, win, rank);
        passive(CASE("put"), PUT, max, src, win, rank);
        passive(CASE("get"), GET, 8, src, win, rank);
        passive(CASE("get"), GET, max, src, win, rank);
        passive(CASE("accumulate"), ACC, 8, src, win, rank);
        passive(CASE("fetch_and_op"), FOP, 8, src, win, rank);
        fence(CASE("fence"), 0, src, win, rank);
        fence(CASE("put+fence"), 8, src, win, rank);
        MPI_Win_free(&win);
    }
    free(user);
    free(src);
    MPI_Finalize();
    return 0;
}
