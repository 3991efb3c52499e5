/* Info objects: create/set/get/get_valuelen/get_string/get_nkeys/
 * get_nthkey/dup/delete/free, MPI_INFO_ENV, and bad input. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, flag, n, len, rc;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char val[MPI_MAX_INFO_VAL + 1], key[MPI_MAX_INFO_KEY + 1];

    MPI_Info info, dup;
    CHECK_RC(MPI_Info_create(&info));
    MPI_Info_get_nkeys(info, &n);
    CHECK(n == 0, "new info has %d keys", n);
    CHECK_RC(MPI_Info_set(info, "alpha", "1"));
    CHECK_RC(MPI_Info_set(info, "beta", "two"));
    CHECK_RC(MPI_Info_set(info, "gamma", "three three"));
    CHECK_RC(MPI_Info_set(info, "alpha", "one")); /* replaces in place */
    MPI_Info_get_nkeys(info, &n);
    CHECK(n == 3, "nkeys %d", n);
    MPI_Info_get_nthkey(info, 0, key);
    CHECK(strcmp(key, "alpha") == 0, "key 0 %s", key);
    MPI_Info_get_nthkey(info, 2, key);
    CHECK(strcmp(key, "gamma") == 0, "key 2 %s", key);
    CHECK_RC(MPI_Info_get(info, "alpha", MPI_MAX_INFO_VAL, val, &flag));
    CHECK(flag && strcmp(val, "one") == 0, "alpha = %s", val);
    CHECK_RC(MPI_Info_get(info, "missing", MPI_MAX_INFO_VAL, val, &flag));
    CHECK(!flag, "missing key found");
    /* Truncation to valuelen characters. */
    CHECK_RC(MPI_Info_get(info, "gamma", 5, val, &flag));
    CHECK(flag && strcmp(val, "three") == 0, "truncated %s", val);
    CHECK_RC(MPI_Info_get_valuelen(info, "gamma", &len, &flag));
    CHECK(flag && len == 11, "valuelen %d", len);
    /* get_string: length query with buflen 0, then a short buffer. */
    int buflen = 0;
    CHECK_RC(MPI_Info_get_string(info, "gamma", &buflen, NULL, &flag));
    CHECK(flag && buflen == 12, "get_string length %d", buflen);
    char small[4];
    buflen = 4;
    CHECK_RC(MPI_Info_get_string(info, "gamma", &buflen, small, &flag));
    CHECK(flag && buflen == 12 && strcmp(small, "thr") == 0, "get_string short %s %d", small, buflen);

    CHECK_RC(MPI_Info_dup(info, &dup));
    CHECK_RC(MPI_Info_delete(info, "beta"));
    MPI_Info_get_nkeys(info, &n);
    CHECK(n == 2, "after delete %d", n);
    MPI_Info_get_nkeys(dup, &n);
    CHECK(n == 3, "dup unaffected %d", n);
    MPI_Info_get(dup, "beta", MPI_MAX_INFO_VAL, val, &flag);
    CHECK(flag && strcmp(val, "two") == 0, "dup beta %s", val);
    rc = MPI_Info_delete(info, "beta");
    CHECK(error_class(rc) == MPI_ERR_INFO_NOKEY, "delete missing: class %d", error_class(rc));

    /* Bad input. */
    char longkey[MPI_MAX_INFO_KEY + 10];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = 0;
    rc = MPI_Info_set(info, longkey, "x");
    CHECK(error_class(rc) == MPI_ERR_INFO_KEY, "long key: class %d", error_class(rc));
    rc = MPI_Info_set(info, "", "x");
    CHECK(error_class(rc) == MPI_ERR_INFO_KEY, "empty key: class %d", error_class(rc));
    char *longval = malloc(MPI_MAX_INFO_VAL + 10);
    memset(longval, 'v', MPI_MAX_INFO_VAL + 9);
    longval[MPI_MAX_INFO_VAL + 9] = 0;
    rc = MPI_Info_set(info, "k", longval);
    CHECK(error_class(rc) == MPI_ERR_INFO_VALUE, "long value: class %d", error_class(rc));
    free(longval);
    rc = MPI_Info_get_nthkey(info, 2, key);
    CHECK(error_class(rc) == MPI_ERR_ARG, "nthkey out of range: class %d", error_class(rc));
    MPI_Info old = info;
    CHECK_RC(MPI_Info_free(&info));
    CHECK(info == MPI_INFO_NULL, "free sets MPI_INFO_NULL");
    rc = MPI_Info_get_nkeys(old, &n);
    CHECK(error_class(rc) == MPI_ERR_INFO, "freed info: class %d", error_class(rc));
    rc = MPI_Info_set(MPI_INFO_NULL, "a", "b");
    CHECK(error_class(rc) == MPI_ERR_INFO, "INFO_NULL: class %d", error_class(rc));
    MPI_Info_free(&dup);

    /* MPI_INFO_ENV: readable, not writable. */
    CHECK_RC(MPI_Info_get(MPI_INFO_ENV, "maxprocs", MPI_MAX_INFO_VAL, val, &flag));
    CHECK(flag && atoi(val) == size, "maxprocs %s", flag ? val : "(unset)");
    CHECK_RC(MPI_Info_get(MPI_INFO_ENV, "command", MPI_MAX_INFO_VAL, val, &flag));
    CHECK(flag && strstr(val, "info_basic") != NULL, "command %s", flag ? val : "(unset)");
    rc = MPI_Info_set(MPI_INFO_ENV, "a", "b");
    CHECK(error_class(rc) == MPI_ERR_INFO, "writing INFO_ENV: class %d", error_class(rc));
    CHECK_RC(MPI_Info_dup(MPI_INFO_ENV, &dup));
    CHECK_RC(MPI_Info_set(dup, "a", "b"));
    MPI_Info_free(&dup);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("info_basic OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
