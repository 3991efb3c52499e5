/* Collectives across message sizes: Allreduce (doubles, SUM, in place),
 * Bcast, Allgather, Alltoall (bytes per rank or per pair) and Barrier;
 * Gatherv, Scatterv and Alltoallv (the same bytes from or to every rank,
 * root 0) at 8 bytes and 1 KiB.
 * Iterations adapt to a time budget (argument 1, seconds per case),
 * estimated after a warm-up; the time reported is the slowest rank's mean.
 * Argument 2 (optional, "all" for every one) picks one collective,
 * argument 3 the largest size.
 * Prints one line per case: "name bytes microseconds_per_call". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static char *a, *b;
static int *cnt, *dsp;

static void run(const char *name, int bytes, int iters) {
    int n = bytes / 8 > 0 ? bytes / 8 : 1;
    for (int i = 0; i < size; i++) {
        cnt[i] = bytes;
        dsp[i] = i * bytes;
    }
    for (int i = 0; i < iters; i++) {
        if (!strcmp(name, "allreduce")) MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else if (!strcmp(name, "bcast")) MPI_Bcast(a, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        else if (!strcmp(name, "allgather")) MPI_Allgather(a, bytes, MPI_BYTE, b, bytes, MPI_BYTE, MPI_COMM_WORLD);
        else if (!strcmp(name, "alltoall")) MPI_Alltoall(a, bytes, MPI_BYTE, b, bytes, MPI_BYTE, MPI_COMM_WORLD);
        else if (!strcmp(name, "gatherv")) MPI_Gatherv(a, bytes, MPI_BYTE, b, cnt, dsp, MPI_BYTE, 0, MPI_COMM_WORLD);
        else if (!strcmp(name, "scatterv")) MPI_Scatterv(a, cnt, dsp, MPI_BYTE, b, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        else if (!strcmp(name, "alltoallv")) MPI_Alltoallv(a, cnt, dsp, MPI_BYTE, b, cnt, dsp, MPI_BYTE, MPI_COMM_WORLD);
        else MPI_Barrier(MPI_COMM_WORLD);
    }
}

static double timed(const char *name, int bytes, int iters) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    run(name, bytes, iters);
    double t = (MPI_Wtime() - t0) / iters, worst;
    MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double budget = argc > 1 ? atof(argv[1]) : 0.3;
    const char *only = argc > 2 && strcmp(argv[2], "all") ? argv[2] : NULL;
    int largest = argc > 3 ? atoi(argv[3]) : 1 << 30;
    size_t max = (size_t)1 << 20;
    a = malloc(max * size);
    b = malloc(max * size);
    memset(a, 0, max * size);
    memset(b, 0, max * size);
    cnt = malloc(size * sizeof(int));
    dsp = malloc(size * sizeof(int));
    /* Warm-up of the whole job: its first tens of milliseconds run slower
     * with every library (the ranks settle on the CPUs; an 8-rank Barrier
     * measured first took 11-12 us against 7-8 later in the same run), so
     * Barriers for 0.05 s first, every rank making the same calls (timed()
     * gives all the slowest rank's time). */
    for (double spent = 0; spent < 0.05;) {
        static int n = 1;
        spent += timed("barrier", 0, n) * n;
        if (n < 4096) n *= 2;
    }
    const char *names[] = {"barrier", "allreduce", "bcast", "allgather", "alltoall", "gatherv", "scatterv", "alltoallv"};
    int sizes[] = {8, 1024, 65536, 524288};
    for (int k = 0; k < 8; k++) {
        if (only && strcmp(only, names[k])) continue;
        for (int s = 0; s < 4; s++) {
            if (k == 0 && s > 0) break;
            int bytes = sizes[s];
            if ((k == 3 || k == 4) && bytes > 65536) continue;
            if (k >= 5 && bytes > 1024) continue;
            if (k > 0 && bytes > largest) continue;
            /* The first calls of a case include one-time costs (the first
             * collective on a communicator sets up shared memory, the
             * first use of each of its buffers faults a page in, for 64
             * calls), so estimate in rounds of doubling length, 127 calls
             * in all unless they take half the budget, and keep the last
             * round's time (every rank gets the same slowest-rank times,
             * so all make the same calls). */
            double est, spent = 0;
            int pre = 1;
            do {
                est = timed(names[k], bytes, pre);
                spent += est * pre;
                pre *= 2;
            } while (pre <= 64 && spent < budget / 2);
            int iters = (int)(budget / est);
            if (iters > 100000) iters = 100000;
            if (iters < 3) iters = 3;
            timed(names[k], bytes, iters / 10 + 1);
            double t = timed(names[k], bytes, iters);
            if (rank == 0) {
                printf("%s %d %.3f\n", names[k], k == 0 ? 0 : bytes, t * 1e6);
                fflush(stdout);
            }
        }
    }
    free(a);
    free(b);
    free(cnt);
    free(dsp);
    MPI_Finalize();
    return 0;
}
