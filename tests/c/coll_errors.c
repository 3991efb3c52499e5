/* Bad arguments to collectives under MPI_ERRORS_RETURN give the right
 * error class and leave the ranks in step (collectives afterwards work):
 * invalid root, op, datatype, count, communicator, request pointer,
 * aliased buffers, IN_PLACE where not allowed, size mismatches, a bad
 * argument only the root sees. With "fatal", an invalid root under the
 * default handler ends the job with a message. */
#include "check.h"

static int rank, size;

static void still_works(const char *after) {
    int x = rank + 1, y = 0;
    CHECK_RC(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(y == size * (size + 1) / 2, "allreduce after %s gave %d", after, y);
    int b = rank == 0 ? 99 : 0;
    CHECK_RC(MPI_Bcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK(b == 99, "bcast after %s gave %d", after, b);
}

/* Whether some rank's call failed (every rank calls this after the call). */
static int someone_failed(int rc) {
    int any = rc != MPI_SUCCESS, total = 0;
    MPI_Allreduce(&any, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return total > 0;
}

#define EXPECT(cls, call)                                                                     \
    do {                                                                                      \
        int rc_ = (call);                                                                     \
        CHECK(error_class(rc_) == (cls), "%s gave class %d, want %s", #call, error_class(rc_), #cls); \
    } while (0)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int a[64] = {0}, b[64 * 16] = {0};
    MPI_Request q;

    if (argc > 1 && !strcmp(argv[1], "fatal")) {
        MPI_Bcast(a, 1, MPI_INT, size + 3, MPI_COMM_WORLD);
        printf("UNREACHABLE\n");
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Roots */
    EXPECT(MPI_ERR_ROOT, MPI_Bcast(a, 1, MPI_INT, -1, MPI_COMM_WORLD));
    EXPECT(MPI_ERR_ROOT, MPI_Bcast(a, 1, MPI_INT, size, MPI_COMM_WORLD));
    EXPECT(MPI_ERR_ROOT, MPI_Reduce(a, b, 1, MPI_INT, MPI_SUM, size + 5, MPI_COMM_WORLD));
    EXPECT(MPI_ERR_ROOT, MPI_Gather(a, 1, MPI_INT, b, 1, MPI_INT, -2, MPI_COMM_WORLD));
    EXPECT(MPI_ERR_ROOT, MPI_Scatter(a, 1, MPI_INT, b, 1, MPI_INT, size, MPI_COMM_WORLD));
    EXPECT(MPI_ERR_ROOT, MPI_Igatherv(a, 1, MPI_INT, b, a, a, MPI_INT, size, MPI_COMM_WORLD, &q));
    EXPECT(MPI_ERR_ROOT, MPI_Bcast_init(a, 1, MPI_INT, -1, MPI_COMM_WORLD, MPI_INFO_NULL, &q));
    still_works("bad roots");

    /* Ops */
    EXPECT(MPI_ERR_OP, MPI_Allreduce(a, b, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD));
    EXPECT(MPI_ERR_OP, MPI_Allreduce(a, b, 1, MPI_INT, (MPI_Op)0x12345, MPI_COMM_WORLD));
    EXPECT(MPI_ERR_OP, MPI_Iallreduce(a, b, 1, MPI_DOUBLE, MPI_BXOR, MPI_COMM_WORLD, &q));
    EXPECT(MPI_ERR_OP, MPI_Reduce(a, b, 1, MPI_FLOAT, MPI_LAND, 0, MPI_COMM_WORLD));
    EXPECT(MPI_ERR_OP, MPI_Scan(a, b, 1, MPI_INT, MPI_MAXLOC, MPI_COMM_WORLD));
    EXPECT(MPI_ERR_OP, MPI_Reduce_scatter_block(a, b, 1, MPI_C_BOOL, MPI_SUM, MPI_COMM_WORLD));
    MPI_Op freed;
    MPI_Op_create((MPI_User_function *)(void *)still_works, 1, &freed);
    MPI_Op stale = freed;
    MPI_Op_free(&freed);
    EXPECT(MPI_ERR_OP, MPI_Allreduce(a, b, 1, MPI_INT, stale, MPI_COMM_WORLD));
    still_works("bad ops");

    /* Datatypes and counts */
    EXPECT(MPI_ERR_TYPE, MPI_Bcast(a, 1, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD));
    EXPECT(MPI_ERR_TYPE, MPI_Allgather(a, 1, MPI_INT, b, 1, MPI_DATATYPE_NULL, MPI_COMM_WORLD));
    MPI_Datatype unc;
    MPI_Type_contiguous(2, MPI_INT, &unc);
    EXPECT(MPI_ERR_TYPE, MPI_Allreduce(a, b, 1, unc, MPI_SUM, MPI_COMM_WORLD));
    MPI_Type_free(&unc);
    EXPECT(MPI_ERR_COUNT, MPI_Bcast(a, -1, MPI_INT, 0, MPI_COMM_WORLD));
    EXPECT(MPI_ERR_COUNT, MPI_Allreduce(a, b, -5, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    EXPECT(MPI_ERR_COUNT, MPI_Alltoall(a, -1, MPI_INT, b, -1, MPI_INT, MPI_COMM_WORLD));
    still_works("bad types and counts");

    /* Buffers */
    EXPECT(MPI_ERR_BUFFER, MPI_Allreduce(a, a, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    EXPECT(MPI_ERR_BUFFER, MPI_Allgather(b, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD));
    EXPECT(MPI_ERR_BUFFER, MPI_Allreduce(a, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    EXPECT(MPI_ERR_BUFFER, MPI_Alltoall(a, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, MPI_COMM_WORLD));
    EXPECT(MPI_ERR_BUFFER, MPI_Allreduce(NULL, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    still_works("bad buffers");

    /* Communicator, request */
    EXPECT(MPI_ERR_COMM, MPI_Barrier(MPI_COMM_NULL));
    EXPECT(MPI_ERR_COMM, MPI_Allreduce(a, b, 1, MPI_INT, MPI_SUM, (MPI_Comm)0x44000077));
    EXPECT(MPI_ERR_ARG, MPI_Ibarrier(MPI_COMM_WORLD, NULL));
    EXPECT(MPI_ERR_ARG, MPI_Iallreduce(a, b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, NULL));
    still_works("bad communicators and requests");

    /* Size mismatch: the root takes fewer items from each rank than they
     * send: the root learns it (truncation), nobody hangs. */
    if (size > 1) {
        int rc = MPI_Gather(a, 4, MPI_INT, b, rank == 0 ? 2 : 4, MPI_INT, 0, MPI_COMM_WORLD);
        if (rank == 0) CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "gather mismatch at root gave %d", rc);
        /* Bcast: the root sends more than the others expect. */
        rc = MPI_Bcast(a, rank == 0 ? 8 : 4, MPI_INT, 0, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS || error_class(rc) == MPI_ERR_TRUNCATE, "bcast mismatch gave %d", rc);
        CHECK(someone_failed(rc), "nobody saw the bcast size mismatch");
        /* Nonblocking: the error comes with the completion. */
        rc = MPI_Iscatter(b, 4, MPI_INT, a, rank == 1 ? 3 : 4, MPI_INT, 0, MPI_COMM_WORLD, &q);
        CHECK_RC(rc);
        MPI_Status st;
        rc = MPI_Wait(&q, &st);
        if (rank == 1) CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "iscatter mismatch gave %d", rc);
        else CHECK_RC(rc);
        /* Counts on the two sides of a shared-memory buffer size (112
         * bytes, 8 KiB) or of the segment's limit (64 KiB: messages above
         * it): the ranks pick buffers of different sizes, or some take
         * messages, and must still see the mismatch instead of waiting for
         * each other. */
        static char wide[70000];
        /* (40000/20000: at 2 ranks the root copies straight to the other
         * rank above 32 KiB, the other one waits in the segment.) */
        const int pairs[8][2] = {{200, 100}, {100, 200}, {9000, 8000}, {8000, 9000}, {70000, 60000}, {60000, 70000}, {40000, 20000}, {20000, 40000}};
        for (int i = 0; i < 8; i++) {
            rc = MPI_Bcast(wide, pairs[i][rank == 0 ? 0 : 1], MPI_BYTE, 0, MPI_COMM_WORLD);
            CHECK(rc == MPI_SUCCESS || error_class(rc) == MPI_ERR_TRUNCATE, "bcast %d/%d gave %d", pairs[i][0], pairs[i][1], rc);
            CHECK(someone_failed(rc), "nobody saw the bcast mismatch %d/%d", pairs[i][0], pairs[i][1]);
        }
        /* Nonblocking, across the segment's limit: the ranks above it
         * check every rank's length before their first message. */
        for (int i = 4; i < 6; i++) {
            MPI_Request bq;
            rc = MPI_Ibcast(wide, pairs[i][rank == 0 ? 0 : 1], MPI_BYTE, 0, MPI_COMM_WORLD, &bq);
            CHECK_RC(rc);
            rc = MPI_Wait(&bq, MPI_STATUS_IGNORE);
            CHECK(rc == MPI_SUCCESS || error_class(rc) == MPI_ERR_TRUNCATE, "ibcast %d/%d gave %d", pairs[i][0], pairs[i][1], rc);
            CHECK(someone_failed(rc), "nobody saw the ibcast mismatch %d/%d", pairs[i][0], pairs[i][1]);
        }
        still_works("nonblocking size mismatches");
        /* Persistent, across the limit, started twice. */
        for (int i = 4; i < 6; i++) {
            MPI_Request pq;
            CHECK_RC(MPI_Bcast_init(wide, pairs[i][rank == 0 ? 0 : 1], MPI_BYTE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &pq));
            for (int round = 0; round < 2; round++) {
                CHECK_RC(MPI_Start(&pq));
                rc = MPI_Wait(&pq, MPI_STATUS_IGNORE);
                CHECK(rc == MPI_SUCCESS || error_class(rc) == MPI_ERR_TRUNCATE, "bcast_init %d/%d gave %d", pairs[i][0], pairs[i][1], rc);
                CHECK(someone_failed(rc), "nobody saw the bcast_init mismatch %d/%d", pairs[i][0], pairs[i][1]);
            }
            MPI_Request_free(&pq);
        }
        still_works("persistent size mismatches");
        /* The same across the limit for a gather to the root and an
         * allgather (every rank's block, 8 ranks at most here). */
        static char gathered[9 * 70000];
        rc = MPI_Gather(wide, rank == 1 ? 60000 : 70000, MPI_BYTE, gathered, 70000, MPI_BYTE, 0, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS || error_class(rc) == MPI_ERR_TRUNCATE, "gather 70000/60000 gave %d", rc);
        if (rank == 0) CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "the root of gather 70000/60000 gave %d", rc);
        if (size <= 9) {
            int n = rank == size - 1 ? 70000 : 60000;
            rc = MPI_Allgather(wide, n, MPI_BYTE, gathered, n, MPI_BYTE, MPI_COMM_WORLD);
            CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "allgather 60000/70000 gave %d", rc);
            /* One rank above the 16 KiB of the single-copy path, the others below. */
            n = rank == size - 1 ? 20000 : 10000;
            rc = MPI_Allgather(wide, n, MPI_BYTE, gathered, n, MPI_BYTE, MPI_COMM_WORLD);
            CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "allgather 10000/20000 gave %d", rc);
        }
        still_works("size mismatches");
        /* A bad argument only the root sees (negative recvcount). */
        int counts[64], displs[64];
        for (int k = 0; k < size; k++) {
            counts[k] = k == size - 1 ? -1 : 1;
            displs[k] = k;
        }
        rc = MPI_Gatherv(a, 1, MPI_INT, b, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
        if (rank == 0) CHECK(error_class(rc) == MPI_ERR_COUNT, "gatherv negative count gave %d", rc);
        else CHECK_RC(rc);
        still_works("a root-only error");
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("coll_errors OK\n");
    MPI_Finalize();
    return 0;
}
