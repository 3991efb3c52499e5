/* Groups: Comm_group, size/rank, translate_ranks, compare, union,
 * intersection, difference, incl/excl, range_incl/range_excl,
 * MPI_GROUP_EMPTY, free, and bad input with MPI_ERRORS_RETURN. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    MPI_Group world, g, h, u;
    int n, r, res;
    CHECK_RC(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MPI_Group_size(world, &n);
    MPI_Group_rank(world, &r);
    CHECK(n == size && r == rank, "world group size %d rank %d", n, r);

    /* Reversed group: rank i of it is world rank size-1-i. */
    int *ranks = malloc(sizeof(int) * size), *out = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++) ranks[i] = size - 1 - i;
    CHECK_RC(MPI_Group_incl(world, size, ranks, &g));
    MPI_Group_rank(g, &r);
    CHECK(r == size - 1 - rank, "rank in reversed group %d", r);
    MPI_Group_compare(world, g, &res);
    CHECK(res == (size == 1 ? MPI_IDENT : MPI_SIMILAR), "compare reversed: %d", res);
    for (int i = 0; i < size; i++) ranks[i] = i;
    CHECK_RC(MPI_Group_translate_ranks(g, size, ranks, world, out));
    for (int i = 0; i < size; i++) CHECK(out[i] == size - 1 - i, "translate %d -> %d", i, out[i]);
    int pn[2] = {MPI_PROC_NULL, 0};
    CHECK_RC(MPI_Group_translate_ranks(g, 2, pn, world, out));
    CHECK(out[0] == MPI_PROC_NULL && out[1] == size - 1, "translate PROC_NULL %d %d", out[0], out[1]);

    /* Evens and odds. */
    int ne = (size + 1) / 2;
    for (int i = 0; i < ne; i++) ranks[i] = 2 * i;
    MPI_Group evens, odds;
    CHECK_RC(MPI_Group_incl(world, ne, ranks, &evens));
    CHECK_RC(MPI_Group_excl(world, ne, ranks, &odds));
    MPI_Group_size(odds, &n);
    CHECK(n == size - ne, "odds size %d", n);
    MPI_Group_rank(evens, &r);
    CHECK(r == (rank % 2 == 0 ? rank / 2 : MPI_UNDEFINED), "rank in evens %d", r);
    /* Odd ranks translated into the evens group are undefined. */
    for (int i = 0; i < size - ne; i++) ranks[i] = i;
    if (size > 1) {
        CHECK_RC(MPI_Group_translate_ranks(odds, size - ne, ranks, evens, out));
        for (int i = 0; i < size - ne; i++) CHECK(out[i] == MPI_UNDEFINED, "odd %d in evens: %d", i, out[i]);
    }

    /* Union of odds then evens: odds first, then the evens in their order. */
    CHECK_RC(MPI_Group_union(odds, evens, &u));
    MPI_Group_size(u, &n);
    CHECK(n == size, "union size %d", n);
    for (int i = 0; i < size; i++) ranks[i] = i;
    MPI_Group_translate_ranks(u, size, ranks, world, out);
    for (int i = 0; i < size; i++) {
        int want = i < size - ne ? 2 * i + 1 : 2 * (i - (size - ne));
        CHECK(out[i] == want, "union rank %d is world %d, want %d", i, out[i], want);
    }
    MPI_Group_compare(u, world, &res);
    CHECK(res == (size <= 1 ? MPI_IDENT : MPI_SIMILAR), "union vs world %d", res);
    MPI_Group_free(&u);

    /* Intersection in the first group's order; difference. */
    CHECK_RC(MPI_Group_intersection(g, evens, &u));
    MPI_Group_size(u, &n);
    CHECK(n == ne, "intersection size %d", n);
    MPI_Group_translate_ranks(u, n, ranks, world, out);
    for (int i = 0; i + 1 < n; i++) CHECK(out[i] > out[i + 1], "intersection keeps g's (descending) order");
    MPI_Group_free(&u);
    CHECK_RC(MPI_Group_difference(world, evens, &u));
    MPI_Group_compare(u, odds, &res);
    CHECK(res == MPI_IDENT, "world - evens == odds: %d", res);
    MPI_Group_free(&u);
    CHECK_RC(MPI_Group_difference(evens, world, &u));
    CHECK(u == MPI_GROUP_EMPTY, "evens - world is MPI_GROUP_EMPTY");

    /* GROUP_EMPTY behaves as a group. */
    MPI_Group_size(MPI_GROUP_EMPTY, &n);
    MPI_Group_rank(MPI_GROUP_EMPTY, &r);
    CHECK(n == 0 && r == MPI_UNDEFINED, "empty group %d %d", n, r);
    CHECK_RC(MPI_Group_union(MPI_GROUP_EMPTY, world, &h));
    MPI_Group_compare(h, world, &res);
    CHECK(res == MPI_IDENT, "empty u world %d", res);
    MPI_Group_free(&h);
    CHECK_RC(MPI_Group_incl(world, 0, NULL, &h));
    CHECK(h == MPI_GROUP_EMPTY, "incl of nothing");

    /* Ranges: every third rank from the top down, then exclusion of it. */
    int ranges[2][3] = {{size - 1, 0, -3}, {0, 0, 1}};
    int nr = (size - 1) % 3 == 0 ? 1 : 2; /* rank 0 only if not already there */
    CHECK_RC(MPI_Group_range_incl(world, nr, ranges, &h));
    MPI_Group_size(h, &n);
    int want = (size - 1) / 3 + 1 + (nr == 2);
    CHECK(n == want, "range_incl size %d want %d", n, want);
    MPI_Group_translate_ranks(h, 1, ranks, world, out);
    CHECK(out[0] == size - 1, "range starts at the top: %d", out[0]);
    MPI_Group ex;
    CHECK_RC(MPI_Group_range_excl(world, nr, ranges, &ex));
    MPI_Group_size(ex, &n);
    CHECK(n == size - want, "range_excl size %d", n);
    MPI_Group_intersection(ex, h, &u);
    CHECK(u == MPI_GROUP_EMPTY, "range_incl and range_excl are disjoint");
    MPI_Group_free(&h);
    MPI_Group_free(&ex);

    /* Bad input. */
    int bad = size;
    int rc = MPI_Group_incl(world, 1, &bad, &h);
    CHECK(error_class(rc) == MPI_ERR_RANK, "incl of rank %d: class %d", bad, error_class(rc));
    int dup2[2] = {0, 0};
    rc = MPI_Group_incl(world, 2, dup2, &h);
    CHECK(rc != MPI_SUCCESS, "duplicate ranks accepted");
    rc = MPI_Group_translate_ranks(world, 1, &bad, evens, out);
    CHECK(error_class(rc) == MPI_ERR_RANK, "translate bad rank: %d", error_class(rc));
    int zero_stride[1][3] = {{0, 0, 0}};
    rc = MPI_Group_range_incl(world, 1, zero_stride, &h);
    CHECK(error_class(rc) == MPI_ERR_ARG, "stride 0: %d", error_class(rc));
    MPI_Group freed = g;
    CHECK_RC(MPI_Group_free(&g));
    CHECK(g == MPI_GROUP_NULL, "free sets MPI_GROUP_NULL");
    rc = MPI_Group_size(freed, &n);
    CHECK(error_class(rc) == MPI_ERR_GROUP, "freed group: class %d", error_class(rc));
    rc = MPI_Group_size(MPI_GROUP_NULL, &n);
    CHECK(error_class(rc) == MPI_ERR_GROUP, "GROUP_NULL: class %d", error_class(rc));

    MPI_Group_free(&evens);
    MPI_Group_free(&odds);
    MPI_Group_free(&world);
    free(ranks);
    free(out);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("group_ops OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
