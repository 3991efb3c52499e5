/* Arguments wrong at one rank only: an invalid color or split type; an
 * invalid group for MPI_Comm_create (intra and inter); invalid dimensions,
 * graphs and distributed graphs for the topology constructors. Every rank
 * fails at once through its error handler (none waits for the one that gave
 * up): the bad rank with the class of its mistake, the others with
 * MPI_ERR_ARG (or the same class for a split, where all see the bad color),
 * nobody gets a communicator, and the parent works afterwards. */
#include "check.h"

int main(int argc, char **argv) {
    /* argv[1]: "multiple" (MPI_THREAD_MULTIPLE everywhere, which adds a
     * round to each agreement) or "mixed" (only on odd world ranks). */
    const char *mode = argc > 1 ? argv[1] : "single";
    int wr = atoi(getenv("PMI_RANK") ? getenv("PMI_RANK") : "0"), provided;
    int multi = strcmp(mode, "multiple") == 0 || (strcmp(mode, "mixed") == 0 && wr % 2);
    MPI_Init_thread(&argc, &argv, multi ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    int rank, size, rc;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int bad = size - 1;
    for (int round = 0; round < 3; round++) {
        MPI_Comm c = MPI_COMM_WORLD;
        rc = MPI_Comm_split(MPI_COMM_WORLD, rank == bad ? -3 : rank % 2, rank, &c);
        CHECK(error_class(rc) == MPI_ERR_ARG, "split with a bad color at rank %d: class %d", bad, error_class(rc));
        rc = MPI_Comm_split_type(MPI_COMM_WORLD, rank == bad ? 12345 : MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c);
        CHECK(error_class(rc) == MPI_ERR_ARG, "split_type with a bad type at rank %d: class %d", bad, error_class(rc));
    }
    /* The constructors whose checks come before any exchange. */
    int other = (rank == bad) ? -1 : MPI_ERR_ARG;
#define EXPECT(rc, mine, what) \
    CHECK(error_class(rc) == (rank == bad ? (mine) : other), "%s: class %d at rank %d", what, error_class(rc), rank)
    MPI_Group wg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    for (int round = 0; round < 2; round++) {
        MPI_Comm c = MPI_COMM_WORLD;
        rc = MPI_Comm_create(MPI_COMM_WORLD, rank == bad ? MPI_GROUP_NULL : wg, &c);
        EXPECT(rc, MPI_ERR_GROUP, "Comm_create with MPI_GROUP_NULL at one rank");
        int dims[2] = {size, rank == bad ? -1 : 1}, periods[2] = {1, 0};
        rc = MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &c);
        EXPECT(rc, MPI_ERR_DIMS, "Cart_create with a negative dimension at one rank");
        CHECK(c == MPI_COMM_NULL, "Cart_create failed but gave a communicator");
        int index[64] = {0}, edges[1] = {0};
        rc = MPI_Graph_create(MPI_COMM_WORLD, rank == bad ? size + 1 : 1, index, edges, 0, &c);
        EXPECT(rc, MPI_ERR_TOPOLOGY, "Graph_create with too many nodes at one rank");
        int nb = rank == bad ? size : rank;
        rc = MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &nb, MPI_UNWEIGHTED, 1, &nb, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c);
        EXPECT(rc, MPI_ERR_RANK, "Dist_graph_create_adjacent with a bad neighbor at one rank");
        int deg = rank == bad ? -1 : 1;
        rc = MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &rank, &deg, &rank, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c);
        EXPECT(rc, MPI_ERR_ARG, "Dist_graph_create with a negative degree at one rank");
    }
    MPI_Group_free(&wg);
    {
        int dims[1] = {size}, periods[1] = {1};
        MPI_Comm ring;
        CHECK_RC(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
        int lr[2] = {-1, -1};
        CHECK_RC(MPI_Neighbor_allgather(&rank, 1, MPI_INT, lr, 1, MPI_INT, ring));
        CHECK(lr[0] == (rank + size - 1) % size && lr[1] == (rank + 1) % size, "ring after the failures: %d %d", lr[0], lr[1]);
        MPI_Comm_free(&ring);
    }

    /* The world still splits and communicates. */
    MPI_Comm ok;
    CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &ok));
    int r, sum = 0;
    MPI_Comm_rank(ok, &r);
    CHECK(r == size - 1 - rank, "split after the failures: rank %d", r);
    CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, ok));
    CHECK(sum == size * (size - 1) / 2, "allreduce %d", sum);
    MPI_Comm_free(&ok);

    if (size >= 2) {
        MPI_Comm half, inter, s;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        CHECK_RC(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - rank % 2, 3, &inter));
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        rc = MPI_Comm_split(inter, rank == bad ? -9 : 0, 0, &s);
        CHECK(error_class(rc) == MPI_ERR_ARG, "intercomm split with a bad color at rank %d: class %d", bad, error_class(rc));
        MPI_Group lg;
        MPI_Comm_group(inter, &lg);
        rc = MPI_Comm_create(inter, rank == bad ? MPI_GROUP_NULL : lg, &s);
        EXPECT(rc, MPI_ERR_GROUP, "intercomm Comm_create with MPI_GROUP_NULL at one rank");
        MPI_Group_free(&lg);
        CHECK_RC(MPI_Comm_split(inter, 0, 0, &s));
        int rs;
        MPI_Comm_remote_size(s, &rs);
        CHECK(rs == (rank % 2 ? (size + 1) / 2 : size / 2), "intercomm split after the failure: remote size %d", rs);
        MPI_Comm_free(&s);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("comm_bad_args OK on %d ranks (%s)\n", size, mode);
    MPI_Finalize();
    return 0;
}
