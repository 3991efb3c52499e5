/* MPI 4.0 (section 11.4.1) allows info objects before MPI_Init and after
 * MPI_Finalize: one made before init is set, read, duplicated and given to
 * a communicator after init; MPI_Info_create_env works before init; after
 * finalize the objects are still readable and can be freed. */
#include "check.h"

static void expect(MPI_Info info, const char *key, const char *want, const char *what) {
    char v[64];
    int flag = 0, len = 0;
    CHECK_RC(MPI_Info_get_valuelen(info, key, &len, &flag));
    CHECK(flag && len == (int)strlen(want), "%s: valuelen of %s is %d (flag %d)", what, key, len, flag);
    int buflen = sizeof v;
    CHECK_RC(MPI_Info_get_string(info, key, &buflen, v, &flag));
    CHECK(flag && !strcmp(v, want), "%s: %s is \"%s\", expected \"%s\"", what, key, flag ? v : "(unset)", want);
}

int main(int argc, char **argv) {
    int init = 1;
    MPI_Initialized(&init);
    CHECK(!init, "MPI_Initialized says yes before MPI_Init");
    MPI_Info info, dup, env;
    CHECK_RC(MPI_Info_create(&info));
    CHECK_RC(MPI_Info_set(info, "mpi_assert_no_any_tag", "true"));
    CHECK_RC(MPI_Info_set(info, "color", "blue"));
    CHECK_RC(MPI_Info_set(info, "scratch", "x"));
    CHECK_RC(MPI_Info_delete(info, "scratch"));
    int n = -1;
    CHECK_RC(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 2, "nkeys before init: %d", n);
    char key[MPI_MAX_INFO_KEY + 1];
    CHECK_RC(MPI_Info_get_nthkey(info, 1, key));
    CHECK(!strcmp(key, "color"), "second key is %s", key);
    expect(info, "color", "blue", "before init");
    CHECK_RC(MPI_Info_dup(info, &dup));
    CHECK_RC(MPI_Info_set(dup, "color", "green"));
    expect(info, "color", "blue", "original after changing its dup");
    CHECK_RC(MPI_Info_create_env(argc, argv, &env));
    CHECK_RC(MPI_Info_free(&env));
    CHECK(env == MPI_INFO_NULL, "MPI_Info_free left the handle");

    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    expect(dup, "color", "green", "after init");
    MPI_Comm c;
    CHECK_RC(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c));
    MPI_Info used;
    CHECK_RC(MPI_Comm_get_info(c, &used));
    expect(used, "mpi_assert_no_any_tag", "true", "communicator made with a pre-init info");
    CHECK_RC(MPI_Info_free(&used));
    MPI_Comm_free(&c);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();

    expect(info, "color", "blue", "after finalize");
    CHECK_RC(MPI_Info_set(info, "late", "yes"));
    expect(info, "late", "yes", "set after finalize");
    CHECK_RC(MPI_Info_free(&info));
    CHECK_RC(MPI_Info_free(&dup));
    if (rank == 0) printf("info_before_init OK\n");
    return 0;
}
