/* A keyval freed while attributes still use it may be freed again, by
 * another copy of its handle, until its last attribute goes: a delete
 * callback that frees its own keyval, then the program freeing the handle
 * it kept (MPICH's attr/keyval_double_free*). Each free succeeds, resets
 * the handle it was given, and the callbacks still run for the attributes
 * left; once the last one is gone the handle is invalid. */
#include "check.h"

static int deletes;

static int comm_del(MPI_Comm comm, int keyval, void *val, void *extra) {
    (void)comm, (void)val, (void)extra;
    deletes++;
    CHECK_RC(MPI_Comm_free_keyval(&keyval));
    CHECK(keyval == MPI_KEYVAL_INVALID, "free in the callback resets its copy");
    return MPI_SUCCESS;
}

static int type_del(MPI_Datatype t, int keyval, void *val, void *extra) {
    (void)t, (void)val, (void)extra;
    deletes++;
    CHECK_RC(MPI_Type_free_keyval(&keyval));
    return MPI_SUCCESS;
}

static int win_del(MPI_Win w, int keyval, void *val, void *extra) {
    (void)w, (void)val, (void)extra;
    deletes++;
    CHECK_RC(MPI_Win_free_keyval(&keyval));
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Communicators, through the MPI-1 names as well. */
    MPI_Comm dup, dup2;
    int k, k_copy, k_copy2;
    CHECK_RC(MPI_Keyval_create(MPI_NULL_COPY_FN, comm_del, &k, NULL));
    k_copy = k_copy2 = k;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup2);
    CHECK_RC(MPI_Attr_put(dup, k, NULL));
    CHECK_RC(MPI_Attr_put(dup2, k, NULL));
    CHECK_RC(MPI_Comm_free(&dup)); /* first free, in the callback */
    CHECK(deletes == 1, "delete callback ran %d times", deletes);
    CHECK_RC(MPI_Keyval_free(&k)); /* second, still in use by dup2 */
    CHECK(k == MPI_KEYVAL_INVALID, "free resets the handle");
    CHECK_RC(MPI_Comm_free_keyval(&k_copy)); /* third */
    void *v;
    int flag = 0;
    CHECK_RC(MPI_Comm_get_attr(dup2, k_copy2, &v, &flag));
    CHECK(flag, "the attribute of a freed keyval is still there");
    CHECK_RC(MPI_Comm_free(&dup2)); /* the callback frees it once more */
    CHECK(deletes == 2, "delete callback ran %d times", deletes);
    /* Now gone: freeing it is an error of class MPI_ERR_KEYVAL. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_free_keyval(&k_copy2);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "free of a gone keyval: class %d", error_class(rc));

    /* Datatypes. */
    MPI_Datatype t;
    int tk, tk_copy, tk_del;
    MPI_Type_contiguous(2, MPI_INT, &t);
    CHECK_RC(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, type_del, &tk, NULL));
    tk_copy = tk_del = tk;
    CHECK_RC(MPI_Type_set_attr(MPI_INT, tk, NULL));
    CHECK_RC(MPI_Type_set_attr(t, tk, NULL));
    CHECK_RC(MPI_Type_free(&t));
    CHECK_RC(MPI_Type_free_keyval(&tk));
    CHECK_RC(MPI_Type_free_keyval(&tk_copy));
    /* The last attribute: its callback frees the keyval once more. */
    CHECK_RC(MPI_Type_delete_attr(MPI_INT, tk_del));
    CHECK(deletes == 4, "type delete callbacks: %d", deletes);

    /* Windows. */
    MPI_Win w;
    int wk, wk_copy;
    MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    CHECK_RC(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_del, &wk, NULL));
    wk_copy = wk;
    CHECK_RC(MPI_Win_set_attr(w, wk, NULL));
    CHECK_RC(MPI_Win_free_keyval(&wk));
    CHECK_RC(MPI_Win_free_keyval(&wk_copy));
    CHECK_RC(MPI_Win_free(&w));
    CHECK(deletes == 5, "window delete callback: %d", deletes);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("attr_free_twice OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
