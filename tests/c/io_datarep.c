/* User-defined data representations (MPI_Register_datarep, MPI 3.1
 * 13.5.3). "swap4" stores ints byte-reversed: its conversion functions
 * count their calls and check what MPI hands them. Each rank writes K ints
 * (rank * 1000 + k) at its own block of io_datarep.dat through a "swap4"
 * view with a collective write, reads them back through it and raw
 * through a "native" view; "swap4c" (the large-count form) does the same
 * in io_datarep_c.dat; "plain" (MPI_CONVERSION_FN_NULL) stores them as
 * they are in io_plain.dat. Errors: a second registration, a type whose
 * file extent differs, an unknown name, a failing conversion. The harness
 * checks the bytes on disk. Argument: the directory. Prints
 * "io_datarep OK on N ranks". */
#include "check.h"

#define K 64

static int writes, reads, last_count;
static MPI_Offset last_pos;

static void swap_ints(const void *from, void *to, long n) {
    const unsigned char *a = from;
    unsigned char *b = to;
    for (long i = 0; i < n; i++)
        for (int j = 0; j < 4; j++) b[4 * i + j] = a[4 * i + 3 - j];
}

static int check_type(MPI_Datatype t) {
    return t == MPI_INT ? MPI_SUCCESS : MPI_ERR_TYPE;
}

/* File (swapped) -> memory. */
static int read_swap(void *userbuf, MPI_Datatype t, int count, void *filebuf, MPI_Offset pos, void *extra) {
    (void)extra;
    reads++;
    last_count = count;
    last_pos = pos;
    if (check_type(t)) return MPI_ERR_TYPE;
    swap_ints(filebuf, (int *)userbuf + pos, count);
    return MPI_SUCCESS;
}

/* Memory -> file (swapped). */
static int write_swap(void *userbuf, MPI_Datatype t, int count, void *filebuf, MPI_Offset pos, void *extra) {
    (void)extra;
    writes++;
    last_count = count;
    last_pos = pos;
    if (check_type(t)) return MPI_ERR_TYPE;
    swap_ints((int *)userbuf + pos, filebuf, count);
    return MPI_SUCCESS;
}

static int read_swap_c(void *u, MPI_Datatype t, MPI_Count count, void *f, MPI_Offset pos, void *x) {
    return read_swap(u, t, (int)count, f, pos, x);
}

static int write_swap_c(void *u, MPI_Datatype t, MPI_Count count, void *f, MPI_Offset pos, void *x) {
    return write_swap(u, t, (int)count, f, pos, x);
}

static int failing(void *u, MPI_Datatype t, int count, void *f, MPI_Offset pos, void *x) {
    (void)u, (void)t, (void)count, (void)f, (void)pos, (void)x;
    return MPI_ERR_OTHER;
}

/* Ints take 4 bytes in the file, bytes 1, everything else 16. */
static int extent(MPI_Datatype t, MPI_Aint *e, void *extra) {
    *e = t == MPI_INT ? 4 : t == MPI_BYTE ? 1 : 16;
    (*(int *)extra)++;
    return MPI_SUCCESS;
}

/* Writes this rank's block through a view in `rep`, reads it back through
 * it and raw; checks values and the conversion calls. */
static void round_trip(const char *dir, const char *name, const char *rep, int rank, int converted) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    MPI_File fh;
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_Offset disp = (MPI_Offset)rank * K * 4;
    CHECK_RC(MPI_File_set_view(fh, disp, MPI_INT, MPI_INT, rep, MPI_INFO_NULL));
    int out[K], in[K], raw[K];
    for (int k = 0; k < K; k++) out[k] = rank * 1000 + k;
    writes = reads = 0;
    CHECK_RC(MPI_File_write_all(fh, out, K, MPI_INT, MPI_STATUS_IGNORE));
    CHECK(writes == converted, "%s: %d write conversions", rep, writes);
    if (converted) CHECK(last_count == K && last_pos == 0, "%s: write of count %d at %lld", rep, last_count, (long long)last_pos);
    char got[MPI_MAX_DATAREP_STRING];
    MPI_Datatype et, ft;
    MPI_Offset d;
    CHECK_RC(MPI_File_get_view(fh, &d, &et, &ft, got));
    CHECK(!strcmp(got, rep) && d == disp, "view says %s at %lld", got, (long long)d);
    MPI_Status st;
    CHECK_RC(MPI_File_read_at(fh, 0, in, K, MPI_INT, &st));
    int count;
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(reads == converted && count == K, "%s: %d read conversions, %d ints", rep, reads, count);
    for (int k = 0; k < K; k++) CHECK(in[k] == out[k], "%s: int %d read back as %d", rep, k, in[k]);
    CHECK_RC(MPI_File_set_view(fh, disp, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    CHECK_RC(MPI_File_read_at(fh, 0, raw, K, MPI_INT, MPI_STATUS_IGNORE));
    for (int k = 0; k < K; k++) {
        int want;
        if (converted) swap_ints(&out[k], &want, 1);
        else want = out[k];
        CHECK(raw[k] == want, "%s: int %d is %08x in the file", rep, k, (unsigned)raw[k]);
    }
    CHECK_RC(MPI_File_close(&fh));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, extents = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc > 1, "usage: io_datarep DIR");
    const char *dir = argv[1];
    CHECK_RC(MPI_Register_datarep("swap4", read_swap, write_swap, extent, &extents));
    CHECK_RC(MPI_Register_datarep_c("swap4c", read_swap_c, write_swap_c, extent, &extents));
    CHECK_RC(MPI_Register_datarep("plain", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, extent, &extents));
    CHECK_RC(MPI_Register_datarep("failing", failing, failing, extent, &extents));
    CHECK(error_class(MPI_Register_datarep("swap4", read_swap, write_swap, extent, NULL)) == MPI_ERR_DUP_DATAREP, "second swap4");
    CHECK(error_class(MPI_Register_datarep("external32", read_swap, write_swap, extent, NULL)) == MPI_ERR_DUP_DATAREP, "external32 again");

    round_trip(dir, "io_datarep.dat", "swap4", rank, 1);
    CHECK(extents > 0, "the extent function was never asked");
    round_trip(dir, "io_datarep_c.dat", "swap4c", rank, 1);
    round_trip(dir, "io_plain.dat", "plain", rank, 0);

    char path[4096];
    snprintf(path, sizeof path, "%s/io_datarep_err.dat", dir);
    MPI_File fh;
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    int rc = MPI_File_set_view(fh, 0, MPI_DOUBLE, MPI_DOUBLE, "swap4", MPI_INFO_NULL);
    CHECK(error_class(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "doubles in swap4: class %d", error_class(rc));
    rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "nosuch", MPI_INFO_NULL);
    CHECK(error_class(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "unknown representation: class %d", error_class(rc));
    CHECK_RC(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "swap4", MPI_INFO_NULL));
    double dbl = 1.5;
    rc = MPI_File_write_at(fh, 0, &dbl, 1, MPI_DOUBLE, MPI_STATUS_IGNORE);
    CHECK(error_class(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "a double written through swap4: class %d", error_class(rc));
    CHECK_RC(MPI_File_set_view(fh, (MPI_Offset)rank * 4, MPI_INT, MPI_INT, "failing", MPI_INFO_NULL));
    int one = 1;
    rc = MPI_File_write(fh, &one, 1, MPI_INT, MPI_STATUS_IGNORE);
    CHECK(error_class(rc) == MPI_ERR_CONVERSION, "failing conversion: class %d", error_class(rc));
    CHECK_RC(MPI_File_close(&fh));

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("io_datarep OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
