/* Communicators: dup (context isolation), compare, split with keys that
 * reorder ranks, split_type SHARED, create, create_group, idup,
 * dup_with_info/set_info/get_info, names, free, and bad input. */
#include "check.h"

/* Sum of `v` over `comm` with point-to-point only (gather to 0, send back). */
static int psum(MPI_Comm comm, int v) {
    int r, n, s = v, x;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    if (r == 0) {
        for (int i = 1; i < n; i++) {
            MPI_Recv(&x, 1, MPI_INT, i, 77, comm, MPI_STATUS_IGNORE);
            s += x;
        }
        for (int i = 1; i < n; i++) MPI_Send(&s, 1, MPI_INT, i, 78, comm);
    } else {
        MPI_Send(&v, 1, MPI_INT, 0, 77, comm);
        MPI_Recv(&s, 1, MPI_INT, 0, 78, comm, MPI_STATUS_IGNORE);
    }
    return s;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, r, n, res;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Status st;

    /* Dup: same group, new context. */
    MPI_Comm dup;
    CHECK_RC(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_Comm_rank(dup, &r);
    MPI_Comm_size(dup, &n);
    CHECK(r == rank && n == size, "dup rank %d size %d", r, n);
    MPI_Comm_compare(dup, MPI_COMM_WORLD, &res);
    CHECK(res == MPI_CONGRUENT, "dup vs world %d", res);
    MPI_Comm_compare(dup, dup, &res);
    CHECK(res == MPI_IDENT, "dup vs itself %d", res);
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(dup, &eh);
    CHECK(eh == MPI_ERRORS_RETURN, "dup inherits the error handler");

    /* Context isolation: a message on dup never matches a receive on the
     * parent, even with wildcards. */
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int a = 1000 + rank, b = 2000 + rank, x = -1, y = -1;
    MPI_Request q;
    CHECK_RC(MPI_Isend(&a, 1, MPI_INT, next, 5, dup, &q));
    CHECK_RC(MPI_Send(&b, 1, MPI_INT, next, 5, MPI_COMM_WORLD));
    CHECK_RC(MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    CHECK(x == 2000 + prev, "world receive got %d (a message of the dup leaked?)", x);
    CHECK_RC(MPI_Recv(&y, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, dup, &st));
    CHECK(y == 1000 + prev, "dup receive got %d", y);
    MPI_Wait(&q, MPI_STATUS_IGNORE);

    /* Names. */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14, "world name %s", name);
    MPI_Comm_get_name(dup, name, &len);
    CHECK(len == 0, "a dup has no name: %s", name);
    MPI_Comm_set_name(dup, "my dup");
    MPI_Comm_get_name(dup, name, &len);
    CHECK(strcmp(name, "my dup") == 0 && len == 6, "name %s", name);

    /* Split: color = rank % 3, key = -rank (reverses the order). */
    MPI_Comm sp;
    CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, rank % 3, -rank, &sp));
    MPI_Comm_size(sp, &n);
    MPI_Comm_rank(sp, &r);
    int members = (size - rank % 3 + 2) / 3;
    int above = 0;
    for (int i = rank + 1; i < size; i++) above += (i % 3 == rank % 3);
    CHECK(n == members && r == above, "split size %d rank %d (want %d %d)", n, r, members, above);
    int s = psum(sp, rank), want = 0;
    for (int i = rank % 3; i < size; i += 3) want += i;
    CHECK(s == want, "sum over split %d want %d", s, want);
    MPI_Comm_compare(sp, MPI_COMM_WORLD, &res);
    CHECK(res == (size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL), "split vs world %d", res);
    MPI_Group g1, g2;
    MPI_Comm_group(sp, &g1);
    int zero = 0, w;
    MPI_Comm_group(MPI_COMM_WORLD, &g2);
    MPI_Group_translate_ranks(g1, 1, &zero, g2, &w);
    CHECK(w == (size - 1) - ((size - 1 - rank % 3) % 3), "rank 0 of split is world %d", w);
    MPI_Group_free(&g1);
    MPI_Group_free(&g2);

    /* Equal keys keep the parent's order; MPI_UNDEFINED gives COMM_NULL. */
    MPI_Comm sp2;
    CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, 7, &sp2));
    if (rank == 0) {
        CHECK(sp2 == MPI_COMM_NULL, "MPI_UNDEFINED color gives MPI_COMM_NULL");
    } else {
        MPI_Comm_rank(sp2, &r);
        CHECK(r == rank - 1, "equal keys: rank %d", r);
        MPI_Comm_free(&sp2);
    }

    /* Split type shared: every rank runs on this host. */
    MPI_Comm node;
    CHECK_RC(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    MPI_Comm_size(node, &n);
    MPI_Comm_rank(node, &r);
    CHECK(n == size && r == rank, "shared node comm size %d rank %d", n, r);
    CHECK(psum(node, 1) == size, "sum over node comm");
    MPI_Comm_free(&node);
    CHECK_RC(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, 0, MPI_INFO_NULL, &node));
    CHECK(node == MPI_COMM_NULL, "split_type UNDEFINED");

    /* Create from the group of the even ranks. */
    MPI_Group world, evens;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int range[1][3] = {{0, size - 1, 2}};
    MPI_Group_range_incl(world, 1, range, &evens);
    MPI_Comm ce;
    CHECK_RC(MPI_Comm_create(MPI_COMM_WORLD, evens, &ce));
    if (rank % 2) {
        CHECK(ce == MPI_COMM_NULL, "odd rank got a communicator");
    } else {
        MPI_Comm_rank(ce, &r);
        CHECK(r == rank / 2, "rank in evens comm %d", r);
        CHECK(psum(ce, 1) == (size + 1) / 2, "sum over evens");
        MPI_Comm_free(&ce);
    }

    /* Create_group: only the members call it (odd ranks do something else). */
    if (rank % 2 == 0) {
        CHECK_RC(MPI_Comm_create_group(MPI_COMM_WORLD, evens, 42, &ce));
        MPI_Comm_rank(ce, &r);
        MPI_Comm_size(ce, &n);
        CHECK(r == rank / 2 && n == (size + 1) / 2, "create_group rank %d size %d", r, n);
        int ne = (size + 1) / 2;
        CHECK(psum(ce, rank) == ne * (ne - 1), "sum over create_group");
        MPI_Comm_free(&ce);
    } else {
        MPI_Comm odd;
        MPI_Group og;
        MPI_Group_difference(world, evens, &og);
        CHECK_RC(MPI_Comm_create_group(MPI_COMM_WORLD, og, 43, &odd));
        MPI_Comm_size(odd, &n);
        CHECK(n == size / 2, "odd comm size %d", n);
        MPI_Comm_free(&odd);
        MPI_Group_free(&og);
    }
    MPI_Group_free(&evens);
    MPI_Group_free(&world);

    /* Idup completes (the request may already be complete). */
    MPI_Comm idup;
    CHECK_RC(MPI_Comm_idup(dup, &idup, &q));
    CHECK_RC(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK(q == MPI_REQUEST_NULL, "idup request freed");
    CHECK(psum(idup, 2) == 2 * size, "sum over idup");
    MPI_Comm_compare(idup, dup, &res);
    CHECK(res == MPI_CONGRUENT, "idup vs dup %d", res);

    /* Info hints. */
    MPI_Info info, used;
    char val[64];
    int flag;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    MPI_Comm di;
    CHECK_RC(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &di));
    CHECK_RC(MPI_Comm_get_info(di, &used));
    MPI_Info_get(used, "mpi_assert_no_any_tag", 63, val, &flag);
    CHECK(flag && strcmp(val, "true") == 0, "hint kept by dup_with_info");
    MPI_Info_free(&used);
    MPI_Info_set(info, "mpi_assert_no_any_source", "true");
    CHECK_RC(MPI_Comm_set_info(dup, info));
    MPI_Comm_get_info(dup, &used);
    MPI_Info_get_nkeys(used, &n);
    CHECK(n == 2, "set_info keys %d", n);
    MPI_Info_free(&used);
    MPI_Info_free(&info);
    MPI_Comm_free(&di);

    /* Free, then bad input. */
    MPI_Comm old = idup;
    CHECK_RC(MPI_Comm_free(&idup));
    CHECK(idup == MPI_COMM_NULL, "free sets MPI_COMM_NULL");
    int rc = MPI_Comm_size(old, &n);
    CHECK(error_class(rc) == MPI_ERR_COMM, "freed comm: class %d", error_class(rc));
    rc = MPI_Comm_rank(MPI_COMM_NULL, &r);
    CHECK(error_class(rc) == MPI_ERR_COMM, "COMM_NULL: class %d", error_class(rc));
    MPI_Comm wc = MPI_COMM_WORLD;
    rc = MPI_Comm_free(&wc);
    CHECK(error_class(rc) == MPI_ERR_COMM, "free of COMM_WORLD: class %d", error_class(rc));
    MPI_Comm bad;
    rc = MPI_Comm_split(MPI_COMM_WORLD, -5, 0, &bad);
    CHECK(error_class(rc) == MPI_ERR_ARG, "negative color: class %d", error_class(rc));
    rc = MPI_Send(&a, 1, MPI_INT, 0, 0, old);
    CHECK(error_class(rc) == MPI_ERR_COMM, "send on freed comm: class %d", error_class(rc));
    rc = MPI_Comm_split_type(MPI_COMM_WORLD, 12345, 0, MPI_INFO_NULL, &bad);
    CHECK(error_class(rc) == MPI_ERR_ARG, "bad split_type: class %d", error_class(rc));

    MPI_Comm_free(&sp);
    MPI_Comm_free(&dup);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("comm_basic OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
