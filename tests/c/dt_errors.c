/* Bad datatype input with MPI_ERRORS_RETURN: the right error class, no
 * crash, and the library keeps working afterwards. */
#include "check.h"
#include <limits.h>

#define EXPECT(call, cls)                                                               \
    do {                                                                                \
        int rc_ = (call);                                                               \
        CHECK(rc_ != MPI_SUCCESS && error_class(rc_) == (cls), "%s: class %d, want %d", \
              #call, rc_ == MPI_SUCCESS ? 0 : error_class(rc_), cls);                    \
    } while (0)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype t = MPI_DATATYPE_NULL, bogus = (MPI_Datatype)0x8c0000ff;
    int one = 1, ints[4] = {1, 1, 1, 1};
    MPI_Aint disp[4] = {0, 8, 16, 24};

    /* Counts, block lengths, handles. */
    EXPECT(MPI_Type_contiguous(-1, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT(MPI_Type_contiguous(2, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE);
    EXPECT(MPI_Type_contiguous(2, bogus, &t), MPI_ERR_TYPE);
    EXPECT(MPI_Type_contiguous(2, MPI_INT, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Type_vector(-2, 1, 3, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT(MPI_Type_vector(2, -1, 3, MPI_INT, &t), MPI_ERR_ARG);
    EXPECT(MPI_Type_indexed(2, NULL, NULL, MPI_INT, &t), MPI_ERR_ARG);
    int negbl[2] = {1, -4}, d2[2] = {0, 4};
    EXPECT(MPI_Type_indexed(2, negbl, d2, MPI_INT, &t), MPI_ERR_ARG);
    MPI_Datatype types[2] = {MPI_INT, bogus};
    EXPECT(MPI_Type_create_struct(2, ints, disp, types, &t), MPI_ERR_TYPE);
    EXPECT(MPI_Type_create_hindexed_block(-1, 1, disp, MPI_INT, &t), MPI_ERR_COUNT);

    /* Overflow of extents and sizes. */
    EXPECT(MPI_Type_create_hvector(2, 1, LONG_MAX, MPI_INT, &t), MPI_ERR_ARG);
    EXPECT(MPI_Type_contiguous_c((MPI_Count)1 << 62, MPI_DOUBLE, &t), MPI_ERR_ARG);
    EXPECT(MPI_Type_create_resized(MPI_INT, LONG_MAX, 10, &t), MPI_ERR_ARG);

    /* Subarray and darray arguments. */
    int sz[2] = {4, 5}, sub[2] = {2, 3}, st[2] = {3, 0}, st0[2] = {0, 0};
    EXPECT(MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
    EXPECT(MPI_Type_create_subarray(2, sz, sub, st0, 12345, MPI_INT, &t), MPI_ERR_ARG);
    EXPECT(MPI_Type_create_subarray(0, sz, sub, st0, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
    int gs[1] = {10}, blk[1] = {MPI_DISTRIBUTE_BLOCK}, cyc[1] = {MPI_DISTRIBUTE_CYCLIC}, none[1] = {MPI_DISTRIBUTE_NONE};
    int dflt[1] = {MPI_DISTRIBUTE_DFLT_DARG}, small[1] = {2}, zero[1] = {0}, p2[1] = {2}, p3[1] = {3};
    EXPECT(MPI_Type_create_darray(2, 0, 1, gs, blk, dflt, p3, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
    EXPECT(MPI_Type_create_darray(2, 0, 1, gs, blk, small, p2, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
    EXPECT(MPI_Type_create_darray(2, 0, 1, gs, none, dflt, p2, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
    EXPECT(MPI_Type_create_darray(2, 0, 1, gs, cyc, zero, p2, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
    EXPECT(MPI_Type_create_darray(2, 2, 1, gs, cyc, dflt, p2, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
    EXPECT(MPI_Type_create_darray(2, 0, 1, gs, cyc, dflt, p2, 999, MPI_INT, &t), MPI_ERR_ARG);

    /* Commit, free, decode. */
    EXPECT(MPI_Type_commit(NULL), MPI_ERR_ARG);
    MPI_Datatype pre = MPI_INT;
    EXPECT(MPI_Type_free(&pre), MPI_ERR_TYPE);
    MPI_Datatype v;
    CHECK_RC(MPI_Type_vector(3, 1, 2, MPI_INT, &v));
    int ni, na, nd, comb;
    EXPECT(MPI_Type_get_contents(MPI_INT, 0, 0, 0, NULL, NULL, NULL), MPI_ERR_TYPE);
    EXPECT(MPI_Type_get_contents(v, 1, 0, 1, ints, disp, types), MPI_ERR_ARG);
    CHECK_RC(MPI_Type_get_envelope(v, &ni, &na, &nd, &comb));
    EXPECT(MPI_Type_set_name(v, NULL), MPI_ERR_ARG);

    /* Communication with an uncommitted or invalid type. */
    int buf[8] = {0};
    int peer = (rank + 1) % size, from = (rank + size - 1) % size;
    EXPECT(MPI_Send(buf, 1, v, peer, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Send(buf, 1, MPI_DATATYPE_NULL, peer, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    MPI_Request rq;
    EXPECT(MPI_Irecv(buf, 1, v, from, 0, MPI_COMM_WORLD, &rq), MPI_ERR_TYPE);
    EXPECT(MPI_Send(buf, -1, MPI_INT, peer, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    char pk[64];
    int pos = 0;
    EXPECT(MPI_Pack(buf, 1, v, pk, 64, &pos, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Pack(buf, -1, MPI_INT, pk, 64, &pos, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Pack(buf, 1, MPI_INT, pk, 64, NULL, MPI_COMM_WORLD), MPI_ERR_ARG);
    EXPECT(MPI_Pack_size(1, MPI_INT, MPI_COMM_NULL, &one), MPI_ERR_COMM);
    MPI_Status s;
    int n;
    EXPECT(MPI_Get_elements(&s, bogus, &n), MPI_ERR_TYPE);
    EXPECT(MPI_Type_size(bogus, &n), MPI_ERR_TYPE);

    /* Committed now, it works; freed, the handle is gone. */
    CHECK_RC(MPI_Type_commit(&v));
    int src[6] = {1, 2, 3, 4, 5, 6}, dst[3] = {0};
    CHECK_RC(MPI_Sendrecv(src, 1, v, peer, 1, dst, 3, MPI_INT, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(dst[0] == 1 && dst[1] == 3 && dst[2] == 5, "vector after errors");
    MPI_Datatype v2 = v;
    CHECK_RC(MPI_Type_free(&v));
    EXPECT(MPI_Type_free(&v2), MPI_ERR_TYPE);
    EXPECT(MPI_Send(buf, 1, v2, peer, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("dt_errors OK\n");
    MPI_Finalize();
    return 0;
}
