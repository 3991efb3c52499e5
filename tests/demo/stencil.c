/* The sample application of the README's first command: a 1-D heat
 * diffusion with halo exchange (Sendrecv / Isend+Irecv), a global residual
 * (Allreduce) every few steps, a broadcast of parameters and a final gather.
 * Rank 0 does a little more work, so the trace shows waiting. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int params[2] = {20000, 200}; /* cells per rank, steps */
    MPI_Bcast(params, 2, MPI_INT, 0, MPI_COMM_WORLD);
    int n = params[0], steps = params[1];
    double *u = calloc(n + 2, sizeof(double)), *v = calloc(n + 2, sizeof(double));
    for (int i = 1; i <= n; i++) u[i] = sin((rank * n + i) * 0.001);
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    double residual = 0;
    for (int s = 0; s < steps; s++) {
        if (s % 2) {
            MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 0, &u[n + 1], 1, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Sendrecv(&u[n], 1, MPI_DOUBLE, right, 1, &u[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Request q[4];
            MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &q[0]);
            MPI_Irecv(&u[n + 1], 1, MPI_DOUBLE, right, 3, MPI_COMM_WORLD, &q[1]);
            MPI_Isend(&u[n], 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &q[2]);
            MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, &q[3]);
            MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
        }
        int work = rank == 0 ? 3 : 1;
        for (int w = 0; w < work; w++)
            for (int i = 1; i <= n; i++) v[i] = u[i] + 0.25 * (u[i - 1] - 2 * u[i] + u[i + 1]);
        double *t = u; u = v; v = t;
        if (s % 10 == 9) {
            double local = 0;
            for (int i = 1; i <= n; i++) local += fabs(u[i] - v[i]);
            MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
    }
    double mine = u[n / 2], *all = rank == 0 ? malloc(size * sizeof(double)) : NULL;
    MPI_Gather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("stencil: %d ranks x %d cells, %d steps, residual %.6e\n", size, n, steps, residual);
        free(all);
    }
    free(u); free(v);
    MPI_Finalize();
    return 0;
}
