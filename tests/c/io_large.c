/* The large-count (_c) forms of the MPI-IO data access calls: each rank
 * writes its block through one form, every rank reads every block back
 * through another and checks every int; counts come back through
 * MPI_Get_count_c. argv[1]: a directory for the file. */
#include "check.h"

#define N 256

static int val(int rank, int i) { return rank * 100000 + i * 3 + 1; }

static void expect(const int *got, int rank, const char *how) {
    for (int i = 0; i < N; i++)
        CHECK(got[i] == val(rank, i), "%s: block of rank %d, int %d is %d", how, rank, i, got[i]);
}

static void count_is(MPI_Status *st, MPI_Count want, const char *how) {
    MPI_Count c = -1;
    CHECK_RC(MPI_Get_count_c(st, MPI_INT, &c));
    CHECK(c == want, "%s: count %lld, not %lld", how, (long long)c, (long long)want);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc > 1, "usage: io_large DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/io_large.dat", argv[1]);
    MPI_File fh;
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_Count ext = -1;
    CHECK_RC(MPI_File_get_type_extent_c(fh, MPI_INT, &ext));
    CHECK(ext == (MPI_Count)sizeof(int), "type extent %lld", (long long)ext);

    int mine[N], got[N];
    for (int i = 0; i < N; i++) mine[i] = val(rank, i);
    MPI_Offset at = (MPI_Offset)rank * N * sizeof(int);
    MPI_Status st;
    /* Half the block with write_at_c, the other half with iwrite_at_c. */
    CHECK_RC(MPI_File_write_at_c(fh, at, mine, N / 2, MPI_INT, &st));
    count_is(&st, N / 2, "write_at_c");
    MPI_Request rq;
    CHECK_RC(MPI_File_iwrite_at_c(fh, at + N / 2 * sizeof(int), mine + N / 2, N / 2, MPI_INT, &rq));
    CHECK_RC(MPI_Wait(&rq, &st));
    count_is(&st, N / 2, "iwrite_at_c");
    CHECK_RC(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_File_sync(fh));

    /* Every block back: read_at_all_c (the right neighbour's), read_at_c,
     * iread_at_c, and the individual pointer with seek + read_c. */
    int right = (rank + 1) % size;
    MPI_Offset rat = (MPI_Offset)right * N * sizeof(int);
    memset(got, 0, sizeof got);
    CHECK_RC(MPI_File_read_at_all_c(fh, rat, got, N, MPI_INT, &st));
    count_is(&st, N, "read_at_all_c");
    expect(got, right, "read_at_all_c");
    for (int r = 0; r < size; r++) {
        MPI_Offset o = (MPI_Offset)r * N * sizeof(int);
        memset(got, 0, sizeof got);
        CHECK_RC(MPI_File_read_at_c(fh, o, got, N, MPI_INT, &st));
        expect(got, r, "read_at_c");
        memset(got, 0, sizeof got);
        CHECK_RC(MPI_File_iread_at_c(fh, o, got, N, MPI_INT, &rq));
        CHECK_RC(MPI_Wait(&rq, &st));
        count_is(&st, N, "iread_at_c");
        expect(got, r, "iread_at_c");
        memset(got, 0, sizeof got);
        CHECK_RC(MPI_File_seek(fh, o, MPI_SEEK_SET));
        CHECK_RC(MPI_File_read_c(fh, got, N, MPI_INT, &st));
        expect(got, r, "read_c");
    }
    /* A split collective read of this rank's own block. */
    memset(got, 0, sizeof got);
    CHECK_RC(MPI_File_read_at_all_begin_c(fh, at, got, N, MPI_INT));
    CHECK_RC(MPI_File_read_at_all_end(fh, got, &st));
    expect(got, rank, "read_at_all_begin_c");
    CHECK_RC(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("io_large OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
