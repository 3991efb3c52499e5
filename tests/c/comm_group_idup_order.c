/* MPI_Comm_create_group is collective over its group only, not over the
 * parent: it does not wait for the caller's pending MPI_Comm_idup of the
 * parent, which other members start only after it (MPICH suite:
 * comm/comm_create_group_idup). Evens create then idup, odds idup then
 * create; once with the whole group, once with the even ranks plus rank 1. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    for (int round = 0; round < 2; round++) {
        MPI_Group g = world;
        if (round == 1) {
            int ranks[64], n = 0;
            for (int r = 0; r < size && n < 64; r++)
                if (r % 2 == 0 || r == 1) ranks[n++] = r;
            MPI_Group_incl(world, n, ranks, &g);
        }
        MPI_Comm gc = MPI_COMM_NULL, dc;
        MPI_Request req;
        int in_group;
        MPI_Group_rank(g, &in_group);
        in_group = in_group != MPI_UNDEFINED;
        if (rank % 2 == 0) {
            if (in_group) CHECK_RC(MPI_Comm_create_group(MPI_COMM_WORLD, g, 7 + round, &gc));
            CHECK_RC(MPI_Comm_idup(MPI_COMM_WORLD, &dc, &req));
        } else {
            CHECK_RC(MPI_Comm_idup(MPI_COMM_WORLD, &dc, &req));
            if (in_group) CHECK_RC(MPI_Comm_create_group(MPI_COMM_WORLD, g, 7 + round, &gc));
        }
        CHECK_RC(MPI_Wait(&req, MPI_STATUS_IGNORE));
        int one = 1, sum = 0;
        CHECK_RC(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, dc));
        CHECK(sum == size, "idup communicator: sum %d", sum);
        if (in_group) {
            int gsize;
            MPI_Group_size(g, &gsize);
            CHECK_RC(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, gc));
            CHECK(sum == gsize, "group communicator: sum %d of %d", sum, gsize);
            MPI_Comm_free(&gc);
        }
        MPI_Comm_free(&dc);
        if (g != world) MPI_Group_free(&g);
    }
    MPI_Group_free(&world);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("comm_group_idup_order OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
