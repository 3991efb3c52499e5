/* Derived datatypes in collectives: a matrix column broadcast as a vector
 * type, a gather into the columns of a matrix with a resized vector type
 * (the classic "one column per rank"), a scatter back out of them, and a
 * reduction over a contiguous type of doubles. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    enum { N = 8, LD = 64 };
    double m[N][N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) m[i][j] = rank == 0 ? i * N + j : -1;
    MPI_Datatype col;
    CHECK_RC(MPI_Type_vector(N, 1, N, MPI_DOUBLE, &col));
    CHECK_RC(MPI_Type_commit(&col));
    CHECK_RC(MPI_Bcast(&m[0][2], 1, col, 0, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) CHECK(m[i][2] == i * N + 2 && (rank == 0 || m[i][1] == -1), "bcast column row %d", i);

    /* Column r of g (N x LD) is rank r's vector. */
    static double g[N][LD];
    double mine[N], back[N];
    for (int i = 0; i < N; i++) mine[i] = rank * 100 + i;
    MPI_Datatype gcol, gcolr;
    CHECK_RC(MPI_Type_vector(N, 1, LD, MPI_DOUBLE, &gcol));
    CHECK_RC(MPI_Type_create_resized(gcol, 0, sizeof(double), &gcolr));
    CHECK_RC(MPI_Type_commit(&gcolr));
    CHECK_RC(MPI_Gather(mine, N, MPI_DOUBLE, g, 1, gcolr, 0, MPI_COMM_WORLD));
    if (rank == 0)
        for (int r = 0; r < size; r++)
            for (int i = 0; i < N; i++) CHECK(g[i][r] == r * 100 + i, "gather (%d,%d) = %g", i, r, g[i][r]);
    if (rank == 0)
        for (int r = 0; r < size; r++)
            for (int i = 0; i < N; i++) g[i][r] += 0.5;
    CHECK_RC(MPI_Scatter(g, 1, gcolr, back, N, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) CHECK(back[i] == rank * 100 + i + 0.5, "scatter %d: %g", i, back[i]);

    MPI_Datatype c3;
    CHECK_RC(MPI_Type_contiguous(3, MPI_DOUBLE, &c3));
    CHECK_RC(MPI_Type_commit(&c3));
    double x[6] = {1, 2, 3, 4, 5, 6}, y[6];
    CHECK_RC(MPI_Allreduce(x, y, 2, c3, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < 6; i++) CHECK(y[i] == x[i] * size, "allreduce %d: %g", i, y[i]);

    MPI_Type_free(&col);
    MPI_Type_free(&gcol);
    MPI_Type_free(&gcolr);
    MPI_Type_free(&c3);
    if (rank == 0) printf("dt_coll OK\n");
    MPI_Finalize();
    return 0;
}
