/* Timing of MPI-IO patterns (not a test): every rank writes and reads M
 * ints, (a) as one contiguous block, (b) interleaved with the other ranks
 * one int at a time (a vector filetype), with the collective forms.
 * argv[1]: directory, argv[2]: M (default 262144). Prints MB/s. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc > 1, "usage: io_bench DIR [M]");
    int m = argc > 2 ? atoi(argv[2]) : 262144;
    char path[4096];
    snprintf(path, sizeof path, "%s/io_bench.dat", argv[1]);
    int *buf = malloc(sizeof(int) * m);
    for (int i = 0; i < m; i++) buf[i] = rank + i * size;
    MPI_Datatype vec, ft;
    MPI_Type_vector(1, 1, size, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, (MPI_Aint)size * sizeof(int), &ft);
    MPI_Type_commit(&ft);
    double mb = (double)m * sizeof(int) * size / 1e6;
    for (int pattern = 0; pattern < 2; pattern++) {
        MPI_File fh;
        CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
        if (pattern == 0)
            CHECK_RC(MPI_File_set_view(fh, (MPI_Offset)rank * m * sizeof(int), MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
        else
            CHECK_RC(MPI_File_set_view(fh, (MPI_Offset)rank * sizeof(int), MPI_INT, ft, "native", MPI_INFO_NULL));
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        CHECK_RC(MPI_File_write_at_all(fh, 0, buf, m, MPI_INT, MPI_STATUS_IGNORE));
        MPI_Barrier(MPI_COMM_WORLD);
        double t1 = MPI_Wtime();
        memset(buf, 0, sizeof(int) * m);
        CHECK_RC(MPI_File_read_at_all(fh, 0, buf, m, MPI_INT, MPI_STATUS_IGNORE));
        MPI_Barrier(MPI_COMM_WORLD);
        double t2 = MPI_Wtime();
        for (int i = 0; i < m; i++) CHECK(buf[i] == rank + i * size, "int %d", i);
        if (rank == 0)
            printf("%-12s %d ranks x %d ints: write_all %8.1f MB/s  read_all %8.1f MB/s\n", pattern ? "interleaved" : "contiguous", size, m,
                   mb / (t1 - t0), mb / (t2 - t1));
        CHECK_RC(MPI_File_close(&fh));
    }
    MPI_Type_free(&ft);
    MPI_Type_free(&vec);
    free(buf);
    MPI_Finalize();
    return 0;
}
