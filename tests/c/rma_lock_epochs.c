/* Access epochs of one window at one process are disjoint (MPI 3.1 11.5):
 * MPI_Win_lock and MPI_Win_lock_all inside a PSCW access epoch are
 * MPI_ERR_RMA_SYNC (MPICH suite: errors/rma/win_sync_lock_at). A lock
 * epoch after MPI_Win_fence(0) is allowed, but it takes the place of the
 * access epoch the fence could have opened: an operation after the unlock
 * is MPI_ERR_RMA_SYNC until the next fence (errors/rma/win_sync_lock_fence,
 * as MPICH). The window works on afterwards (values checked). */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int cell = 100 + rank, got = -1;
    int next = (rank + 1) % size;
    MPI_Win win;
    CHECK_RC(MPI_Win_create(&cell, sizeof cell, sizeof cell, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_RC(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);

    /* 1. Locks inside a PSCW access epoch. */
    CHECK_RC(MPI_Win_post(world, 0, win));
    CHECK_RC(MPI_Win_start(world, 0, win));
    CHECK_RC(MPI_Get(&got, 1, MPI_INT, next, 0, 1, MPI_INT, win));
    int rc = MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win);
    CHECK(error_class(rc) == MPI_ERR_RMA_SYNC, "MPI_Win_lock in a PSCW access epoch returned %d", rc);
    rc = MPI_Win_lock_all(0, win);
    CHECK(error_class(rc) == MPI_ERR_RMA_SYNC, "MPI_Win_lock_all in a PSCW access epoch returned %d", rc);
    CHECK_RC(MPI_Win_complete(win));
    CHECK_RC(MPI_Win_wait(win));
    CHECK(got == 100 + next, "PSCW get: %d", got);
    /* Once the epoch is over, locks work. */
    got = -1;
    CHECK_RC(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win));
    CHECK_RC(MPI_Get(&got, 1, MPI_INT, next, 0, 1, MPI_INT, win));
    CHECK_RC(MPI_Win_unlock(next, win));
    CHECK(got == 100 + next, "lock get: %d", got);
    CHECK_RC(MPI_Barrier(MPI_COMM_WORLD));

    /* 2. A lock epoch after a fence, then an operation without a fence. */
    for (int all = 0; all < 2; all++) {
        CHECK_RC(MPI_Win_fence(0, win));
        got = -1;
        if (all) {
            CHECK_RC(MPI_Win_lock_all(0, win));
        } else {
            CHECK_RC(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win));
        }
        CHECK_RC(MPI_Get(&got, 1, MPI_INT, next, 0, 1, MPI_INT, win));
        if (all) {
            CHECK_RC(MPI_Win_unlock_all(win));
        } else {
            CHECK_RC(MPI_Win_unlock(next, win));
        }
        CHECK(got == 100 + next, "get under the lock after a fence: %d", got);
        rc = MPI_Get(&got, 1, MPI_INT, next, 0, 1, MPI_INT, win);
        CHECK(error_class(rc) == MPI_ERR_RMA_SYNC, "a get after the unlock (%s) returned %d",
              all ? "lock_all" : "lock", rc);
        CHECK_RC(MPI_Win_fence(0, win));
        /* The next fence opens an epoch again. */
        got = -1;
        CHECK_RC(MPI_Get(&got, 1, MPI_INT, next, 0, 1, MPI_INT, win));
        CHECK_RC(MPI_Win_fence(0, win));
        CHECK(got == 100 + next, "fence get: %d", got);
    }

    MPI_Group_free(&world);
    MPI_Win_free(&win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("rma_lock_epochs OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
