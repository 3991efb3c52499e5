/* Creating and freeing many communicators (argv[1], default 100000):
 * contexts never collide (each new communicator is checked to be isolated
 * from its parent now and then), handles are reused, and memory does not
 * grow. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long n = argc > 1 ? atol(argv[1]) : 100000;
    MPI_Comm first = MPI_COMM_NULL;
    MPI_Group wg, g;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    long rss0 = 0;
    for (long i = 0; i < n; i++) {
        MPI_Comm c;
        switch (i % 4) {
        case 0:
            CHECK_RC(MPI_Comm_dup(MPI_COMM_WORLD, &c));
            break;
        case 1:
            CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &c));
            break;
        case 2:
            CHECK_RC(MPI_Comm_create(MPI_COMM_WORLD, wg, &c));
            break;
        default:
            CHECK_RC(MPI_Comm_create_group(MPI_COMM_WORLD, wg, (int)(i % 1000), &c));
            break;
        }
        if (i == 0) first = c;
        CHECK(c == first, "iteration %ld: handle 0x%x, first was 0x%x (not reused)", i, c, first);
        /* Now and then: a message on the new communicator and one on world
         * with the same envelope; each must arrive on its own. */
        if (i % 997 == 0) {
            int r, sz, a = (int)i, b = -(int)i, x, y;
            MPI_Comm_rank(c, &r);
            MPI_Comm_size(c, &sz);
            int to = (r + 1) % sz, from = (r + sz - 1) % sz;
            MPI_Request q;
            MPI_Isend(&a, 1, MPI_INT, to, 1, c, &q);
            MPI_Sendrecv(&b, 1, MPI_INT, (rank + 1) % size, 1, &y, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(&x, 1, MPI_INT, from, 1, c, MPI_STATUS_IGNORE);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            CHECK(x == (int)i && y == -(int)i, "iteration %ld: got %d and %d", i, x, y);
            MPI_Comm_group(c, &g);
            MPI_Group_free(&g);
        }
        CHECK_RC(MPI_Comm_free(&c));
        if (i == 1000) rss0 = test_rss_kb();
    }
    long rss1 = test_rss_kb();
    MPI_Group_free(&wg);
    if (n > 1000) CHECK(rss1 - rss0 < 8 * 1024, "memory grew from %ld kB to %ld kB", rss0, rss1);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("comm_many OK: %ld communicators on %d ranks (rss %ld -> %ld kB)\n", n, size, rss0, rss1);
    MPI_Finalize();
    return 0;
}
