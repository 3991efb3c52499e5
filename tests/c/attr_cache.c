/* Caching: keyvals with copy and delete callbacks counted at dup, free,
 * replace and delete; MPI_COMM_DUP_FN / MPI_NULL_COPY_FN /
 * MPI_COMM_NULL_DELETE_FN; a keyval freed while in use; the predefined
 * attributes (the value is a pointer to an int); datatype attributes with
 * MPI_Type_dup/MPI_Type_free; attributes on MPI_COMM_SELF deleted at
 * MPI_Finalize; keyvals used on the wrong kind of object. */
#include "check.h"

static int copies, deletes, last_deleted, extra_seen;

static int count_copy(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag) {
    (void)c;
    (void)k;
    copies++;
    if (extra == (void *)0x1234) extra_seen++;
    *(void **)out = (void *)((char *)in + 1); /* the copy's value is one more */
    *flag = 1;
    return MPI_SUCCESS;
}

static int no_copy(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag) {
    (void)c;
    (void)k;
    (void)extra;
    (void)in;
    (void)out;
    copies++;
    *flag = 0;
    return MPI_SUCCESS;
}

static int count_delete(MPI_Comm c, int k, void *val, void *extra) {
    (void)c;
    (void)k;
    (void)extra;
    deletes++;
    last_deleted = (int)(long)val;
    return MPI_SUCCESS;
}

static int failing_copy(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag) {
    (void)c;
    (void)k;
    (void)extra;
    (void)in;
    (void)out;
    (void)flag;
    return MPI_ERR_OTHER;
}

static int type_copies, type_deletes;
static int tcopy(MPI_Datatype t, int k, void *extra, void *in, void *out, int *flag) {
    (void)t;
    (void)k;
    (void)extra;
    type_copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}
static int tdelete(MPI_Datatype t, int k, void *val, void *extra) {
    (void)t;
    (void)k;
    (void)val;
    (void)extra;
    type_deletes++;
    return MPI_SUCCESS;
}

