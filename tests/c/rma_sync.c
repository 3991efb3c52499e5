/* Synchronization: PSCW between pairs (and a star around rank 0, with
 * MPI_Win_test), exclusive-lock read-modify-write increments from every
 * rank (the final value is exact), lock_all + flush + flush_local,
 * shared locks, MPI_Win_sync, locks granted by a target blocked in
 * MPI_Recv, MPI_MODE_NOCHECK. */
#include "check.h"

#define ROUNDS 10

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);

    int buf[4] = {0, 0, 0, 0};
    MPI_Win win;
    CHECK_RC(MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));

    /* 1. PSCW between pairs (0,1), (2,3), ...: each writes into the other. */
    int peer = rank ^ 1;
    if (peer < size) {
        MPI_Group pg;
        MPI_Group_incl(world, 1, &peer, &pg);
        for (int round = 0; round < ROUNDS; round++) {
            CHECK_RC(MPI_Win_post(pg, 0, win));
            CHECK_RC(MPI_Win_start(pg, 0, win));
            int v = rank * 100 + round;
            CHECK_RC(MPI_Put(&v, 1, MPI_INT, peer, 0, 1, MPI_INT, win));
            CHECK_RC(MPI_Win_complete(win));
            CHECK_RC(MPI_Win_wait(win));
            CHECK(buf[0] == peer * 100 + round, "pscw round %d: %d, want %d", round, buf[0], peer * 100 + round);
        }
        MPI_Group_free(&pg);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 2. A star: every other rank accumulates into rank 0, which exposes to
     * all of them at once and polls with MPI_Win_test. */
    buf[1] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (size > 1) {
        if (rank == 0) {
            MPI_Group others;
            int zero = 0;
            MPI_Group_excl(world, 1, &zero, &others);
            CHECK_RC(MPI_Win_post(others, 0, win));
            int flag = 0;
            while (!flag) CHECK_RC(MPI_Win_test(win, &flag));
            CHECK(buf[1] == size - 1, "star: %d, want %d", buf[1], size - 1);
            MPI_Group_free(&others);
        } else {
            MPI_Group root;
            int zero = 0;
            MPI_Group_incl(world, 1, &zero, &root);
            CHECK_RC(MPI_Win_start(root, 0, win));
            int one = 1;
            CHECK_RC(MPI_Accumulate(&one, 1, MPI_INT, 0, 1, 1, MPI_INT, MPI_SUM, win));
            CHECK_RC(MPI_Win_complete(win));
            MPI_Group_free(&root);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3. Exclusive locks: read, add one, write back (not atomic by itself;
     * the lock makes it so). */
    buf[2] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int round = 0; round < ROUNDS; round++) {
        int v = -1;
        CHECK_RC(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        CHECK_RC(MPI_Get(&v, 1, MPI_INT, 0, 2, 1, MPI_INT, win));
        CHECK_RC(MPI_Win_flush(0, win));
        v += 1;
        CHECK_RC(MPI_Put(&v, 1, MPI_INT, 0, 2, 1, MPI_INT, win));
        CHECK_RC(MPI_Win_unlock(0, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) CHECK(buf[2] == ROUNDS * size, "locked increments: %d, want %d", buf[2], ROUNDS * size);

    /* 4. lock_all + flush: write into the right neighbour, flush, then tell
     * it by message; it reads its own memory after MPI_Win_sync. */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    CHECK_RC(MPI_Win_lock_all(0, win));
    for (int round = 0; round < ROUNDS; round++) {
        int v = rank * 1000 + round;
        CHECK_RC(MPI_Put(&v, 1, MPI_INT, right, 3, 1, MPI_INT, win));
        CHECK_RC(MPI_Win_flush_local(right, win));
        CHECK_RC(MPI_Win_flush(right, win));
        MPI_Sendrecv(&round, 1, MPI_INT, right, 7, &v, 1, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK_RC(MPI_Win_sync(win));
        CHECK(buf[3] == left * 1000 + round, "lock_all round %d: %d, want %d", round, buf[3], left * 1000 + round);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    int got = -1;
    CHECK_RC(MPI_Get(&got, 1, MPI_INT, left, 3, 1, MPI_INT, win));
    CHECK_RC(MPI_Win_flush_all(win));
    CHECK(got == ((left + size - 1) % size) * 1000 + ROUNDS - 1, "get under lock_all: %d", got);
    CHECK_RC(MPI_Win_flush_local_all(win));
    CHECK_RC(MPI_Win_unlock_all(win));

    /* 5. Shared locks from everyone on everyone at once. */
    for (int t = 0; t < size; t++) {
        int v = -1;
        CHECK_RC(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
        CHECK_RC(MPI_Get(&v, 1, MPI_INT, t, 3, 1, MPI_INT, win));
        CHECK_RC(MPI_Win_unlock(t, win));
        CHECK(v == ((t + size - 1) % size) * 1000 + ROUNDS - 1, "shared lock read of %d: %d", t, v);
    }

    /* 6. Passive-target progress inside an unrelated blocking call: rank 0
     * waits in MPI_Recv for messages the others send only after their
     * exclusive-lock epochs on rank 0 are over. */
    buf[1] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        for (int i = 1; i < size; i++) {
            int from = -1;
            MPI_Recv(&from, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        CHECK(buf[1] == 3 * (size - 1), "increments while rank 0 sat in MPI_Recv: %d, want %d", buf[1], 3 * (size - 1));
    } else {
        for (int k = 0; k < 3; k++) {
            int one = 1;
            CHECK_RC(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
            CHECK_RC(MPI_Accumulate(&one, 1, MPI_INT, 0, 1, 1, MPI_INT, MPI_SUM, win));
            CHECK_RC(MPI_Win_unlock(0, win));
        }
        MPI_Send(&rank, 1, MPI_INT, 0, 99, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 7. MPI_MODE_NOCHECK (no conflicting locks by construction): the
     * writes are still complete at the target after the unlock. */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    int mark = rank + 5000;
    CHECK_RC(MPI_Accumulate(&mark, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_REPLACE, win));
    CHECK_RC(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(buf[0] == left + 5000, "after lock_all(NOCHECK): %d, want %d", buf[0], left + 5000);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, MPI_MODE_NOCHECK, win));
    mark = rank + 6000;
    CHECK_RC(MPI_Put(&mark, 1, MPI_INT, right, 0, 1, MPI_INT, win));
    CHECK_RC(MPI_Win_unlock(right, win));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(buf[0] == left + 6000, "after lock(NOCHECK): %d, want %d", buf[0], left + 6000);

    CHECK_RC(MPI_Win_free(&win));
    MPI_Group_free(&world);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("rma_sync OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
