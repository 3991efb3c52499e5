/* MPI_Comm_idup is nonblocking: rank 0 starts it and then sends to rank 1,
 * which receives before starting its own (blocking here would deadlock);
 * idups of two communicators started in opposite orders on even and odd
 * ranks; three idups of one communicator in flight, then a blocking dup of
 * it before they are waited for; MPI_Test polling; idup_with_info hints,
 * attributes copied; the idup of an intercommunicator. Each new
 * communicator is checked isolated from the others by exchanges with the
 * same tag. Plain MPI_Init (thread level single). */
#include "check.h"

static int rank, size;
static int copies;

static int count_copy(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag) {
    (void)c, (void)k, (void)extra;
    copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

/* Sends id to the right on every communicator of cs (same tag), receiving
 * from the left; each receive must get its own communicator's id. */
static void isolated(MPI_Comm *cs, int n, const char *what) {
    MPI_Request q[16];
    int got[8], ids[8];
    for (int i = 0; i < n; i++) {
        int r, s;
        MPI_Comm_rank(cs[i], &r);
        MPI_Comm_size(cs[i], &s);
        got[i] = -1;
        ids[i] = 1000 * i + r;
        CHECK_RC(MPI_Irecv(&got[i], 1, MPI_INT, (r + s - 1) % s, 3, cs[i], &q[i]));
    }
    for (int i = n - 1; i >= 0; i--) {
        int r, s;
        MPI_Comm_rank(cs[i], &r);
        MPI_Comm_size(cs[i], &s);
        CHECK_RC(MPI_Isend(&ids[i], 1, MPI_INT, (r + 1) % s, 3, cs[i], &q[n + i]));
    }
    MPI_Status st[16];
    CHECK_RC(MPI_Waitall(2 * n, q, st));
    for (int i = 0; i < n; i++) {
        int r, s;
        MPI_Comm_rank(cs[i], &r);
        MPI_Comm_size(cs[i], &s);
        CHECK(got[i] == 1000 * i + (r + s - 1) % s, "%s: communicator %d got %d", what, i, got[i]);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Rank 1 joins the idup only after a message rank 0 sends after its. */
    MPI_Comm c;
    MPI_Request r;
    int x = 42, y = -1;
    if (rank == 1) CHECK_RC(MPI_Recv(&y, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_RC(MPI_Comm_idup(MPI_COMM_WORLD, &c, &r));
    if (rank == 0 && size > 1) CHECK_RC(MPI_Send(&x, 1, MPI_INT, 1, 5, MPI_COMM_WORLD));
    CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(r == MPI_REQUEST_NULL, "request not freed by the wait");
    if (rank == 1) CHECK(y == 42, "message before the idup: %d", y);
    int res;
    MPI_Comm_compare(c, MPI_COMM_WORLD, &res);
    CHECK(res == MPI_CONGRUENT, "idup compare %d", res);
    MPI_Comm both[2] = {c, MPI_COMM_WORLD};
    isolated(both, 2, "idup of the world");

    /* Two parents, started in opposite orders on even and odd ranks. */
    MPI_Comm a, b, na, nb;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &b);
    MPI_Request q[4];
    if (rank % 2 == 0) {
        CHECK_RC(MPI_Comm_idup(a, &na, &q[0]));
        CHECK_RC(MPI_Comm_idup(b, &nb, &q[1]));
    } else {
        CHECK_RC(MPI_Comm_idup(b, &nb, &q[1]));
        CHECK_RC(MPI_Comm_idup(a, &na, &q[0]));
    }
    MPI_Status sts[4];
    CHECK_RC(MPI_Waitall(2, q, sts));
    MPI_Comm four[4] = {a, b, na, nb};
    isolated(four, 4, "idups in opposite orders");
    int nr;
    MPI_Comm_rank(nb, &nr);
    CHECK(nr == size - 1 - rank, "idup of the reversed split: rank %d", nr);

    /* Three idups of one parent in flight, then a blocking dup of it. */
    MPI_Comm three[4];
    for (int i = 0; i < 3; i++) CHECK_RC(MPI_Comm_idup(a, &three[i], &q[i]));
    CHECK_RC(MPI_Comm_dup(a, &three[3]));
    int flag = 0;
    for (long spins = 0; !flag; spins++) {
        CHECK_RC(MPI_Testall(3, q, &flag, sts));
        CHECK(spins < 100000000L, "idups never complete under MPI_Testall");
    }
    isolated(three, 4, "three idups and a dup of one parent");

    /* Hints and attributes. */
    int key;
    MPI_Comm_create_keyval(count_copy, MPI_COMM_NULL_DELETE_FN, &key, NULL);
    static int val = 17;
    MPI_Comm_set_attr(a, key, &val);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    MPI_Comm h;
    CHECK_RC(MPI_Comm_idup_with_info(a, info, &h, &r));
    MPI_Info_free(&info);
    CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(copies == 1, "copy callback ran %d times", copies);
    int *v, found;
    MPI_Comm_get_attr(h, key, &v, &found);
    CHECK(found && v == &val, "attribute not copied by idup_with_info");
    MPI_Info used;
    MPI_Comm_get_info(h, &used);
    char s[MPI_MAX_INFO_VAL];
    int len = MPI_MAX_INFO_VAL;
    MPI_Info_get_string(used, "mpi_assert_no_any_tag", &len, s, &found);
    CHECK(found && strcmp(s, "true") == 0, "hint from idup_with_info: found %d", found);
    MPI_Info_free(&used);

    /* An intercommunicator (evens against odds). */
    if (size >= 2) {
        MPI_Comm half, inter, ni;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        CHECK_RC(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - rank % 2, 4, &inter));
        CHECK_RC(MPI_Comm_idup(inter, &ni, &r));
        CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
        int lr, rs, got = -1;
        MPI_Comm_rank(ni, &lr);
        MPI_Comm_remote_size(ni, &rs);
        if (lr < rs) {
            CHECK_RC(MPI_Sendrecv(&rank, 1, MPI_INT, lr, 0, &got, 1, MPI_INT, lr, 0, ni, MPI_STATUS_IGNORE));
            CHECK(got == 2 * lr + 1 - rank % 2, "idup of an intercommunicator: got %d", got);
        }
        MPI_Comm_free(&ni);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }

    /* Bad arguments fail at once. */
    int rc = MPI_Comm_idup(MPI_COMM_NULL, &h, &r);
    CHECK(error_class(rc) == MPI_ERR_COMM, "idup of MPI_COMM_NULL: class %d", error_class(rc));
    rc = MPI_Comm_idup(a, &h, NULL);
    CHECK(error_class(rc) == MPI_ERR_ARG, "idup without a request: class %d", error_class(rc));

    for (int i = 0; i < 4; i++) MPI_Comm_free(&three[i]);
    MPI_Comm_free(&h);
    MPI_Comm_free(&na);
    MPI_Comm_free(&nb);
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
    MPI_Comm_free(&c);
    MPI_Comm_free_keyval(&key);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("comm_idup OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
