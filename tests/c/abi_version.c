/* Prints what MPI_Abi_get_version says: built with `mpicc` (MPICH ABI,
 * libmpi.so.12) it is -1.-1, with `mpicc -mpi-abi` (libmpi_abi.so.1) 1.0. */
#include "check.h"

int main(int argc, char **argv) {
    int major = -7, minor = -7, rank;
    /* Callable before MPI_Init. */
    CHECK_RC(MPI_Abi_get_version(&major, &minor));
    CHECK_RC(MPI_Init(&argc, &argv));
    CHECK_RC(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MPI_Info info;
    char val[32];
    int flag = 0, len = sizeof val;
    CHECK_RC(MPI_Abi_get_info(&info));
    CHECK_RC(MPI_Info_get_string(info, "mpi_count_size", &len, val, &flag));
    CHECK(flag && strcmp(val, "8") == 0, "mpi_count_size %s", val);
    CHECK_RC(MPI_Info_free(&info));
    if (rank == 0) printf("abi version %d.%d sizeof(MPI_Comm) %d\n", major, minor, (int)sizeof(MPI_Comm));
    /* Which library ran it (its first line): the standard ABI lets one
     * binary run on several. */
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int liblen = 0;
    CHECK_RC(MPI_Get_library_version(lib, &liblen));
    lib[strcspn(lib, "\n")] = 0;
    if (rank == 0) printf("library %s\n", lib);
    CHECK_RC(MPI_Finalize());
    return 0;
}