static int self_delete(MPI_Comm c, int k, void *val, void *extra) {
    (void)k;
    (void)extra;
    /* Called during MPI_Finalize; MPI is still usable. */
    int flag = 0;
    MPI_Finalized(&flag);
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    if (r == 0 && c == MPI_COMM_SELF && !flag) printf("self attribute %ld deleted at finalize\n", (long)val);
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, flag, rc;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    void *v;

    /* Predefined attributes: pointers to ints. */
    int *p;
    CHECK_RC(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &p, &flag));
    CHECK(flag && *p >= 32767, "TAG_UB %d", *p);
    CHECK_RC(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &p, &flag));
    CHECK(flag && (*p == MPI_PROC_NULL || (*p >= 0 && *p < size)), "HOST %d", *p);
    CHECK_RC(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &p, &flag));
    CHECK(flag && (*p == MPI_ANY_SOURCE || *p == MPI_PROC_NULL || (*p >= 0 && *p < size)), "IO %d", *p);
    CHECK_RC(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &p, &flag));
    CHECK(!flag || *p == 0 || *p == 1, "WTIME_IS_GLOBAL %d", *p);
    CHECK_RC(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &p, &flag));
    CHECK(!flag || *p >= size, "UNIVERSE_SIZE %d", *p);
    CHECK_RC(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &p, &flag));
    CHECK(!flag || *p == 0, "APPNUM %d", *p);
    CHECK_RC(MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &p, &flag));
    CHECK(flag && *p >= 32767, "legacy Attr_get TAG_UB");
    rc = MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, (void *)1);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "setting TAG_UB: class %d", error_class(rc));
    rc = MPI_Comm_delete_attr(MPI_COMM_WORLD, MPI_HOST);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "deleting HOST: class %d", error_class(rc));

    /* A counting keyval. */
    int k1, k2, k3;
    CHECK_RC(MPI_Comm_create_keyval(count_copy, count_delete, &k1, (void *)0x1234));
    CHECK_RC(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &k2, NULL));
    CHECK_RC(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, count_delete, &k3, NULL));
    MPI_Comm a, b, c;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    CHECK_RC(MPI_Comm_get_attr(a, k1, &v, &flag));
    CHECK(!flag, "nothing set yet");
    CHECK_RC(MPI_Comm_set_attr(a, k1, (void *)100));
    CHECK_RC(MPI_Comm_set_attr(a, k2, (void *)200));
    CHECK_RC(MPI_Comm_set_attr(a, k3, (void *)300));
    CHECK_RC(MPI_Comm_get_attr(a, k1, &v, &flag));
    CHECK(flag && v == (void *)100, "get k1");

    /* Dup: k1 copied through its callback (value + 1), k2 through
     * MPI_COMM_DUP_FN (same value), k3 not copied. */
    copies = deletes = 0;
    CHECK_RC(MPI_Comm_dup(a, &b));
    CHECK(copies == 1 && extra_seen == 1, "copy callbacks %d extra %d", copies, extra_seen);
    MPI_Comm_get_attr(b, k1, &v, &flag);
    CHECK(flag && v == (void *)101, "k1 on the dup: %p", v);
    MPI_Comm_get_attr(b, k2, &v, &flag);
    CHECK(flag && v == (void *)200, "k2 on the dup: %p", v);
    MPI_Comm_get_attr(b, k3, &v, &flag);
    CHECK(!flag, "k3 (MPI_COMM_NULL_COPY_FN) not copied");
    /* A dup of the dup: two copies more in total. */
    CHECK_RC(MPI_Comm_dup(b, &c));
    MPI_Comm_get_attr(c, k1, &v, &flag);
    CHECK(copies == 2 && flag && v == (void *)102, "second generation %p", v);

    /* Replacing a value calls the delete callback on the old one. */
    CHECK_RC(MPI_Comm_set_attr(a, k1, (void *)110));
    CHECK(deletes == 1 && last_deleted == 100, "replace deleted %d (%d)", last_deleted, deletes);
    CHECK_RC(MPI_Comm_delete_attr(a, k1));
    CHECK(deletes == 2 && last_deleted == 110, "delete_attr");
    MPI_Comm_get_attr(a, k1, &v, &flag);
    CHECK(!flag, "deleted attribute is gone");
    rc = MPI_Comm_delete_attr(a, k1);
    CHECK(rc != MPI_SUCCESS, "deleting a missing attribute succeeded");

    /* Free: delete callbacks of what is cached (k1 on b and c, k3 on a). */
    deletes = 0;
    MPI_Comm_free(&c);
    CHECK(deletes == 1 && last_deleted == 102, "free c: %d deletes, last %d", deletes, last_deleted);
    MPI_Comm_free(&a);
    CHECK(deletes == 2 && last_deleted == 300, "free a: %d, last %d", deletes, last_deleted);

    /* A keyval freed while in use keeps working for the attributes it has. */
    CHECK_RC(MPI_Comm_free_keyval(&k1));
    CHECK(k1 == MPI_KEYVAL_INVALID, "free_keyval resets the handle");
    deletes = 0;
    MPI_Comm_free(&b);
    CHECK(deletes == 1 && last_deleted == 101, "delete callback of a freed keyval: %d", deletes);

    /* A copy callback that declines, and one that fails. */
    int k4, k5;
    MPI_Comm_create_keyval(no_copy, MPI_COMM_NULL_DELETE_FN, &k4, NULL);
    MPI_Comm_set_attr(MPI_COMM_WORLD, k4, (void *)4);
    copies = 0;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_get_attr(a, k4, &v, &flag);
    CHECK(copies == 1 && !flag, "declined copy");
    MPI_Comm_free(&a);
    MPI_Comm_delete_attr(MPI_COMM_WORLD, k4);
    MPI_Comm_free_keyval(&k4);
    MPI_Comm_create_keyval(failing_copy, MPI_COMM_NULL_DELETE_FN, &k5, NULL);
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_set_errhandler(a, MPI_ERRORS_RETURN);
    MPI_Comm_set_attr(a, k5, (void *)5);
    rc = MPI_Comm_dup(a, &b);
    CHECK(error_class(rc) == MPI_ERR_OTHER, "failing copy callback: class %d", error_class(rc));
    MPI_Comm_delete_attr(a, k5);
    MPI_Comm_free(&a);
    MPI_Comm_free_keyval(&k5);

    /* Legacy interface. */
    int lk;
    CHECK_RC(MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, &lk, NULL));
    CHECK_RC(MPI_Attr_put(MPI_COMM_WORLD, lk, (void *)77));
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    CHECK_RC(MPI_Attr_get(a, lk, &v, &flag));
    CHECK(flag && v == (void *)77, "MPI_DUP_FN copy");
    CHECK_RC(MPI_Attr_delete(a, lk));
    MPI_Comm_free(&a);
    MPI_Attr_delete(MPI_COMM_WORLD, lk);
    CHECK_RC(MPI_Keyval_free(&lk));

    /* Datatype attributes. */
    int tk;
    CHECK_RC(MPI_Type_create_keyval(tcopy, tdelete, &tk, NULL));
    MPI_Datatype t1, t2;
    MPI_Type_contiguous(3, MPI_INT, &t1);
    CHECK_RC(MPI_Type_set_attr(t1, tk, (void *)9));
    CHECK_RC(MPI_Type_dup(t1, &t2));
    CHECK_RC(MPI_Type_get_attr(t2, tk, &v, &flag));
    CHECK(type_copies == 1 && flag && v == (void *)9, "type attribute copied");
    MPI_Type_free(&t1);
    MPI_Type_free(&t2);
    CHECK(type_deletes == 2, "type delete callbacks %d", type_deletes);
    CHECK_RC(MPI_Type_set_attr(MPI_INT, tk, (void *)3));
    CHECK_RC(MPI_Type_get_attr(MPI_INT, tk, &v, &flag));
    CHECK(flag && v == (void *)3, "attribute on a predefined type");
    CHECK_RC(MPI_Type_delete_attr(MPI_INT, tk));
    CHECK(type_deletes == 3, "type delete_attr");

    /* Wrong kind of object. */
    int ck;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &ck, NULL);
    rc = MPI_Type_set_attr(MPI_INT, ck, (void *)1);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "comm keyval on a type: class %d", error_class(rc));
    rc = MPI_Comm_set_attr(MPI_COMM_WORLD, tk, (void *)1);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "type keyval on a comm: class %d", error_class(rc));
    rc = MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID, &v, &flag);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "KEYVAL_INVALID: class %d", error_class(rc));
    int freed = ck;
    MPI_Comm_free_keyval(&ck);
    rc = MPI_Comm_set_attr(MPI_COMM_WORLD, freed, (void *)1);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "freed keyval: class %d", error_class(rc));
    MPI_Type_free_keyval(&tk);

    /* Attributes on MPI_COMM_SELF are deleted at MPI_Finalize. */
    int sk;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &sk, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, sk, (void *)42);
    MPI_Comm_free_keyval(&sk);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("attr_cache OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
