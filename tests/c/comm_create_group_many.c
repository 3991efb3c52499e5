/* MPI_Comm_create_group called many times with the same tag on changing,
 * overlapping or disjoint groups of MPI_COMM_WORLD (issue 19.7): every new
 * communicator must work (an Allreduce of the world ranks gives the sum of
 * the group, a Barrier completes), whatever the other groups agree on at
 * the same time. Then create_group and idup called in opposite orders at
 * even and odd ranks. */
#include "check.h"
#include <unistd.h>

#define ROUNDS 50

/* Creates the communicator of `ranks` (world ranks, `k` of them; this rank
 * among them) with tag 0, checks it and frees it. */
static void use_group(const int *ranks, int k, int round) {
    MPI_Group world, g;
    MPI_Comm c;
    int me, sum = 0, got = -1, size = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    CHECK_RC(MPI_Group_incl(world, k, ranks, &g));
    CHECK_RC(MPI_Comm_create_group(MPI_COMM_WORLD, g, 0, &c));
    CHECK(c != MPI_COMM_NULL, "round %d: no communicator", round);
    CHECK_RC(MPI_Comm_size(c, &size));
    CHECK(size == k, "round %d: size %d, expected %d", round, size, k);
    for (int i = 0; i < k; i++) sum += ranks[i];
    CHECK_RC(MPI_Allreduce(&me, &got, 1, MPI_INT, MPI_SUM, c));
    CHECK(got == sum, "round %d: sum of ranks %d, expected %d", round, got, sum);
    CHECK_RC(MPI_Barrier(c));
    CHECK_RC(MPI_Comm_free(&c));
    MPI_Group_free(&g);
    MPI_Group_free(&world);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int ranks[64];

    /* Rank 0 first with a late rank 1, then with rank 2, which comes at
     * once: rank 2's messages (rank 1 in the second group) must not be
     * taken for rank 1's (rank 1 in the first). */
    if (n >= 3) {
        for (int i = 0; i < 5; i++) {
            int first[2] = {0, 1}, second[2] = {0, 2};
            if (me == 1) usleep(100000);
            if (me == 0 || me == 1) use_group(first, 2, i);
            if (me == 0 || me == 2) use_group(second, 2, i);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    /* Sliding windows of k ranks, [i % n, i % n + k) mod n: a rank outside
     * the window goes on to the next round at once. */
    for (int k = 1; k <= n; k++) {
        for (int i = 0; i < ROUNDS; i++) {
            int in = 0;
            for (int j = 0; j < k; j++) {
                ranks[j] = (i + j) % n;
                in |= ranks[j] == me;
            }
            if (in) use_group(ranks, k, i);
        }
    }
    /* Pairs that change each round (disjoint pairs running together):
     * this rank with me ^ (1 + i % (n - 1)) when that is a rank. */
    for (int i = 0; i < ROUNDS && n > 1; i++) {
        int peer = me ^ (1 + i % (n - 1));
        if (peer >= n) continue;
        ranks[0] = me < peer ? me : peer;
        ranks[1] = me < peer ? peer : me;
        use_group(ranks, 2, i);
    }
    /* Random partitions of the world into groups of random order and size
     * (the same in every rank: a fixed seed), so the rank a process has
     * in its group changes from round to round. */
    unsigned seed = 12345;
    for (int i = 0; i < 4 * ROUNDS; i++) {
        int perm[64];
        for (int r = 0; r < n; r++) perm[r] = r;
        for (int r = n - 1; r > 0; r--) {
            seed = seed * 1103515245u + 12345u;
            int j = (seed >> 16) % (r + 1), t = perm[r];
            perm[r] = perm[j];
            perm[j] = t;
        }
        for (int start = 0; start < n;) {
            seed = seed * 1103515245u + 12345u;
            int k = 1 + (seed >> 16) % n;
            if (start + k > n) k = n - start;
            int in = 0;
            for (int j = 0; j < k; j++) in |= perm[start + j] == me;
            if (in) use_group(perm + start, k, i);
            start += k;
        }
    }
    /* Even ranks: create_group of the evens, then idup of the world; odd
     * ranks: the idup first, then create_group of the odds. */
    for (int i = 0; i < 10; i++) {
        int k = 0;
        for (int r = me % 2; r < n; r += 2) ranks[k++] = r;
        MPI_Comm d;
        MPI_Request req;
        if (me % 2 == 0) {
            use_group(ranks, k, i);
            CHECK_RC(MPI_Comm_idup(MPI_COMM_WORLD, &d, &req));
        } else {
            CHECK_RC(MPI_Comm_idup(MPI_COMM_WORLD, &d, &req));
            use_group(ranks, k, i);
        }
        CHECK_RC(MPI_Wait(&req, MPI_STATUS_IGNORE));
        int one = 1, all = 0;
        CHECK_RC(MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, d));
        CHECK(all == n, "idup %d: sum %d", i, all);
        CHECK_RC(MPI_Comm_free(&d));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) printf("comm_create_group_many OK on %d ranks\n", n);
    MPI_Finalize();
    return 0;
}
