/* Atomic RMA: Fetch_and_op tickets (every rank gets distinct ones),
 * Compare_and_swap (exactly one winner per round), Get_accumulate with
 * every predefined operation, MPI_NO_OP as an atomic read, MPI_REPLACE,
 * MAXLOC on a pair type, Raccumulate/Rget_accumulate. */
#include "check.h"

#define TICKETS 20

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long *mem;
    MPI_Win win;
    CHECK_RC(MPI_Win_allocate(16 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    for (int i = 0; i < 16; i++) mem[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);

    /* 1. A shared counter at rank 0: every ticket is handed out once. */
    CHECK_RC(MPI_Win_lock_all(0, win));
    long tickets[TICKETS], one = 1;
    for (int i = 0; i < TICKETS; i++) {
        CHECK_RC(MPI_Fetch_and_op(&one, &tickets[i], MPI_LONG, 0, 0, MPI_SUM, win));
        CHECK_RC(MPI_Win_flush(0, win));
    }
    CHECK_RC(MPI_Win_unlock_all(win));
    long *all = malloc(sizeof(long) * TICKETS * size);
    MPI_Allgather(tickets, TICKETS, MPI_LONG, all, TICKETS, MPI_LONG, MPI_COMM_WORLD);
    char *seen = calloc(TICKETS * size, 1);
    for (int i = 0; i < TICKETS * size; i++) {
        CHECK(all[i] >= 0 && all[i] < TICKETS * size, "ticket %ld out of range", all[i]);
        CHECK(!seen[all[i]], "ticket %ld handed out twice", all[i]);
        seen[all[i]] = 1;
    }
    for (int r = 0; r < size; r++)
        for (int i = 1; i < TICKETS; i++) CHECK(all[r * TICKETS + i] > all[r * TICKETS + i - 1], "rank %d's tickets not increasing", r);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) CHECK(mem[0] == TICKETS * size, "counter %ld, want %d", mem[0], TICKETS * size);

    /* 2. Compare_and_swap: each round exactly one rank swaps 0 -> rank+1. */
    for (int round = 0; round < 3; round++) {
        if (rank == 0) mem[1] = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        long mine = rank + 1, cmp = 0, old = -1;
        CHECK_RC(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK_RC(MPI_Compare_and_swap(&mine, &cmp, &old, MPI_LONG, 0, 1, win));
        CHECK_RC(MPI_Win_unlock(0, win));
        int won = old == 0, winners = 0;
        CHECK(old == 0 || (old >= 1 && old <= size), "CAS returned %ld", old);
        MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(winners == 1, "round %d: %d ranks won the swap", round, winners);
        long final = 0;
        if (rank == 0) final = mem[1];
        MPI_Bcast(&final, 1, MPI_LONG, 0, MPI_COMM_WORLD);
        if (won) CHECK(final == rank + 1, "winner %d but value %ld", rank, final);
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* 3. Every operation on ints, applied at rank (size - 1) by every rank. */
    int *iv;
    MPI_Win iw;
    CHECK_RC(MPI_Win_allocate(16 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &iv, &iw));
    MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR};
    int init[] = {5, 1, -100, 100, -1, 0, 0, 1, 0, 0};
    int nops = sizeof ops / sizeof ops[0];
    for (int i = 0; i < 16; i++) iv[i] = i < nops ? init[i] : 0;
    int last = size - 1;
    CHECK_RC(MPI_Win_fence(0, iw));
    for (int k = 0; k < nops; k++) {
        int v = (k == 1) ? 2 : (k >= 7) ? (rank % 2) : (k >= 4 ? (1 << rank) : rank);
        CHECK_RC(MPI_Accumulate(&v, 1, MPI_INT, last, k, 1, MPI_INT, ops[k], iw));
    }
    CHECK_RC(MPI_Win_fence(0, iw));
    if (rank == last) {
        int sum = 5, prod = 1, mx = -100, mn = 100, band = -1, bor = 0, bxor = 0, land = 1, lor = 0, lxor = 0;
        for (int r = 0; r < size; r++) {
            sum += r; prod *= 2; mx = r > mx ? r : mx; mn = r < mn ? r : mn;
            band &= 1 << r; bor |= 1 << r; bxor ^= 1 << r;
            land = land && (r % 2); lor = lor || (r % 2); lxor = (!lxor) != (!(r % 2));
        }
        int want[] = {sum, prod, mx, mn, band, bor, bxor, land, lor, lxor};
        for (int k = 0; k < nops; k++) CHECK(iv[k] == want[k], "op %d: %d, want %d", k, iv[k], want[k]);
    }
    CHECK_RC(MPI_Win_fence(0, iw));
    /* MPI_REPLACE by the last rank only, MPI_NO_OP reads. */
    if (rank == 0) {
        int v = 4242, old = 0;
        CHECK_RC(MPI_Get_accumulate(&v, 1, MPI_INT, &old, 1, MPI_INT, last, 12, 1, MPI_INT, MPI_REPLACE, iw));
    }
    CHECK_RC(MPI_Win_fence(0, iw));
    int readback = -1;
    CHECK_RC(MPI_Get_accumulate(NULL, 0, MPI_INT, &readback, 1, MPI_INT, last, 12, 1, MPI_INT, MPI_NO_OP, iw));
    CHECK_RC(MPI_Win_fence(0, iw));
    CHECK(readback == 4242, "NO_OP read %d, want 4242", readback);
    /* Get_accumulate returns the value before each sum: all distinct. */
    int add = 1, before = -1;
    MPI_Request rq;
    CHECK_RC(MPI_Rget_accumulate(&add, 1, MPI_INT, &before, 1, MPI_INT, last, 13, 1, MPI_INT, MPI_SUM, iw, &rq));
    CHECK_RC(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK_RC(MPI_Raccumulate(&add, 1, MPI_INT, last, 14, 1, MPI_INT, MPI_SUM, iw, &rq));
    CHECK_RC(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK_RC(MPI_Win_fence(0, iw));
    int *befores = malloc(sizeof(int) * size);
    MPI_Allgather(&before, 1, MPI_INT, befores, 1, MPI_INT, MPI_COMM_WORLD);
    int mask = 0;
    for (int r = 0; r < size; r++) {
        CHECK(befores[r] >= 0 && befores[r] < size, "get_accumulate old value %d", befores[r]);
        mask |= 1 << befores[r];
    }
    CHECK(mask == (1 << size) - 1, "old values not a permutation (mask %x)", mask);
    if (rank == last) CHECK(iv[13] == size && iv[14] == size, "sums %d %d, want %d", iv[13], iv[14], size);
    CHECK_RC(MPI_Win_free(&iw));

    /* 4. MAXLOC on MPI_2INT: the highest value wins, ties keep the lower index. */
    int pair[2] = {-1, -1};
    MPI_Win pw;
    CHECK_RC(MPI_Win_create(pair, sizeof pair, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &pw));
    CHECK_RC(MPI_Win_fence(0, pw));
    int mine2[2] = {rank % 3, rank};
    CHECK_RC(MPI_Accumulate(mine2, 1, MPI_2INT, 0, 0, 1, MPI_2INT, MPI_MAXLOC, pw));
    CHECK_RC(MPI_Win_fence(0, pw));
    if (rank == 0) {
        int best = size >= 3 ? 2 : size - 1;
        CHECK(pair[0] == best && pair[1] == best, "maxloc (%d, %d), want (%d, %d)", pair[0], pair[1], best, best);
    }
    CHECK_RC(MPI_Win_free(&pw));

    /* 5. A window of MPI_Win_create: Fetch_and_op on contiguous data (done
     * by the origin on this host) races with accumulates through a strided
     * target type (applied by the target): both under one lock per part,
     * so no update is lost. */
    long cw_mem[4] = {0, 0, 0, 0};
    MPI_Win cwin;
    CHECK_RC(MPI_Win_create(cw_mem, sizeof cw_mem, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &cwin));
    MPI_Datatype every_other;
    MPI_Type_vector(2, 1, 2, MPI_LONG, &every_other);
    MPI_Type_commit(&every_other);
    CHECK_RC(MPI_Win_lock_all(0, cwin));
    long twos[2] = {1, 1}, got1;
    for (int i = 0; i < TICKETS; i++) {
        CHECK_RC(MPI_Fetch_and_op(&one, &got1, MPI_LONG, 0, 0, MPI_SUM, cwin));
        CHECK_RC(MPI_Accumulate(twos, 2, MPI_LONG, 0, 0, 1, every_other, MPI_SUM, cwin));
        CHECK_RC(MPI_Win_flush(0, cwin));
    }
    CHECK_RC(MPI_Win_unlock_all(cwin));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(cw_mem[0] == 2L * TICKETS * size && cw_mem[2] == (long)TICKETS * size && cw_mem[1] == 0,
              "mixed accumulates: %ld %ld %ld, want %ld %d 0", cw_mem[0], cw_mem[2], cw_mem[1], 2L * TICKETS * size, TICKETS * size);
    MPI_Type_free(&every_other);
    CHECK_RC(MPI_Win_free(&cwin));

    CHECK_RC(MPI_Win_free(&win));
    free(all);
    free(seen);
    free(befores);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("rma_atomics OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
