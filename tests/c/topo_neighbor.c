/* Persistent (MPI_Neighbor_*_init) and large-count (*_c) neighborhood
 * collectives, started several times with new values: alltoall on a
 * periodic ring (where both neighbors may be the same process, or this
 * one) with a strided datatype, allgather on a 2-D torus, alltoallv and
 * allgatherv with displacements, alltoallw on a distributed graph with
 * several edges between the same two processes (blocks pair up in edge
 * order); topology and MPI_IN_PLACE errors. Any number of ranks. */
#include "check.h"

static int rank, size;

static int mod(int a, int n) { return ((a % n) + n) % n; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int left = mod(rank - 1, size), right = mod(rank + 1, size);

    /* Ring, persistent alltoall of a strided type: ints 0 and 2 of each
     * 4-int block are sent; received contiguously. */
    int dims[2] = {size, 0}, periods[2] = {1, 1};
    MPI_Comm ring;
    CHECK_RC(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    MPI_Datatype vec, strided;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 4 * sizeof(int), &strided);
    MPI_Type_free(&vec);
    MPI_Type_commit(&strided);
    int sb[8], rb[4];
    MPI_Request q;
    CHECK_RC(MPI_Neighbor_alltoall_init(sb, 1, strided, rb, 2, MPI_INT, ring, MPI_INFO_NULL, &q));
    MPI_Type_free(&strided); /* the request keeps what it needs */
    for (int it = 0; it < 5; it++) {
        /* Block 0 goes left, block 1 right. */
        for (int i = 0; i < 8; i++) sb[i] = (i % 2) ? -1 : 1000 * it + 100 * rank + 10 * (i / 4) + i;
        for (int i = 0; i < 4; i++) rb[i] = -7;
        CHECK_RC(MPI_Start(&q));
        CHECK_RC(MPI_Wait(&q, MPI_STATUS_IGNORE));
        /* From the left neighbor its block 1 (sent right), from the right
         * its block 0. */
        int e[4] = {1000 * it + 100 * left + 10 + 4, 1000 * it + 100 * left + 10 + 6, 1000 * it + 100 * right + 0, 1000 * it + 100 * right + 2};
        for (int i = 0; i < 4; i++) CHECK(rb[i] == e[i], "ring alltoall_init start %d: rb[%d] = %d, expected %d", it, i, rb[i], e[i]);
    }
    CHECK_RC(MPI_Request_free(&q));
    CHECK(q == MPI_REQUEST_NULL, "request_free leaves a handle");

    /* Large-count alltoall and nonblocking alltoallv_c on the ring. */
    int a2[2] = {rank, -rank}, r2[2] = {-1, -1};
    CHECK_RC(MPI_Neighbor_alltoall_c(a2, (MPI_Count)1, MPI_INT, r2, (MPI_Count)1, MPI_INT, ring));
    CHECK(r2[0] == -left && r2[1] == right, "alltoall_c: got %d %d", r2[0], r2[1]);
    {
        /* Block to the left: 1 int at 3; to the right: 2 ints at 0. */
        int sv[5] = {rank, rank + 1, 7, 50 + rank, 9}, rv[6];
        MPI_Count sc[2] = {1, 2}, rc[2] = {2, 1};
        MPI_Aint sd[2] = {3, 0}, rd[2] = {4, 1};
        for (int i = 0; i < 6; i++) rv[i] = -3;
        MPI_Request r;
        CHECK_RC(MPI_Ineighbor_alltoallv_c(sv, sc, sd, MPI_INT, rv, rc, rd, MPI_INT, ring, &r));
        CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
        /* From the left: its right block (2 ints) at 4; from the right its
         * left block (1 int) at 1. */
        CHECK(rv[4] == left && rv[5] == left + 1 && rv[1] == 50 + right && rv[0] == -3 && rv[2] == -3 && rv[3] == -3,
              "ialltoallv_c: %d %d %d %d %d %d", rv[0], rv[1], rv[2], rv[3], rv[4], rv[5]);
    }

    /* 2-D torus: persistent allgather, and allgatherv_init_c. */
    dims[0] = dims[1] = 0;
    MPI_Dims_create(size, 2, dims);
    MPI_Comm torus;
    CHECK_RC(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &torus));
    int nb[4];
    {
        int s0, d0, s1, d1;
        MPI_Cart_shift(torus, 0, 1, &s0, &d0);
        MPI_Cart_shift(torus, 1, 1, &s1, &d1);
        nb[0] = s0, nb[1] = d0, nb[2] = s1, nb[3] = d1;
    }
    int me[2], all[8];
    CHECK_RC(MPI_Neighbor_allgather_init(me, 2, MPI_INT, all, 2, MPI_INT, torus, MPI_INFO_NULL, &q));
    MPI_Request qv;
    int one, got[12];
    MPI_Count gc[4] = {1, 1, 1, 1};
    MPI_Aint gd[4] = {9, 6, 3, 0};
    CHECK_RC(MPI_Neighbor_allgatherv_init_c(&one, 1, MPI_INT, got, gc, gd, MPI_INT, torus, MPI_INFO_NULL, &qv));
    for (int it = 0; it < 4; it++) {
        me[0] = rank;
        me[1] = it * 100 + rank;
        one = 7 * rank + it;
        for (int i = 0; i < 12; i++) got[i] = -1;
        MPI_Request both[2] = {q, qv};
        CHECK_RC(MPI_Startall(2, both));
        MPI_Status sts[2];
        CHECK_RC(MPI_Waitall(2, both, sts));
        for (int k = 0; k < 4; k++) {
            CHECK(all[2 * k] == nb[k] && all[2 * k + 1] == it * 100 + nb[k], "torus allgather_init start %d neighbor %d: %d %d (expected rank %d)", it, k, all[2 * k], all[2 * k + 1], nb[k]);
            CHECK(got[gd[k]] == 7 * nb[k] + it, "torus allgatherv_init_c start %d neighbor %d: %d", it, k, got[gd[k]]);
        }
        CHECK(got[1] == -1 && got[11] == -1, "allgatherv_init_c wrote outside its blocks");
    }
    MPI_Request_free(&q);
    MPI_Request_free(&qv);

    /* Distributed graph with two edges to the right neighbor and one two
     * steps right; alltoallw (persistent, large count) with byte
     * displacements and a type per block. */
    int dst[3] = {right, right, mod(rank + 2, size)}, src[3] = {left, left, mod(rank - 2, size)};
    MPI_Comm dg;
    CHECK_RC(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 3, src, MPI_UNWEIGHTED, 3, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg));
    /* Send: ints at bytes 0 and 4, a double at 8; receive: the ints at
     * bytes 20 and 16, the double at 0. */
    char ws[24], wr[24];
    MPI_Count wc[3] = {1, 1, 1};
    MPI_Aint wsd[3] = {0, 4, 8}, wrd[3] = {20, 16, 0};
    MPI_Datatype wt[3] = {MPI_INT, MPI_INT, MPI_DOUBLE};
    CHECK_RC(MPI_Neighbor_alltoallw_init_c(ws, wc, wsd, wt, wr, wc, wrd, wt, dg, MPI_INFO_NULL, &q));
    for (int it = 0; it < 3; it++) {
        int i0 = 1000 * it + 10 * rank, i1 = i0 + 1;
        double d2 = i0 + 0.5;
        memcpy(ws, &i0, 4);
        memcpy(ws + 4, &i1, 4);
        memcpy(ws + 8, &d2, 8);
        memset(wr, 0xff, sizeof wr);
        CHECK_RC(MPI_Start(&q));
        CHECK_RC(MPI_Wait(&q, MPI_STATUS_IGNORE));
        /* The two blocks from the left in edge order (its blocks 0 then 1),
         * the double from two steps left. */
        int g0, g1, gap;
        double g2;
        memcpy(&g0, wr + 20, 4);
        memcpy(&g1, wr + 16, 4);
        memcpy(&g2, wr, 8);
        memcpy(&gap, wr + 8, 4);
        CHECK(g0 == 1000 * it + 10 * left && g1 == 1000 * it + 10 * left + 1 && g2 == 1000 * it + 10 * src[2] + 0.5 && gap == -1,
              "dist graph alltoallw_init_c start %d: %d %d %g (gap %d)", it, g0, g1, g2, gap);
    }
    MPI_Request_free(&q);
    /* Alltoall_c on the same graph with all three blocks apart: edge order. */
    {
        int s3[3], r3[3];
        for (int k = 0; k < 3; k++) s3[k] = 10 * rank + k, r3[k] = -1;
        CHECK_RC(MPI_Neighbor_alltoall_c(s3, 1, MPI_INT, r3, 1, MPI_INT, dg));
        CHECK(r3[0] == 10 * left + 0 && r3[1] == 10 * left + 1 && r3[2] == 10 * src[2] + 2, "dist graph alltoall_c: %d %d %d", r3[0], r3[1], r3[2]);
        MPI_Request r;
        for (int k = 0; k < 3; k++) r3[k] = -1;
        CHECK_RC(MPI_Ineighbor_alltoall_c(s3, 1, MPI_INT, r3, 1, MPI_INT, dg, &r));
        CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK(r3[0] == 10 * left + 0 && r3[1] == 10 * left + 1 && r3[2] == 10 * src[2] + 2, "dist graph ialltoall_c: %d %d %d", r3[0], r3[1], r3[2]);
        int g3[3];
        CHECK_RC(MPI_Neighbor_allgather_c(&rank, 1, MPI_INT, g3, 1, MPI_INT, dg));
        CHECK(g3[0] == left && g3[1] == left && g3[2] == src[2], "allgather_c: %d %d %d", g3[0], g3[1], g3[2]);
    }

    /* Errors: no topology; MPI_IN_PLACE. */
    int x = 0, y[2];
    int rc = MPI_Neighbor_alltoall_init(&x, 1, MPI_INT, y, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &q);
    CHECK(error_class(rc) == MPI_ERR_TOPOLOGY, "init without a topology: class %d", error_class(rc));
    MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
    rc = MPI_Neighbor_allgather_init(MPI_IN_PLACE, 1, MPI_INT, y, 1, MPI_INT, ring, MPI_INFO_NULL, &q);
    CHECK(error_class(rc) == MPI_ERR_BUFFER, "MPI_IN_PLACE: class %d", error_class(rc));

    /* The ring still pairs blocks correctly after all of this. */
    CHECK_RC(MPI_Neighbor_alltoall_c(a2, 1, MPI_INT, r2, 1, MPI_INT, ring));
    CHECK(r2[0] == -left && r2[1] == right, "alltoall_c again: got %d %d", r2[0], r2[1]);

    MPI_Comm_free(&dg);
    MPI_Comm_free(&torus);
    MPI_Comm_free(&ring);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("topo_neighbor OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
