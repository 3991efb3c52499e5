/* What MPICH answers for two corner cases, and so this library: the name
 * of MPI_C_COMPLEX (one handle with MPI_C_FLOAT_COMPLEX; MPICH calls it
 * "MPI_C_COMPLEX"), and the bounds of structs made only of MPI_LB or MPI_UB
 * markers (a bound that neither data nor a marker gives is 0, so LB at 8
 * alone gives lb 8, extent -8). Built with MPICH's mpicc too, the program
 * passes on MPICH itself (tests/tests/datatypes.rs runs both). */
#include "check.h"

static void expect_name(MPI_Datatype t, const char *want) {
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    CHECK_RC(MPI_Type_get_name(t, name, &len));
    CHECK(strcmp(name, want) == 0 && len == (int)strlen(want), "name '%s' want '%s'", name, want);
}

/* A struct of `n` copies of `marker` at `disp`: its lb, extent and size. */
static void expect_marker_struct(MPI_Datatype marker, int n, MPI_Aint disp, MPI_Aint lb, MPI_Aint ext) {
    MPI_Datatype t;
    MPI_Aint l, e, tl, te;
    int sz;
    CHECK_RC(MPI_Type_create_struct(1, &n, &disp, &marker, &t));
    CHECK_RC(MPI_Type_commit(&t));
    CHECK_RC(MPI_Type_get_extent(t, &l, &e));
    CHECK(l == lb && e == ext, "%d x %s at %ld: lb %ld extent %ld, want %ld %ld", n, marker == MPI_LB ? "LB" : "UB",
          (long)disp, (long)l, (long)e, (long)lb, (long)ext);
    CHECK_RC(MPI_Type_size(t, &sz));
    CHECK(sz == 0, "size %d", sz);
    CHECK_RC(MPI_Type_get_true_extent(t, &tl, &te));
    CHECK(te == 0, "true extent %ld", (long)te);
    CHECK_RC(MPI_Type_free(&t));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CHECK(MPI_C_COMPLEX == MPI_C_FLOAT_COMPLEX, "one handle");
    expect_name(MPI_C_COMPLEX, "MPI_C_COMPLEX");
    expect_name(MPI_C_FLOAT_COMPLEX, "MPI_C_COMPLEX");
    expect_name(MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX");
    expect_name(MPI_LONG_LONG_INT, "MPI_LONG_LONG_INT");

    expect_marker_struct(MPI_LB, 1, 0, 0, 0);
    expect_marker_struct(MPI_LB, 1, 8, 8, -8);
    expect_marker_struct(MPI_LB, 3, 4, 4, -4);
    expect_marker_struct(MPI_LB, 1, -16, -16, 16);
    expect_marker_struct(MPI_UB, 1, 8, 0, 8);
    expect_marker_struct(MPI_UB, 1, -8, 0, -8);

    MPI_Finalize();
    if (rank == 0) printf("dt_names_bounds OK\n");
    return 0;
}
