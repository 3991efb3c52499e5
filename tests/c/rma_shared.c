/* MPI_Win_allocate_shared: neighbours read and write each other's memory
 * directly through MPI_Win_shared_query pointers, Put/Get/Accumulate on
 * the shared window; MPI_Win_create_dynamic with attached regions reached
 * by absolute addresses, accesses across adjacent regions; errors of
 * attach/detach. */
#include "check.h"

#define N 64

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* 1. Shared window: sizes differ between ranks (rank 1 has none). */
    MPI_Aint mysize = (rank == 1) ? 0 : N * sizeof(int);
    int *mine;
    MPI_Win sw;
    CHECK_RC(MPI_Win_allocate_shared(mysize, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &sw));
    char *next = NULL;
    for (int r = 0; r < size; r++) {
        MPI_Aint sz;
        int du;
        int *p;
        CHECK_RC(MPI_Win_shared_query(sw, r, &sz, &du, &p));
        CHECK(sz == ((r == 1) ? 0 : N * (MPI_Aint)sizeof(int)), "rank %d's size %ld", r, (long)sz);
        CHECK(du == sizeof(int), "disp unit %d", du);
        if (sz == 0) {
            /* An empty part has no address. */
            CHECK(p == NULL, "rank %d's empty part has base %p, not NULL", r, (void *)p);
            continue;
        }
        /* By default the non-empty parts are contiguous in rank order. */
        if (next) CHECK((char *)p == next, "rank %d's part at %p, not right after the previous part (%p)", r, (void *)p, (void *)next);
        next = (char *)p + sz;
        if (r == rank) CHECK(p == mine, "shared_query of self %p, baseptr %p", (void *)p, (void *)mine);
    }
    CHECK_RC(MPI_Win_lock_all(0, sw));
    if (rank != 1)
        for (int i = 0; i < N; i++) mine[i] = rank * 1000 + i;
    CHECK_RC(MPI_Win_sync(sw));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_Win_sync(sw));
    if (left != 1) {
        int *lp;
        MPI_Aint sz;
        int du;
        CHECK_RC(MPI_Win_shared_query(sw, left, &sz, &du, &lp));
        for (int i = 0; i < N; i++) CHECK(lp[i] == left * 1000 + i, "direct load of rank %d [%d]: %d", left, i, lp[i]);
    }
    /* Put into the right neighbour, Get it back, through the window. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (right != 1) {
        int v[4] = {rank, rank + 1, rank + 2, rank + 3}, w[4] = {0};
        CHECK_RC(MPI_Put(v, 4, MPI_INT, right, 8, 4, MPI_INT, sw));
        CHECK_RC(MPI_Win_flush(right, sw));
        CHECK_RC(MPI_Get(w, 4, MPI_INT, right, 8, 4, MPI_INT, sw));
        CHECK_RC(MPI_Win_flush(right, sw));
        for (int i = 0; i < 4; i++) CHECK(w[i] == rank + i, "get after put [%d]: %d", i, w[i]);
    }
    /* Everyone adds into rank 0's first int. */
    int one = 1;
    CHECK_RC(MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, sw));
    CHECK_RC(MPI_Win_unlock_all(sw));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) CHECK(mine[0] == size, "shared accumulate: %d, want %d", mine[0], size);
    if (right != 1 && rank != right) {
        /* (My right neighbour's memory now holds my four values.) */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 1 && left != 1 && left != rank)
        for (int i = 0; i < 4; i++) CHECK(mine[8 + i] == left + i, "put seen by the owner [%d]: %d", i, mine[8 + i]);
    CHECK_RC(MPI_Win_free(&sw));

    /* 2. Dynamic window: every rank attaches two regions and publishes the
     * address of the second; the left neighbour writes into it. */
    MPI_Win dw;
    CHECK_RC(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dw));
    long a[4] = {0}, b[8] = {0};
    CHECK_RC(MPI_Win_attach(dw, a, sizeof a));
    CHECK_RC(MPI_Win_attach(dw, b, sizeof b));
    MPI_Win_set_errhandler(dw, MPI_ERRORS_RETURN);
    int rc = MPI_Win_attach(dw, &b[2], sizeof(long));
    CHECK(error_class(rc) == MPI_ERR_RMA_ATTACH, "overlapping attach gave class %d", error_class(rc));
    MPI_Aint addr, *addrs = malloc(sizeof(MPI_Aint) * size);
    MPI_Get_address(b, &addr);
    MPI_Allgather(&addr, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);
    CHECK_RC(MPI_Win_fence(0, dw));
    long vals[8];
    for (int i = 0; i < 8; i++) vals[i] = rank * 10 + i;
    CHECK_RC(MPI_Put(vals, 8, MPI_LONG, right, addrs[right], 8, MPI_LONG, dw));
    CHECK_RC(MPI_Win_fence(0, dw));
    for (int i = 0; i < 8; i++) CHECK(b[i] == left * 10 + i, "dynamic put [%d]: %ld", i, b[i]);
    long back[8];
    CHECK_RC(MPI_Get(back, 8, MPI_LONG, left, addrs[left], 8, MPI_LONG, dw));
    CHECK_RC(MPI_Win_fence(0, dw));
    int ll = (left + size - 1) % size;
    for (int i = 0; i < 8; i++) CHECK(back[i] == ll * 10 + i, "dynamic get [%d]: %ld", i, back[i]);
    /* Outside every attached region: the target reports MPI_ERR_RMA_RANGE
     * with the unlock. */
    CHECK_RC(MPI_Win_fence(MPI_MODE_NOSUCCEED, dw));
    CHECK_RC(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, dw));
    CHECK_RC(MPI_Put(vals, 1, MPI_LONG, right, 64, 1, MPI_LONG, dw));
    rc = MPI_Win_unlock(right, dw);
    CHECK(error_class(rc) == MPI_ERR_RMA_RANGE, "put past an attached region gave class %d", error_class(rc));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_Win_detach(dw, b));
    rc = MPI_Win_detach(dw, b);
    CHECK(error_class(rc) == MPI_ERR_RMA_ATTACH, "second detach gave class %d", error_class(rc));
    CHECK_RC(MPI_Win_detach(dw, a));
    CHECK_RC(MPI_Win_free(&dw));

    /* 3. One array attached as two adjacent halves: accesses across the
     * seam (Put, Get_accumulate, Get) act on both halves. */
    CHECK_RC(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dw));
    long halves[8] = {0};
    CHECK_RC(MPI_Win_attach(dw, halves, 4 * sizeof(long)));
    CHECK_RC(MPI_Win_attach(dw, halves + 4, 4 * sizeof(long)));
    MPI_Get_address(halves, &addr);
    MPI_Allgather(&addr, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);
    CHECK_RC(MPI_Win_fence(0, dw));
    CHECK_RC(MPI_Put(vals, 4, MPI_LONG, right, addrs[right] + 2 * sizeof(long), 4, MPI_LONG, dw));
    CHECK_RC(MPI_Win_fence(0, dw));
    for (int i = 2; i < 6; i++) CHECK(halves[i] == left * 10 + i - 2, "put across the seam [%d]: %ld", i, halves[i]);
    long add[6] = {100, 100, 100, 100, 100, 100}, old[6] = {0};
    CHECK_RC(MPI_Get_accumulate(add, 6, MPI_LONG, old, 6, MPI_LONG, right, addrs[right] + sizeof(long), 6, MPI_LONG, MPI_SUM, dw));
    CHECK_RC(MPI_Win_fence(0, dw));
    for (int i = 0; i < 6; i++) {
        long want = (i >= 1 && i <= 4) ? rank * 10 + i - 1 : 0;
        CHECK(old[i] == want, "get_accumulate across the seam [%d]: %ld, want %ld", i, old[i], want);
    }
    CHECK_RC(MPI_Get(back, 8, MPI_LONG, left, addrs[left], 8, MPI_LONG, dw));
    CHECK_RC(MPI_Win_fence(0, dw));
    for (int i = 0; i < 8; i++) {
        long want = (i >= 1 && i <= 6 ? 100 : 0) + (i >= 2 && i <= 5 ? ll * 10 + i - 2 : 0);
        CHECK(back[i] == want, "get of both halves [%d]: %ld, want %ld", i, back[i], want);
    }
    CHECK_RC(MPI_Win_detach(dw, halves));
    CHECK_RC(MPI_Win_detach(dw, halves + 4));
    CHECK_RC(MPI_Win_free(&dw));
    free(addrs);

    /* 3. The large-count forms (MPI 4.0). */
    long *cbase;
    MPI_Win cw;
    CHECK_RC(MPI_Win_allocate_shared_c(4 * sizeof(long), (MPI_Aint)sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &cbase, &cw));
    MPI_Aint csz, cdu;
    long *cp;
    CHECK_RC(MPI_Win_shared_query_c(cw, right, &csz, &cdu, &cp));
    CHECK(csz == 4 * sizeof(long) && cdu == sizeof(long), "shared_query_c: size %ld, unit %ld", (long)csz, (long)cdu);
    CHECK_RC(MPI_Win_fence(0, cw));
    long cv[4] = {rank, rank, rank, rank}, cg[4] = {0};
    CHECK_RC(MPI_Put_c(cv, 4, MPI_LONG, right, 0, 4, MPI_LONG, cw));
    CHECK_RC(MPI_Win_fence(0, cw));
    CHECK_RC(MPI_Get_c(cg, 4, MPI_LONG, left, 0, 4, MPI_LONG, cw));
    CHECK_RC(MPI_Win_fence(0, cw));
    CHECK_RC(MPI_Accumulate_c(cv, 4, MPI_LONG, right, 0, 4, MPI_LONG, MPI_SUM, cw));
    CHECK_RC(MPI_Win_fence(0, cw));
    CHECK(cg[3] == ((left + size - 1) % size), "get_c: %ld", cg[3]);
    CHECK(cbase[0] == 2 * left, "put_c + accumulate_c: %ld, want %d", cbase[0], 2 * left);
    CHECK_RC(MPI_Win_free(&cw));

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("rma_shared OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
