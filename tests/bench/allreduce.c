/* MPI_Allreduce (MPI_SUM of doubles, MPI_IN_PLACE) of 1 and 65536 doubles
 * after a barrier. The number of iterations adapts to a time budget (so an
 * implementation that is slow when oversubscribed still finishes), the
 * time reported is the slowest rank's mean.
 * Prints one line per size: "doubles microseconds_per_call". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double timed(double *buf, int n, int iters) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double t = (MPI_Wtime() - t0) / iters, worst;
    MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double budget = argc > 1 ? atof(argv[1]) : 1.0;
    int sizes[] = {1, 65536};
    double *buf = malloc(65536 * sizeof(double));
    for (int k = 0; k < 2; k++) {
        int n = sizes[k];
        for (int i = 0; i < n; i++) buf[i] = 1.0 / (i + 1);
        double est = timed(buf, n, 5);
        int iters = (int)(budget / est);
        if (iters > 100000) iters = 100000;
        if (iters < 5) iters = 5;
        timed(buf, n, iters / 10 + 1);
        double t = timed(buf, n, iters);
        if (rank == 0) {
            printf("%d %.3f\n", n, t * 1e6);
            fflush(stdout);
        }
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
