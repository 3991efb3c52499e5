/* MPI_Info_create_env makes the same info before MPI_Init, after it (where
 * it equals MPI_INFO_ENV) and after MPI_Finalize (MPI 4.0 11.2.1: "the same
 * construction as MPI_INFO_ENV ... when the same arguments are used"); its
 * argv is `char *argv[]` (MPICH suite: info/infocreateenv). */
#include "check.h"

_Static_assert(_Generic(&MPI_Info_create_env, int (*)(int, char **, MPI_Info *): 1, default: 0),
               "MPI_Info_create_env takes char *argv[]");

static void same(MPI_Info a, MPI_Info b, const char *what) {
    int na, nb;
    CHECK_RC(MPI_Info_get_nkeys(a, &na));
    CHECK_RC(MPI_Info_get_nkeys(b, &nb));
    CHECK(na == nb && na > 0, "%s: %d keys against %d", what, na, nb);
    for (int i = 0; i < na; i++) {
        char key[MPI_MAX_INFO_KEY + 1], va[MPI_MAX_INFO_VAL + 1], vb[MPI_MAX_INFO_VAL + 1];
        int la = sizeof va, lb = sizeof vb, fa = 0, fb = 0;
        CHECK_RC(MPI_Info_get_nthkey(a, i, key));
        CHECK_RC(MPI_Info_get_string(a, key, &la, va, &fa));
        CHECK_RC(MPI_Info_get_string(b, key, &lb, vb, &fb));
        CHECK(fa && fb && !strcmp(va, vb), "%s: key %s is \"%s\" against \"%s\"", what, key, va, fb ? vb : "(unset)");
    }
}

int main(int argc, char **argv) {
    MPI_Info before, after, later;
    CHECK_RC(MPI_Info_create_env(argc, argv, &before));
    char v[MPI_MAX_INFO_VAL + 1];
    int len = sizeof v, flag = 0;
    CHECK_RC(MPI_Info_get_string(before, "command", &len, v, &flag));
    CHECK(flag && !strcmp(v, argv[0]), "command before init: %s", flag ? v : "(unset)");
    len = sizeof v;
    CHECK_RC(MPI_Info_get_string(before, "argv", &len, v, &flag));
    CHECK(flag && !strcmp(v, "one two"), "argv before init: %s", flag ? v : "(unset)");

    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK_RC(MPI_Info_create_env(argc, argv, &after));
    same(before, after, "before init against after");
    same(MPI_INFO_ENV, after, "MPI_INFO_ENV against after init");
    len = sizeof v;
    CHECK_RC(MPI_Info_get_string(after, "maxprocs", &len, v, &flag));
    CHECK(flag && atoi(v) == size, "maxprocs %s on %d ranks", flag ? v : "(unset)", size);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();

    CHECK_RC(MPI_Info_create_env(argc, argv, &later));
    same(before, later, "before init against after finalize");
    MPI_Info_free(&before);
    MPI_Info_free(&after);
    MPI_Info_free(&later);
    if (rank == 0) printf("info_env_same OK on %d ranks\n", size);
    return 0;
}
