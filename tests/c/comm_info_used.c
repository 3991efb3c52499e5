/* MPI_Comm_get_info returns the hints the library uses: the standard's
 * assertions given to MPI_Comm_set_info or MPI_Comm_dup_with_info, not keys
 * it does not know (MPI 4.0 7.4.4: "user-supplied hints that were not
 * ignored"; MPICH suite: comm/comm_info). */
#include "check.h"

static int has(MPI_Info info, const char *key, const char *want) {
    char v[MPI_MAX_INFO_VAL + 1];
    int len = sizeof v, flag = 0;
    CHECK_RC(MPI_Info_get_string(info, key, &len, v, &flag));
    if (flag && want) CHECK(!strcmp(v, want), "%s is %s, expected %s", key, v, want);
    return flag;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Info in, used;
    MPI_Info_create(&in);
    MPI_Info_set(in, "invalid_test_key", "true");
    MPI_Info_set(in, "mpi_assert_no_any_source", "true");
    MPI_Comm dup, dup2;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    CHECK_RC(MPI_Comm_set_info(dup, in));
    CHECK_RC(MPI_Comm_get_info(dup, &used));
    CHECK(!has(used, "invalid_test_key", NULL), "an unknown key was returned by MPI_Comm_get_info");
    CHECK(has(used, "mpi_assert_no_any_source", "true"), "a standard assertion was dropped");
    int n;
    MPI_Info_get_nkeys(used, &n);
    CHECK(n == 1, "%d keys returned", n);
    MPI_Info_free(&used);
    CHECK_RC(MPI_Comm_dup_with_info(MPI_COMM_WORLD, in, &dup2));
    CHECK_RC(MPI_Comm_get_info(dup2, &used));
    CHECK(!has(used, "invalid_test_key", NULL), "an unknown key was kept by MPI_Comm_dup_with_info");
    CHECK(has(used, "mpi_assert_no_any_source", "true"), "dup_with_info dropped an assertion");
    MPI_Info_free(&used);
    /* The info object itself keeps every key. */
    CHECK(has(in, "invalid_test_key", "true"), "the program's info object lost a key");
    MPI_Info_free(&in);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&dup2);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("comm_info_used OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
