/* Creating and freeing many intercommunicators (argv[1] rounds, default
 * 5000): each round creates one from the halves of the world, duplicates it
 * (every 50th round with MPI_Comm_idup), merges the duplicate, splits the
 * original, and frees all four, including their hidden local-group
 * communicators. Handles are reused, messages stay apart, and memory does
 * not grow. Needs at least 2 ranks. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2, "needs 2 ranks");
    long n = argc > 1 ? atol(argv[1]) : 5000, rss0 = 0;
    int side = rank % 2, me = rank / 2, nremote = side ? (size + 1) / 2 : size / 2;
    MPI_Comm half, first = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, side, rank, &half);
    for (long i = 0; i < n; i++) {
        MPI_Comm inter, d, m, s;
        CHECK_RC(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - side, (int)(i % 4096), &inter));
        if (i == 0) first = inter;
        CHECK(inter == first, "round %ld: handle 0x%x, first was 0x%x (not reused)", i, inter, first);
        if (i % 50 == 0) {
            MPI_Request q;
            CHECK_RC(MPI_Comm_idup(inter, &d, &q));
            CHECK_RC(MPI_Wait(&q, MPI_STATUS_IGNORE));
        } else {
            CHECK_RC(MPI_Comm_dup(inter, &d));
        }
        CHECK_RC(MPI_Intercomm_merge(d, side, &m));
        CHECK_RC(MPI_Comm_split(inter, 0, -me, &s));
        if (i % 499 == 0) {
            /* The same envelope on all four: each arrives on its own. */
            MPI_Comm cs[3] = {inter, d, s};
            for (int k = 0; k < 3; k++) {
                int peer = k == 2 ? nremote - 1 - me : me, v = 100 * k + (int)(i % 100), got = -1;
                if (me < nremote)
                    CHECK_RC(MPI_Sendrecv(&v, 1, MPI_INT, peer, 0, &got, 1, MPI_INT, peer, 0, cs[k], MPI_STATUS_IGNORE));
                if (me < nremote) CHECK(got == v, "round %ld communicator %d: got %d, expected %d", i, k, got, v);
            }
            int mr, sum = 0;
            MPI_Comm_rank(m, &mr);
            CHECK_RC(MPI_Allreduce(&mr, &sum, 1, MPI_INT, MPI_SUM, m));
            CHECK(sum == size * (size - 1) / 2, "round %ld: merged ranks sum to %d", i, sum);
        }
        CHECK_RC(MPI_Comm_free(&s));
        CHECK_RC(MPI_Comm_free(&m));
        CHECK_RC(MPI_Comm_free(&d));
        CHECK_RC(MPI_Comm_free(&inter));
        if (i == n / 5) rss0 = test_rss_kb();
    }
    long rss1 = test_rss_kb();
    if (n >= 1000) CHECK(rss1 - rss0 < 4 * 1024, "memory grew from %ld kB to %ld kB", rss0, rss1);
    MPI_Comm_free(&half);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("comm_inter_many OK: %ld rounds on %d ranks (rss %ld -> %ld kB)\n", n, size, rss0, rss1);
    MPI_Finalize();
    return 0;
}
