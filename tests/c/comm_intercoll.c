/* Collectives on an intercommunicator between the even and the odd ranks
 * of MPI_COMM_WORLD: barrier, bcast, reduce, allreduce, allgather, gather,
 * scatter, alltoall, with MPI_ROOT / MPI_PROC_NULL roots; value checks.
 * Needs at least 2 ranks. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        printf("comm_intercoll OK on %d ranks (needs 2)\n", size);
        MPI_Finalize();
        return 0;
    }
    int color = rank % 2, me = rank / 2;
    int nlocal = color ? size / 2 : (size + 1) / 2, nremote = size - nlocal;
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
    CHECK_RC(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 5, &inter));
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    /* World rank of remote rank r. */
#define REMOTE(r) (2 * (r) + 1 - color)

    CHECK_RC(MPI_Barrier(inter));

    /* Bcast from even rank 0 to the odds. */
    int v = color ? -1 : (me == 0 ? 4242 : -7);
    int root = color ? 0 : (me == 0 ? MPI_ROOT : MPI_PROC_NULL);
    CHECK_RC(MPI_Bcast(&v, 1, MPI_INT, root, inter));
    CHECK(v == (color ? 4242 : (me == 0 ? 4242 : -7)), "bcast got %d", v);

    /* Allreduce: each group gets the sum over the other. */
    int sum = -1, want = 0;
    CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, inter));
    for (int r = 0; r < nremote; r++) want += REMOTE(r);
    CHECK(sum == want, "allreduce got %d want %d", sum, want);

    /* Reduce (MAX of 2 doubles) to odd rank 0. */
    double dv[2] = {rank, -rank}, dr[2] = {0, 0};
    root = color ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    CHECK_RC(MPI_Reduce(dv, dr, 2, MPI_DOUBLE, MPI_MAX, root, inter));
    if (color && me == 0) {
        int maxeven = 2 * (nremote - 1);
        CHECK(dr[0] == maxeven && dr[1] == 0, "reduce got %g %g", dr[0], dr[1]);
    }

    /* Allgather: the other group's (rank, rank*rank). */
    int pair[2] = {rank, rank * rank};
    int *all = malloc(sizeof(int) * 2 * nremote);
    CHECK_RC(MPI_Allgather(pair, 2, MPI_INT, all, 2, MPI_INT, inter));
    for (int r = 0; r < nremote; r++)
        CHECK(all[2 * r] == REMOTE(r) && all[2 * r + 1] == REMOTE(r) * REMOTE(r), "allgather %d: %d", r, all[2 * r]);

    /* Gather to even rank 0 from the odds. */
    int *g = malloc(sizeof(int) * nremote);
    root = color ? 0 : (me == 0 ? MPI_ROOT : MPI_PROC_NULL);
    int mine = 1000 + rank;
    CHECK_RC(MPI_Gather(&mine, 1, MPI_INT, g, 1, MPI_INT, root, inter));
    if (!color && me == 0)
        for (int r = 0; r < nremote; r++) CHECK(g[r] == 1000 + REMOTE(r), "gather %d: %d", r, g[r]);

    /* Scatter from odd rank 0 to the evens. */
    int *sc = malloc(sizeof(int) * nremote);
    for (int r = 0; r < nremote; r++) sc[r] = 7 * r + 1;
    int got = -1;
    root = color ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    CHECK_RC(MPI_Scatter(sc, 1, MPI_INT, &got, 1, MPI_INT, root, inter));
    if (!color) CHECK(got == 7 * me + 1, "scatter got %d", got);

    /* Alltoall: block r to remote rank r. */
    int *sa = malloc(sizeof(int) * nremote), *ra = malloc(sizeof(int) * nremote);
    for (int r = 0; r < nremote; r++) {
        sa[r] = rank * 100 + r;
        ra[r] = -1;
    }
    CHECK_RC(MPI_Alltoall(sa, 1, MPI_INT, ra, 1, MPI_INT, inter));
    for (int r = 0; r < nremote; r++) CHECK(ra[r] == REMOTE(r) * 100 + me, "alltoall %d: %d", r, ra[r]);

    /* A bad root. */
    int rc = MPI_Bcast(&v, 1, MPI_INT, nremote, inter);
    CHECK(error_class(rc) == MPI_ERR_ROOT, "bad root: class %d", error_class(rc));

    CHECK_RC(MPI_Barrier(inter));
    free(all);
    free(g);
    free(sc);
    free(sa);
    free(ra);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("comm_intercoll OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
