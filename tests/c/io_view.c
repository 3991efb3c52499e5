/* File views: a vector filetype gives every rank every size-th int of the
 * file (an interleaved layout), a subarray filetype gives every rank a
 * column block of a 2D array; written with write_all / write_at_all, read
 * back in the views (also into a strided memory type) and, by rank 0, in
 * the plain byte view, checked value by value.
 * argv[1]: directory (the harness checks io_view.dat on disk). */
#include "check.h"

#define N 50     /* ints per rank in the interleaved file */
#define ROWS 6
#define COLS 3   /* columns per rank in the 2D file */

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc > 1, "usage: io_view DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/io_view.dat", argv[1]);

    /* 1. Interleaved: int k of rank r at file int k * size + r. */
    MPI_File fh;
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_Datatype vec, ftype;
    MPI_Type_vector(N, 1, size, MPI_INT, &vec);
    /* Resized so that consecutive copies tile: N * size ints. */
    MPI_Type_create_resized(vec, 0, (MPI_Aint)N * size * sizeof(int), &ftype);
    MPI_Type_commit(&ftype);
    CHECK_RC(MPI_File_set_view(fh, (MPI_Offset)rank * sizeof(int), MPI_INT, ftype, "native", MPI_INFO_NULL));
    int out[N];
    for (int k = 0; k < N; k++) out[k] = rank * 1000 + k;
    MPI_Status st;
    /* First 20 ints collectively through the file pointer, the rest at an
     * explicit offset (in etypes of the view). */
    CHECK_RC(MPI_File_write_all(fh, out, 20, MPI_INT, &st));
    MPI_Offset pos;
    CHECK_RC(MPI_File_get_position(fh, &pos));
    CHECK(pos == 20, "position %ld in the view", (long)pos);
    MPI_Offset byte;
    CHECK_RC(MPI_File_get_byte_offset(fh, 20, &byte));
    CHECK(byte == (MPI_Offset)(20 * size + rank) * 4, "byte offset %ld", (long)byte);
    CHECK_RC(MPI_File_write_at_all(fh, 20, out + 20, N - 20, MPI_INT, &st));
    int n;
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == N - 20, "count %d", n);
    CHECK_RC(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_File_sync(fh));
    /* Read back in the view, into every other int of a strided buffer. */
    MPI_Datatype every2;
    MPI_Type_vector(N, 1, 2, MPI_INT, &every2);
    MPI_Type_commit(&every2);
    int wide[2 * N];
    memset(wide, 0xff, sizeof wide);
    CHECK_RC(MPI_File_read_at_all(fh, 0, wide, 1, every2, &st));
    MPI_Get_elements(&st, every2, &n);
    CHECK(n == N, "elements %d", n);
    for (int k = 0; k < N; k++) {
        CHECK(wide[2 * k] == out[k], "view read: int %d is %d", k, wide[2 * k]);
        CHECK(wide[2 * k + 1] == -1, "strided read wrote a hole at %d", k);
    }
    /* SEEK_END in a view: the end of file is after this rank's last int. */
    CHECK_RC(MPI_File_seek(fh, 0, MPI_SEEK_END));
    CHECK_RC(MPI_File_get_position(fh, &pos));
    CHECK(pos == N, "end of file at %ld in the view", (long)pos);
    MPI_Datatype et, ft;
    char rep[MPI_MAX_DATAREP_STRING];
    CHECK_RC(MPI_File_get_view(fh, &byte, &et, &ft, rep));
    CHECK(byte == (MPI_Offset)rank * 4 && et == MPI_INT && strcmp(rep, "native") == 0, "get_view");
    int fsz;
    MPI_Type_size(ft, &fsz);
    CHECK(fsz == N * 4, "filetype size %d", fsz);
    MPI_Type_free(&ft);
    /* Rank 0 checks the whole file in the byte view. */
    CHECK_RC(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    if (rank == 0) {
        int *all = malloc(sizeof(int) * N * size);
        CHECK_RC(MPI_File_read_at(fh, 0, all, N * size, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &n);
        CHECK(n == N * size, "read %d ints", n);
        for (int k = 0; k < N; k++)
            for (int r = 0; r < size; r++)
                CHECK(all[k * size + r] == r * 1000 + k, "file int %d is %d", k * size + r, all[k * size + r]);
        free(all);
    }
    CHECK_RC(MPI_File_close(&fh));

    /* 2. A ROWS x (COLS * size) array of doubles; rank r owns columns
     * [r * COLS, (r + 1) * COLS). */
    snprintf(path, sizeof path, "%s/io_view2.dat", argv[1]);
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    int sizes[2] = {ROWS, COLS * size}, subs[2] = {ROWS, COLS}, starts[2] = {0, rank * COLS};
    MPI_Datatype sub;
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_DOUBLE, &sub);
    MPI_Type_commit(&sub);
    CHECK_RC(MPI_File_set_view(fh, 16, MPI_DOUBLE, sub, "native", MPI_INFO_NULL));
    double local[ROWS][COLS];
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++) local[i][j] = i * 100.0 + rank * COLS + j;
    CHECK_RC(MPI_File_write_at_all(fh, 0, local, ROWS * COLS, MPI_DOUBLE, &st));
    CHECK_RC(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_File_sync(fh));
    /* Opened write-only: reading is refused. */
    double d;
    int rc = MPI_File_read_at(fh, 0, &d, 1, MPI_DOUBLE, &st);
    CHECK(error_class(rc) == MPI_ERR_ACCESS, "read on a write-only file gave class %d", error_class(rc));
    if (rank == 0) {
        /* The whole array, read by rank 0 alone through another handle. */
        MPI_File rd;
        CHECK_RC(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &rd));
        MPI_Offset fsize;
        CHECK_RC(MPI_File_get_size(rd, &fsize));
        CHECK(fsize == 16 + (MPI_Offset)ROWS * COLS * size * 8, "2D file size %ld", (long)fsize);
        double *all = malloc(sizeof(double) * ROWS * COLS * size);
        CHECK_RC(MPI_File_read_at(rd, 16, all, ROWS * COLS * size, MPI_DOUBLE, &st));
        for (int i = 0; i < ROWS; i++)
            for (int j = 0; j < COLS * size; j++)
                CHECK(all[i * COLS * size + j] == i * 100.0 + j, "a[%d][%d] = %g", i, j, all[i * COLS * size + j]);
        free(all);
        CHECK_RC(MPI_File_close(&rd));
    }
    CHECK_RC(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    /* Deleted on close. */
    MPI_File gone;
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &gone);
    CHECK(error_class(rc) == MPI_ERR_NO_SUCH_FILE, "the DELETE_ON_CLOSE file is still there (class %d)", error_class(rc));

    /* 4. Holes survive a collective write: the file is filled with -1,
     * then only even ranks write their interleaved ints (odd ranks write
     * nothing); the odd ranks' places must still hold -1. Through
     * aggregators (automatic), and with romio_cb_write=disable. */
    for (int pass = 0; pass < 2; pass++) {
    MPI_Info hint;
    MPI_Info_create(&hint);
    if (pass == 1) MPI_Info_set(hint, "romio_cb_write", "disable");
    snprintf(path, sizeof path, "%s/io_holes.dat", argv[1]);
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, hint, &fh));
    MPI_Info_free(&hint);
    if (rank == 0) {
        int *fill = malloc(sizeof(int) * N * size);
        for (int k = 0; k < N * size; k++) fill[k] = -1;
        CHECK_RC(MPI_File_write_at(fh, 0, fill, N * size, MPI_INT, &st));
        free(fill);
    }
    CHECK_RC(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_File_sync(fh));
    CHECK_RC(MPI_File_set_view(fh, (MPI_Offset)rank * sizeof(int), MPI_INT, ftype, "native", MPI_INFO_NULL));
    CHECK_RC(MPI_File_write_all(fh, out, rank % 2 == 0 ? N : 0, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == (rank % 2 == 0 ? N : 0), "write_all count %d", n);
    CHECK_RC(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_File_sync(fh));
    memset(wide, 0, sizeof wide);
    CHECK_RC(MPI_File_read_at_all(fh, 0, wide, N, MPI_INT, &st));
    for (int k = 0; k < N; k++)
        CHECK(wide[k] == (rank % 2 == 0 ? out[k] : -1), "after the sparse write_all (pass %d), int %d of rank %d is %d", pass, k, rank, wide[k]);
    CHECK_RC(MPI_File_close(&fh));
    }

    /* 3. "external32": big-endian ints in the file; MPI_LONG (4 bytes in
     * external32, 8 here) is refused. */
    snprintf(path, sizeof path, "%s/io_ext32.dat", argv[1]);
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    rc = MPI_File_set_view(fh, 0, MPI_LONG, MPI_LONG, "external32", MPI_INFO_NULL);
    CHECK(error_class(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "external32 view of MPI_LONG gave class %d", error_class(rc));
    CHECK_RC(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL));
    int ev[2] = {0x01020304 + rank, -2 - rank};
    CHECK_RC(MPI_File_write_at_all(fh, 2 * rank, ev, 2, MPI_INT, &st));
    rc = MPI_File_write_at(fh, 0, &d, 1, MPI_LONG, &st);
    CHECK(error_class(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "writing MPI_LONG in external32 gave class %d", error_class(rc));
    CHECK_RC(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_File_sync(fh));
    int back[2] = {0, 0};
    CHECK_RC(MPI_File_read_at(fh, 2 * ((rank + 1) % size), back, 2, MPI_INT, &st));
    CHECK(back[0] == 0x01020304 + (rank + 1) % size && back[1] == -2 - (rank + 1) % size, "external32 read back %x %d", back[0], back[1]);
    CHECK_RC(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    unsigned char raw[8];
    CHECK_RC(MPI_File_read_at(fh, 8 * rank, raw, 8, MPI_BYTE, &st));
    CHECK(raw[0] == 1 && raw[1] == 2 && raw[2] == 3 && raw[3] == 4 + rank && raw[4] == 0xff && raw[7] == (unsigned char)(-2 - rank),
          "not big-endian in the file: %02x %02x %02x %02x", raw[0], raw[1], raw[2], raw[3]);
    CHECK_RC(MPI_File_close(&fh));

    MPI_Type_free(&sub);
    MPI_Type_free(&every2);
    MPI_Type_free(&vec);
    MPI_Type_free(&ftype);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("io_view OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
