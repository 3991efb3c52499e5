/* Failing attribute copy callbacks and freed keyvals (issue 19.9).
 * A copy callback that fails fails MPI_Comm_dup, MPI_Comm_idup and
 * MPI_Type_dup with its error, through the error handler, and leaves the
 * null handle; the copies made before it go through their delete
 * callbacks. Here rank 0's copy fails and the others' succeed: their dups
 * must still complete. An attribute whose keyval was freed while it was
 * still attached can be read and deleted; after that the keyval is gone. */
#include "check.h"

static int me;
static int deletes;      /* delete callbacks of the copying keyval */
static int handler_hits; /* calls of the communicator's error handler */
static int handler_code;

static int copy_ok(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag) {
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}
/* Fails at rank 0 with an error class of its own choosing. */
static int copy_fail(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag) {
    *(void **)out = in;
    *flag = 1;
    return me == 0 ? MPI_ERR_ARG : MPI_SUCCESS;
}
static int count_delete(MPI_Comm c, int k, void *v, void *extra) {
    deletes++;
    return MPI_SUCCESS;
}
static int type_copy_fail(MPI_Datatype t, int k, void *extra, void *in, void *out, int *flag) {
    *(void **)out = in;
    *flag = 1;
    return MPI_ERR_ARG;
}
static int type_count_delete(MPI_Datatype t, int k, void *v, void *extra) {
    deletes++;
    return MPI_SUCCESS;
}
static int win_count_delete(MPI_Win w, int k, void *v, void *extra) {
    deletes++;
    return MPI_SUCCESS;
}
static void on_error(MPI_Comm *c, int *code, ...) {
    handler_hits++;
    handler_code = *code;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm base;
    MPI_Comm_dup(MPI_COMM_WORLD, &base);
    MPI_Errhandler eh;
    CHECK_RC(MPI_Comm_create_errhandler(on_error, &eh));
    CHECK_RC(MPI_Comm_set_errhandler(base, eh));

    /* A keyval copied first (its copy must be deleted again at rank 0),
     * then the failing one. */
    int k_ok, k_fail;
    static int v1 = 1, v2 = 2;
    CHECK_RC(MPI_Comm_create_keyval(copy_ok, count_delete, &k_ok, NULL));
    CHECK_RC(MPI_Comm_create_keyval(copy_fail, MPI_COMM_NULL_DELETE_FN, &k_fail, NULL));
    CHECK_RC(MPI_Comm_set_attr(base, k_ok, &v1));
    CHECK_RC(MPI_Comm_set_attr(base, k_fail, &v2));

    for (int round = 0; round < 2; round++) {
        MPI_Comm d = MPI_COMM_WORLD;
        int rc;
        deletes = handler_hits = 0;
        if (round == 0) {
            rc = MPI_Comm_dup(base, &d);
        } else {
            MPI_Request req = MPI_REQUEST_NULL;
            rc = MPI_Comm_idup(base, &d, &req);
            CHECK_RC(MPI_Wait(&req, MPI_STATUS_IGNORE));
        }
        const char *what = round == 0 ? "MPI_Comm_dup" : "MPI_Comm_idup";
        if (me == 0) {
            CHECK(rc != MPI_SUCCESS, "%s succeeded though a copy callback failed", what);
            CHECK(error_class(rc) == MPI_ERR_ARG, "%s: class %d, expected the callback's MPI_ERR_ARG", what,
                  error_class(rc));
            CHECK(handler_hits == 1 && handler_code == rc, "%s: error handler called %d times (code %d, rc %d)",
                  what, handler_hits, handler_code, rc);
            CHECK(d == MPI_COMM_NULL, "%s: newcomm is not MPI_COMM_NULL", what);
            CHECK(deletes == 1, "%s: %d delete callbacks of the copied attribute, expected 1", what, deletes);
        } else {
            CHECK(rc == MPI_SUCCESS, "%s returned %d", what, rc);
            CHECK(handler_hits == 0, "%s: error handler called", what);
            CHECK(d != MPI_COMM_NULL, "%s: no communicator", what);
            CHECK_RC(MPI_Comm_free(&d));
            CHECK(deletes == 1, "%s: %d delete callbacks at free", what, deletes);
        }
        /* The others' duplicates lack rank 0's (they may only be freed);
         * base still works everywhere. */
        CHECK_RC(MPI_Barrier(base));
    }
    CHECK_RC(MPI_Comm_delete_attr(base, k_fail));

    /* A freed keyval lives as long as its attribute. */
    deletes = 0;
    int k_gone = k_ok;
    CHECK_RC(MPI_Comm_free_keyval(&k_ok));
    CHECK(k_ok == MPI_KEYVAL_INVALID, "keyval not reset");
    void *got = NULL;
    int flag = 0;
    CHECK_RC(MPI_Comm_get_attr(base, k_gone, &got, &flag));
    CHECK(flag && got == &v1, "attribute of a freed keyval not found");
    CHECK_RC(MPI_Comm_delete_attr(base, k_gone));
    CHECK(deletes == 1, "%d delete callbacks", deletes);
    MPI_Comm_set_errhandler(base, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_delete_attr(base, k_gone);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "keyval still there after its last attribute: rc %d", rc);
    CHECK_RC(MPI_Comm_free_keyval(&k_fail));

    /* Datatypes: the same two rules. */
    int tk_fail, tk_del;
    MPI_Datatype t, t2 = MPI_INT;
    MPI_Type_contiguous(2, MPI_INT, &t);
    CHECK_RC(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, type_count_delete, &tk_del, NULL));
    CHECK_RC(MPI_Type_create_keyval(type_copy_fail, MPI_TYPE_NULL_DELETE_FN, &tk_fail, NULL));
    CHECK_RC(MPI_Type_set_attr(t, tk_del, &v1));
    CHECK_RC(MPI_Type_set_attr(t, tk_fail, &v2));
    deletes = 0;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Type_dup(t, &t2);
    CHECK(error_class(rc) == MPI_ERR_ARG, "MPI_Type_dup: rc %d", rc);
    CHECK(t2 == MPI_DATATYPE_NULL, "MPI_Type_dup: newtype is not MPI_DATATYPE_NULL");
    CHECK(deletes == 1, "MPI_Type_dup: %d delete callbacks of the copy", deletes);
    CHECK_RC(MPI_Type_delete_attr(t, tk_fail));
    int tk_gone = tk_del;
    CHECK_RC(MPI_Type_free_keyval(&tk_del));
    CHECK_RC(MPI_Type_delete_attr(t, tk_gone));
    CHECK(deletes == 2, "%d delete callbacks", deletes);
    CHECK_RC(MPI_Type_free_keyval(&tk_fail));
    MPI_Type_free(&t);

    /* Windows: deleting under a freed keyval. */
    MPI_Win w;
    int wk;
    CHECK_RC(MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    CHECK_RC(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_count_delete, &wk, NULL));
    CHECK_RC(MPI_Win_set_attr(w, wk, &v1));
    int wk_gone = wk;
    CHECK_RC(MPI_Win_free_keyval(&wk));
    deletes = 0;
    CHECK_RC(MPI_Win_delete_attr(w, wk_gone));
    CHECK(deletes == 1, "window: %d delete callbacks", deletes);
    CHECK_RC(MPI_Win_free(&w));

    MPI_Comm_free(&base);
    MPI_Errhandler_free(&eh);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) printf("attr_fail OK on %d ranks\n", n);
    MPI_Finalize();
    return 0;
}
