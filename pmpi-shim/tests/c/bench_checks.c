/* The cost of what the shim records for the correctness checks
 * (benches/checks.sh): `commit N` makes, commits and frees a vector and a
 * struct of it N times (the signature walk runs at each commit); `isend N
 * BYTES` exchanges BYTES between 2 ranks (or 1 and itself) N times with MPI_Isend/MPI_Irecv/
 * MPI_Waitall (the request bookkeeping, and with MPITRACE_CHECK_BUFFERS=1
 * two checksums of each send buffer); `isendv N BYTES` the same with a
 * strided vector of doubles (checksums of packed data). Prints ns per
 * iteration on rank 0. Run on 1 rank (messages to itself) or 2. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *mode = argc > 1 ? argv[1] : "commit";
    long n = argc > 2 ? atol(argv[2]) : 10000;
    long bytes = argc > 3 ? atol(argv[3]) : 8;
    double t0 = 0, t1 = 0;
    if (!strcmp(mode, "commit")) {
        int bl[2] = {1, 1};
        MPI_Aint disp[2] = {0, 8};
        t0 = MPI_Wtime();
        for (long i = 0; i < n; i++) {
            MPI_Datatype v, s, tys[2];
            MPI_Type_vector(3, 1, 2, MPI_DOUBLE, &v);
            tys[0] = MPI_INT;
            tys[1] = v;
            MPI_Type_create_struct(2, bl, disp, tys, &s);
            MPI_Type_commit(&v);
            MPI_Type_commit(&s);
            MPI_Type_free(&s);
            MPI_Type_free(&v);
        }
        t1 = MPI_Wtime();
    } else {
        int strided = !strcmp(mode, "isendv");
        long doubles = bytes / 8 > 0 ? bytes / 8 : 1;
        double *a = calloc(strided ? 2 * doubles : doubles, 8), *b = calloc(strided ? 2 * doubles : doubles, 8);
        MPI_Datatype t = MPI_BYTE;
        int count = (int)bytes;
        if (strided) {
            MPI_Type_vector((int)doubles, 1, 2, MPI_DOUBLE, &t);
            MPI_Type_commit(&t);
            count = 1;
        }
        int size;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        /* One rank sends to itself: no second process competing for the
         * cores (the machine is shared). */
        int peer = size == 1 ? 0 : 1 - rank;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (long i = 0; i < n; i++) {
            MPI_Request r[2];
            MPI_Irecv(b, count, t, peer, 0, MPI_COMM_WORLD, &r[0]);
            MPI_Isend(a, count, t, peer, 0, MPI_COMM_WORLD, &r[1]);
            MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        }
        t1 = MPI_Wtime();
        if (strided)
            MPI_Type_free(&t);
        free(a);
        free(b);
    }
    if (rank == 0)
        printf("%.1f\n", (t1 - t0) / n * 1e9);
    MPI_Finalize();
    return 0;
}
