/* After a panic inside the library (made by the test hook
 * MPICORE_TEST_PANIC=MPI_Barrier), the library is failed: with
 * MPI_ERRORS_RETURN ("return") the panicking call and every later one
 * return MPI_ERR_INTERN (error queries still work); with the default
 * MPI_ERRORS_ARE_FATAL ("fatal") the job ends with the panic's message. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = -1, size = -1, class = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int fatal = argc > 1 && strcmp(argv[1], "fatal") == 0;
    if (!fatal) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    if (fatal) {
        printf("UNREACHABLE: rank %d went on after a panic (rc %d)\n", rank, rc);
        return 0;
    }
    CHECK(MPI_Error_class(rc, &class) == MPI_SUCCESS && class == MPI_ERR_INTERN, "Barrier: rc %d class %d", rc, class);
    int r2 = -1, v = rank;
    rc = MPI_Comm_rank(MPI_COMM_WORLD, &r2);
    CHECK(rc != MPI_SUCCESS && r2 == -1, "Comm_rank after the panic: rc %d rank %d", rc, r2);
    rc = MPI_Send(&v, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
    CHECK(rc != MPI_SUCCESS, "Send after the panic succeeded");
    rc = MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rc != MPI_SUCCESS, "Allreduce after the panic succeeded");
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    CHECK(MPI_Error_string(rc, text, &len) == MPI_SUCCESS && len > 0, "Error_string");
    printf("panic_hook: rank %d: every call fails after the panic\n", rank);
    rc = MPI_Finalize();
    CHECK(rc != MPI_SUCCESS, "Finalize after the panic succeeded");
    return 0;
}
