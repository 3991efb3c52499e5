/* Active-target RMA with MPI_Win_fence: a Put/Get ring, Accumulate SUM of
 * every rank onto rank 0, a vector-typed Put into contiguous memory,
 * request-based Rput/Rget, large (rendezvous) transfers, MPI_Win_allocate. */
#include "check.h"
#include <time.h>

#define N 8
#define BIG 100000

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* 1. Put ring: each rank writes its values into its right neighbour. */
    int buf[N], src[N];
    for (int i = 0; i < N; i++) { buf[i] = -1; src[i] = rank * 100 + i; }
    MPI_Win win;
    CHECK_RC(MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_RC(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    CHECK_RC(MPI_Put(src, N, MPI_INT, right, 0, N, MPI_INT, win));
    CHECK_RC(MPI_Win_fence(0, win));
    for (int i = 0; i < N; i++) CHECK(buf[i] == left * 100 + i, "put ring: buf[%d] = %d, want %d", i, buf[i], left * 100 + i);

    /* 2. Get ring: read the left neighbour's buffer (which holds left-1's values). */
    int got[N];
    memset(got, 0, sizeof got);
    CHECK_RC(MPI_Get(got, N, MPI_INT, left, 0, N, MPI_INT, win));
    CHECK_RC(MPI_Win_fence(0, win));
    int ll = (left + size - 1) % size;
    for (int i = 0; i < N; i++) CHECK(got[i] == ll * 100 + i, "get ring: got[%d] = %d, want %d", i, got[i], ll * 100 + i);

    /* 3. Accumulate SUM onto rank 0 from every rank, twice. */
    if (rank == 0) for (int i = 0; i < N; i++) buf[i] = 0;
    CHECK_RC(MPI_Win_fence(0, win));
    int one[N];
    for (int i = 0; i < N; i++) one[i] = rank + i;
    CHECK_RC(MPI_Accumulate(one, N, MPI_INT, 0, 0, N, MPI_INT, MPI_SUM, win));
    CHECK_RC(MPI_Accumulate(one, N, MPI_INT, 0, 0, N, MPI_INT, MPI_SUM, win));
    CHECK_RC(MPI_Win_fence(0, win));
    if (rank == 0)
        for (int i = 0; i < N; i++) {
            int want = 2 * (size * (size - 1) / 2 + size * i);
            CHECK(buf[i] == want, "accumulate: buf[%d] = %d, want %d", i, buf[i], want);
        }
    /* (A fence before the next writes: checking is a local read of the window.) */
    CHECK_RC(MPI_Win_fence(0, win));

    /* 4. A strided origin (every other int) into contiguous target memory. */
    MPI_Datatype vec;
    MPI_Type_vector(N / 2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int strided[N];
    for (int i = 0; i < N; i++) strided[i] = rank * 1000 + i;
    CHECK_RC(MPI_Put(strided, 1, vec, right, 0, N / 2, MPI_INT, win));
    CHECK_RC(MPI_Win_fence(0, win));
    for (int i = 0; i < N / 2; i++) CHECK(buf[i] == left * 1000 + 2 * i, "vector put: buf[%d] = %d, want %d", i, buf[i], left * 1000 + 2 * i);
    /* ... and a contiguous origin into a strided target. */
    for (int i = 0; i < N; i++) buf[i] = -7;
    CHECK_RC(MPI_Win_fence(0, win));
    int four[N / 2];
    for (int i = 0; i < N / 2; i++) four[i] = rank * 10 + i;
    CHECK_RC(MPI_Put(four, N / 2, MPI_INT, right, 1, 1, vec, win));
    CHECK_RC(MPI_Win_fence(0, win));
    for (int i = 0; i < N; i++) {
        int want = (i % 2 == 1) ? left * 10 + i / 2 : -7;
        CHECK(buf[i] == want, "strided target: buf[%d] = %d, want %d", i, buf[i], want);
    }
    CHECK_RC(MPI_Win_fence(0, win));
    MPI_Type_free(&vec);

    /* 5. Request-based operations. */
    MPI_Request rq[2];
    int mine[N], theirs[N];
    for (int i = 0; i < N; i++) mine[i] = rank * 7 + i;
    CHECK_RC(MPI_Rput(mine, N, MPI_INT, right, 0, N, MPI_INT, win, &rq[0]));
    CHECK_RC(MPI_Waitall(1, rq, MPI_STATUSES_IGNORE));
    CHECK_RC(MPI_Win_fence(0, win));
    CHECK_RC(MPI_Rget(theirs, N, MPI_INT, right, 0, N, MPI_INT, win, &rq[1]));
    CHECK_RC(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
    for (int i = 0; i < N; i++) CHECK(theirs[i] == rank * 7 + i, "rget: %d, want %d", theirs[i], rank * 7 + i);
    CHECK_RC(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK_RC(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "MPI_Win_free did not set MPI_WIN_NULL");

    /* 6. Large transfers on a window of MPI_Win_allocate. */
    double *big;
    CHECK_RC(MPI_Win_allocate(BIG * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &big, &win));
    double *out = malloc(BIG * sizeof(double)), *back = malloc(BIG * sizeof(double));
    for (int i = 0; i < BIG; i++) { out[i] = rank + i * 0.5; big[i] = 0; }
    CHECK_RC(MPI_Win_fence(0, win));
    CHECK_RC(MPI_Put(out, BIG, MPI_DOUBLE, right, 0, BIG, MPI_DOUBLE, win));
    CHECK_RC(MPI_Win_fence(0, win));
    for (int i = 0; i < BIG; i++) CHECK(big[i] == left + i * 0.5, "big put: [%d] = %g", i, big[i]);
    CHECK_RC(MPI_Get(back, BIG, MPI_DOUBLE, left, 0, BIG, MPI_DOUBLE, win));
    CHECK_RC(MPI_Win_fence(0, win));
    for (int i = 0; i < BIG; i++) CHECK(back[i] == ll + i * 0.5, "big get: [%d] = %g", i, back[i]);
    CHECK_RC(MPI_Win_fence(0, win));
    CHECK_RC(MPI_Accumulate(out, BIG, MPI_DOUBLE, right, 0, BIG, MPI_DOUBLE, MPI_SUM, win));
    CHECK_RC(MPI_Win_fence(0, win));
    for (int i = 0; i < BIG; i++) CHECK(big[i] == 2 * (left + i * 0.5), "big acc: [%d] = %g", i, big[i]);
    CHECK_RC(MPI_Win_free(&win));
    free(out);
    free(back);

    /* 7. A late target: rank 0 writes its window memory just before a
     * fence with MPI_MODE_NOPRECEDE, long after the others called theirs;
     * their Puts of the next epoch must land after that store. */
    for (int flavor = 0; flavor < 2; flavor++) {
        int *slots, own[64];
        if (flavor == 0) {
            slots = own;
            CHECK_RC(MPI_Win_create(own, sizeof(int) * size, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        } else {
            CHECK_RC(MPI_Win_allocate(sizeof(int) * size, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &slots, &win));
        }
        if (rank == 0) {
            struct timespec ts = {0, 30 * 1000 * 1000};
            nanosleep(&ts, NULL);
            for (int r = 0; r < size; r++) slots[r] = -1;
        }
        CHECK_RC(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
        int v = 1000 + rank;
        CHECK_RC(MPI_Put(&v, 1, MPI_INT, 0, rank, 1, MPI_INT, win));
        CHECK_RC(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
        if (rank == 0)
            for (int r = 0; r < size; r++) CHECK(slots[r] == 1000 + r, "late target, flavor %d: slot %d = %d", flavor, r, slots[r]);
        CHECK_RC(MPI_Win_free(&win));
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("rma_fence OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
