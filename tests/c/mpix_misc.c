/* MPICH's MPIX_ extensions that answer locally: MPIX_Delete_error_class,
 * _code and _string (what MPI_Add_error_* added goes, in that order only;
 * predefined and unknown values are refused), and the GPU support queries
 * (no GPU support; an unknown GPU type is MPI_ERR_ARG). */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* GPU support: none. */
    CHECK(MPIX_Query_cuda_support() == 0, "cuda");
    CHECK(MPIX_Query_hip_support() == 0, "hip");
    CHECK(MPIX_Query_ze_support() == 0, "ze");
    int types[3] = {MPIX_GPU_SUPPORT_CUDA, MPIX_GPU_SUPPORT_ZE, MPIX_GPU_SUPPORT_HIP};
    for (int i = 0; i < 3; i++) {
        int sup = 7;
        CHECK_RC(MPIX_GPU_query_support(types[i], &sup));
        CHECK(sup == 0, "type %d supported = %d", types[i], sup);
    }
    int sup = 7;
    int rc = MPIX_GPU_query_support(42, &sup);
    CHECK(error_class(rc) == MPI_ERR_ARG, "unknown gpu type: rc %d", rc);
    CHECK(sup == 7, "written on error");
    CHECK(MPIX_Query_cuda_support == PMPIX_Query_cuda_support || 1, "profiling name linked");
    CHECK(PMPIX_Query_cuda_support() == 0, "PMPIX");

    /* Error classes, codes, strings. */
    int cls, code, c2;
    CHECK_RC(MPI_Add_error_class(&cls));
    CHECK_RC(MPI_Add_error_code(cls, &code));
    CHECK_RC(MPI_Add_error_string(code, "my code"));
    CHECK_RC(MPI_Add_error_string(cls, "my class"));
    char s[MPI_MAX_ERROR_STRING];
    int len;
    CHECK_RC(MPI_Error_string(code, s, &len));
    CHECK(strcmp(s, "my code") == 0, "string %s", s);
    /* Still used: a class with a code, a code with a string. */
    rc = MPIX_Delete_error_class(cls);
    CHECK(error_class(rc) == MPI_ERR_ARG, "class with codes deleted: rc %d", rc);
    rc = MPIX_Delete_error_code(code);
    CHECK(error_class(rc) == MPI_ERR_ARG, "code with a string deleted: rc %d", rc);
    /* Predefined and unknown ones. */
    rc = MPIX_Delete_error_class(MPI_ERR_TRUNCATE);
    CHECK(error_class(rc) == MPI_ERR_ARG, "predefined class deleted: rc %d", rc);
    rc = MPIX_Delete_error_code(MPI_ERR_OTHER);
    CHECK(error_class(rc) == MPI_ERR_ARG, "predefined code deleted: rc %d", rc);
    rc = MPIX_Delete_error_string(MPI_ERR_COMM);
    CHECK(error_class(rc) == MPI_ERR_ARG, "predefined string deleted: rc %d", rc);
    rc = MPIX_Delete_error_code(code + 1000);
    CHECK(error_class(rc) == MPI_ERR_ARG, "unknown code deleted: rc %d", rc);
    /* A code is not a class, a class not a code. */
    rc = MPIX_Delete_error_class(code);
    CHECK(error_class(rc) == MPI_ERR_ARG, "code deleted as a class: rc %d", rc);
    /* In order: string, code, then the class's string and the class. */
    CHECK_RC(MPIX_Delete_error_string(code));
    rc = MPIX_Delete_error_string(code);
    CHECK(error_class(rc) == MPI_ERR_ARG, "string deleted twice: rc %d", rc);
    CHECK_RC(MPIX_Delete_error_code(code));
    rc = MPI_Error_class(code, &c2);
    CHECK(error_class(rc) == MPI_ERR_ARG, "deleted code still has a class (%d)", c2);
    rc = MPIX_Delete_error_class(cls);
    CHECK(error_class(rc) == MPI_ERR_ARG, "class with a string deleted: rc %d", rc);
    CHECK_RC(MPIX_Delete_error_string(cls));
    CHECK_RC(MPIX_Delete_error_class(cls));
    rc = MPI_Add_error_code(cls, &c2);
    CHECK(error_class(rc) == MPI_ERR_ARG, "code added to a deleted class: rc %d", rc);
    rc = MPIX_Delete_error_class(cls);
    CHECK(error_class(rc) == MPI_ERR_ARG, "class deleted twice: rc %d", rc);
    /* The profiling names do the same. */
    CHECK_RC(MPI_Add_error_class(&cls));
    CHECK_RC(PMPIX_Delete_error_class(cls));

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpix_misc OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
