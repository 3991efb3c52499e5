/* MPI_ERRORS_ARE_FATAL as the default file error handler: opening a
 * missing file ends the job (the harness checks the exit status and the
 * message). argv[1]: directory. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    CHECK(argc > 1, "usage: io_fatal DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/no-such-file.dat", argv[1]);
    CHECK_RC(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_ARE_FATAL));
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    printf("io_fatal: still running after the failed open\n");
    MPI_Finalize();
    return 0;
}
