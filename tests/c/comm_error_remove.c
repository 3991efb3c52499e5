/* MPI 4.1's MPI_Remove_error_class/code/string: strings first, then codes,
 * then the class; each out-of-order removal is MPI_ERR_ARG; a removed code
 * is no longer an error code; predefined classes cannot be removed. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, rc, c;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int round = 0; round < 3; round++) {
        int cls, code, len;
        char s[MPI_MAX_ERROR_STRING];
        CHECK_RC(MPI_Add_error_class(&cls));
        CHECK_RC(MPI_Add_error_code(cls, &code));
        CHECK_RC(MPI_Add_error_string(code, "a code of mine"));
        CHECK_RC(MPI_Add_error_string(cls, "a class of mine"));
        MPI_Error_class(code, &c);
        CHECK(c == cls, "class of the code %d", c);
        MPI_Error_string(code, s, &len);
        CHECK(strcmp(s, "a code of mine") == 0, "string %s", s);

        rc = MPI_Remove_error_class(cls);
        CHECK(error_class(rc) == MPI_ERR_ARG, "class with a code: class %d", error_class(rc));
        rc = MPI_Remove_error_code(code);
        CHECK(error_class(rc) == MPI_ERR_ARG, "code with a string: class %d", error_class(rc));
        CHECK_RC(MPI_Remove_error_string(code));
        rc = MPI_Remove_error_string(code);
        CHECK(error_class(rc) == MPI_ERR_ARG, "string removed twice: class %d", error_class(rc));
        rc = MPI_Remove_error_code(cls);
        CHECK(error_class(rc) == MPI_ERR_ARG, "a class as a code: class %d", error_class(rc));
        CHECK_RC(MPI_Remove_error_code(code));
        rc = MPI_Error_class(code, &c);
        CHECK(error_class(rc) == MPI_ERR_ARG, "removed code still has class %d", c);
        CHECK_RC(MPI_Remove_error_string(cls));
        CHECK_RC(MPI_Remove_error_class(cls));
        rc = MPI_Add_error_code(cls, &code);
        CHECK(error_class(rc) == MPI_ERR_ARG, "code of a removed class: class %d", error_class(rc));
    }
    rc = MPI_Remove_error_class(MPI_ERR_TRUNCATE);
    CHECK(error_class(rc) == MPI_ERR_ARG, "predefined class removed: class %d", error_class(rc));
    rc = MPI_Remove_error_code(MPI_ERR_TRUNCATE);
    CHECK(error_class(rc) == MPI_ERR_ARG, "predefined code removed: class %d", error_class(rc));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("comm_error_remove OK\n");
    MPI_Finalize();
    return 0;
}
