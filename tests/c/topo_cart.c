/* Cartesian topologies: Dims_create results, Cart_create periodic and not,
 * coords/rank round trips, shift, get/cartdim/topo_test, Cart_sub rows and
 * columns exchanging data, Cart_map, neighborhood alltoall/allgather on a
 * ring and on a 2-D torus with value checks, and bad input. */
#include "check.h"

static void dims(int n, int nd, int *d, const int *want) {
    CHECK_RC(MPI_Dims_create(n, nd, d));
    for (int i = 0; i < nd; i++) CHECK(d[i] == want[i], "Dims_create(%d, %d)[%d] = %d, want %d", n, nd, i, d[i], want[i]);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, r, n, t;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Dims_create. */
    {
        int d2[2] = {0, 0}, d3[3] = {0, 0, 0};
        dims(6, 2, d2, (int[]){3, 2});
        d2[0] = d2[1] = 0;
        dims(7, 2, d2, (int[]){7, 1});
        d2[0] = d2[1] = 0;
        dims(72, 2, d2, (int[]){9, 8});
        dims(24, 3, d3, (int[]){4, 3, 2});
        int f[3] = {0, 3, 0};
        dims(6, 3, f, (int[]){2, 3, 1});
        d3[0] = d3[1] = d3[2] = 0;
        dims(1, 3, d3, (int[]){1, 1, 1});
        int bad[2] = {0, 4};
        int rc = MPI_Dims_create(6, 2, bad);
        CHECK(error_class(rc) == MPI_ERR_DIMS, "Dims_create(6, {0,4}): class %d", error_class(rc));
        int neg[2] = {-1, 0};
        rc = MPI_Dims_create(6, 2, neg);
        CHECK(error_class(rc) == MPI_ERR_DIMS, "negative dims: class %d", error_class(rc));
    }

    /* A 2-D grid of all ranks, periodic in dimension 0 only. */
    int d[2] = {0, 0}, per[2] = {1, 0};
    MPI_Dims_create(size, 2, d);
    MPI_Comm cart;
    CHECK_RC(MPI_Cart_create(MPI_COMM_WORLD, 2, d, per, 0, &cart));
    MPI_Topo_test(cart, &t);
    CHECK(t == MPI_CART, "topo_test %d", t);
    MPI_Topo_test(MPI_COMM_WORLD, &t);
    CHECK(t == MPI_UNDEFINED, "world has no topology");
    MPI_Cartdim_get(cart, &n);
    CHECK(n == 2, "cartdim %d", n);
    int gd[2], gp[2], gc[2];
    MPI_Cart_get(cart, 2, gd, gp, gc);
    CHECK(gd[0] == d[0] && gd[1] == d[1] && gp[0] == 1 && gp[1] == 0, "cart_get");
    CHECK(gc[0] == rank / d[1] && gc[1] == rank % d[1], "my coords %d %d", gc[0], gc[1]);
    for (int i = 0; i < size; i++) {
        int c[2];
        CHECK_RC(MPI_Cart_coords(cart, i, 2, c));
        CHECK(c[0] == i / d[1] && c[1] == i % d[1], "coords of %d", i);
        CHECK_RC(MPI_Cart_rank(cart, c, &r));
        CHECK(r == i, "rank of coords of %d is %d", i, r);
    }
    /* Periodic dimension wraps; the other does not. */
    int c[2] = {-1, 0};
    CHECK_RC(MPI_Cart_rank(cart, c, &r));
    CHECK(r == (d[0] - 1) * d[1], "wrapped rank %d", r);
    c[0] = 0;
    c[1] = d[1];
    int rc = MPI_Cart_rank(cart, c, &r);
    CHECK(rc != MPI_SUCCESS, "out of range in a non-periodic dimension accepted");
    int src, dst;
    CHECK_RC(MPI_Cart_shift(cart, 0, 1, &src, &dst));
    CHECK(src == ((gc[0] + d[0] - 1) % d[0]) * d[1] + gc[1], "shift 0 source %d", src);
    CHECK(dst == ((gc[0] + 1) % d[0]) * d[1] + gc[1], "shift 0 dest %d", dst);
    CHECK_RC(MPI_Cart_shift(cart, 1, 1, &src, &dst));
    CHECK(src == (gc[1] == 0 ? MPI_PROC_NULL : rank - 1), "shift 1 source %d", src);
    CHECK(dst == (gc[1] == d[1] - 1 ? MPI_PROC_NULL : rank + 1), "shift 1 dest %d", dst);
    CHECK_RC(MPI_Cart_shift(cart, 1, -2, &src, &dst));
    CHECK(dst == (gc[1] < 2 ? MPI_PROC_NULL : rank - 2), "shift -2 dest %d", dst);
    rc = MPI_Cart_shift(cart, 2, 1, &src, &dst);
    CHECK(rc != MPI_SUCCESS, "shift along a missing dimension accepted");

    /* Rows (keep dim 1) and columns (keep dim 0): sums with point-to-point. */
    MPI_Comm row, col;
    int keep_row[2] = {0, 1}, keep_col[2] = {1, 0};
    CHECK_RC(MPI_Cart_sub(cart, keep_row, &row));
    CHECK_RC(MPI_Cart_sub(cart, keep_col, &col));
    MPI_Comm_size(row, &n);
    MPI_Comm_rank(row, &r);
    CHECK(n == d[1] && r == gc[1], "row size %d rank %d", n, r);
    MPI_Cartdim_get(row, &n);
    CHECK(n == 1, "row cartdim %d", n);
    MPI_Cart_get(col, 1, gd, gp, gc + 0);
    CHECK(gd[0] == d[0] && gp[0] == 1, "column keeps the periodic dimension");
    /* Ring shift within the row and within the column. */
    {
        int rs, rd, v = rank, got = -1;
        MPI_Comm_size(row, &n);
        MPI_Comm_rank(row, &r);
        MPI_Sendrecv(&v, 1, MPI_INT, (r + 1) % n, 0, &got, 1, MPI_INT, (r + n - 1) % n, 0, row, MPI_STATUS_IGNORE);
        int rowbase = rank - r;
        CHECK(got == rowbase + (r + n - 1) % n, "row ring got %d", got);
        MPI_Cart_shift(col, 0, 1, &rs, &rd);
        MPI_Sendrecv(&v, 1, MPI_INT, rd, 1, &got, 1, MPI_INT, rs, 1, col, MPI_STATUS_IGNORE);
        CHECK(got == (rank - d[1] + size) % size, "column shift got %d", got);
    }
    /* Dropping every dimension leaves each process alone. */
    MPI_Comm none;
    int keep0[2] = {0, 0};
    CHECK_RC(MPI_Cart_sub(cart, keep0, &none));
    MPI_Comm_size(none, &n);
    MPI_Cartdim_get(none, &t);
    CHECK(n == 1 && t == 0, "zero-dimensional sub: size %d ndims %d", n, t);
    MPI_Comm_free(&none);

    /* Cart_map, and a grid smaller than the communicator. */
    int small = size > 1 ? size - 1 : 1;
    CHECK_RC(MPI_Cart_map(MPI_COMM_WORLD, 1, &small, per, &r));
    CHECK(r == (rank < small ? rank : MPI_UNDEFINED), "cart_map %d", r);
    MPI_Comm sc;
    CHECK_RC(MPI_Cart_create(MPI_COMM_WORLD, 1, &small, per, 1, &sc));
    if (rank < small) {
        MPI_Comm_size(sc, &n);
        CHECK(n == small, "small grid size %d", n);
        MPI_Comm_free(&sc);
    } else {
        CHECK(sc == MPI_COMM_NULL, "rank outside the grid got a communicator");
    }

    /* Neighborhood alltoall on a periodic ring (both neighbors may be the
     * same process, or this one). */
    {
        MPI_Comm ring;
        int one = 1, p = 1;
        MPI_Cart_create(MPI_COMM_WORLD, 1, &size, &p, 0, &ring);
        int sb[2] = {rank * 10 + 1, rank * 10 + 2}, rb[2] = {-1, -1};
        CHECK_RC(MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, ring));
        int left = (rank + size - 1) % size, right = (rank + 1) % size;
        /* Block 0 comes from the left neighbor's "+1" block and vice versa. */
        CHECK(rb[0] == left * 10 + 2 && rb[1] == right * 10 + 1, "ring alltoall got %d %d", rb[0], rb[1]);
        int ag[2] = {-1, -1};
        CHECK_RC(MPI_Neighbor_allgather(&rank, 1, MPI_INT, ag, 1, MPI_INT, ring));
        CHECK(ag[0] == left && ag[1] == right, "ring allgather got %d %d", ag[0], ag[1]);
        /* Nonblocking, twice in flight. */
        MPI_Request q[2];
        MPI_Status sts[2];
        int rb2[2];
        CHECK_RC(MPI_Ineighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, ring, &q[0]));
        int sb2[2] = {-sb[0], -sb[1]};
        CHECK_RC(MPI_Ineighbor_alltoall(sb2, 1, MPI_INT, rb2, 1, MPI_INT, ring, &q[1]));
        CHECK_RC(MPI_Waitall(2, q, sts));
        CHECK(rb[0] == left * 10 + 2 && rb2[1] == -(right * 10 + 1), "nonblocking ring alltoall");
        (void)one;
        MPI_Comm_free(&ring);
    }

    /* Neighborhood alltoall on the 2-D torus (periodic in both). */
    {
        MPI_Comm torus;
        int pp[2] = {1, 1};
        MPI_Cart_create(MPI_COMM_WORLD, 2, d, pp, 0, &torus);
        int sb[4][2], rb[4][2];
        for (int i = 0; i < 4; i++) {
            sb[i][0] = rank * 100 + i;
            sb[i][1] = -rank;
            rb[i][0] = rb[i][1] = -7;
        }
        CHECK_RC(MPI_Neighbor_alltoall(sb, 2, MPI_INT, rb, 2, MPI_INT, torus));
        for (int dim = 0; dim < 2; dim++) {
            int s, t2;
            MPI_Cart_shift(torus, dim, 1, &s, &t2);
            /* From the neighbor below: its block towards +dim (2*dim+1). */
            CHECK(rb[2 * dim][0] == s * 100 + 2 * dim + 1 && rb[2 * dim][1] == -s, "torus dim %d from below: %d", dim, rb[2 * dim][0]);
            CHECK(rb[2 * dim + 1][0] == t2 * 100 + 2 * dim && rb[2 * dim + 1][1] == -t2, "torus dim %d from above: %d", dim, rb[2 * dim + 1][0]);
        }
        /* alltoallv with varying counts and displacements. */
        int scount[4] = {1, 2, 1, 2}, sdis[4] = {0, 2, 4, 6}, rcount[4] = {2, 1, 2, 1}, rdis[4] = {6, 4, 2, 0};
        int sv[8], rv[8];
        for (int i = 0; i < 8; i++) {
            sv[i] = rank * 1000 + i;
            rv[i] = -1;
        }
        CHECK_RC(MPI_Neighbor_alltoallv(sv, scount, sdis, MPI_INT, rv, rcount, rdis, MPI_INT, torus));
        for (int dim = 0; dim < 2; dim++) {
            int s, t2;
            MPI_Cart_shift(torus, dim, 1, &s, &t2);
            /* From below: its block 2*dim+1 (2 ints at 2*(2*dim+1)). */
            int *blk = rv + rdis[2 * dim];
            CHECK(blk[0] == s * 1000 + sdis[2 * dim + 1] && blk[1] == s * 1000 + sdis[2 * dim + 1] + 1, "alltoallv below");
            blk = rv + rdis[2 * dim + 1];
            CHECK(blk[0] == t2 * 1000 + sdis[2 * dim], "alltoallv above: %d", blk[0]);
        }
        MPI_Comm_free(&torus);
    }

    /* Non-periodic line: the ends have MPI_PROC_NULL neighbors, whose
     * receive blocks stay untouched. */
    {
        MPI_Comm line;
        int np = 0;
        MPI_Cart_create(MPI_COMM_WORLD, 1, &size, &np, 0, &line);
        int sb[2] = {rank, rank}, rb[2] = {-5, -5};
        CHECK_RC(MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, line));
        CHECK(rb[0] == (rank == 0 ? -5 : rank - 1), "line from left %d", rb[0]);
        CHECK(rb[1] == (rank == size - 1 ? -5 : rank + 1), "line from right %d", rb[1]);
        MPI_Comm_free(&line);
    }

    /* Bad input. */
    int zd[2] = {size + 1, 1};
    MPI_Comm bad;
    rc = MPI_Cart_create(MPI_COMM_WORLD, 2, zd, per, 0, &bad);
    CHECK(error_class(rc) == MPI_ERR_TOPOLOGY && bad == MPI_COMM_NULL, "grid larger than the communicator: class %d", error_class(rc));
    int negd[2] = {-1, 2};
    rc = MPI_Cart_create(MPI_COMM_WORLD, 2, negd, per, 0, &bad);
    CHECK(error_class(rc) == MPI_ERR_DIMS, "negative dimension: class %d", error_class(rc));
    rc = MPI_Cart_create(MPI_COMM_WORLD, -1, negd, per, 0, &bad);
    CHECK(error_class(rc) == MPI_ERR_DIMS, "negative ndims: class %d", error_class(rc));
    rc = MPI_Cart_coords(MPI_COMM_WORLD, 0, 2, c);
    CHECK(error_class(rc) == MPI_ERR_TOPOLOGY, "coords without topology: class %d", error_class(rc));
    rc = MPI_Cart_coords(cart, size, 2, c);
    CHECK(error_class(rc) == MPI_ERR_RANK, "coords of rank %d: class %d", size, error_class(rc));
    int sbuf = 0, rbuf[4];
    rc = MPI_Neighbor_allgather(&sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_TOPOLOGY, "neighbor collective without topology: class %d", error_class(rc));

    MPI_Comm_free(&row);
    MPI_Comm_free(&col);
    MPI_Comm_free(&cart);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("topo_cart OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
