/* I/O errors: classes through the default file error handler
 * (MPI_ERRORS_RETURN), through a user file error handler set on
 * MPI_FILE_NULL (errors without a file, e.g. in MPI_File_open) and on an
 * open file; an error at one rank of an open fails it at every rank;
 * MPI_MODE_SEQUENTIAL rules, atomic mode, MPI_File_delete.
 * argv[1]: directory (exists.dat is left there for the harness). */
#include "check.h"

static int calls = 0, last_code = 0;
static MPI_File last_file = (MPI_File)-1;

static void handler(MPI_File *f, int *code, ...) {
    calls++;
    last_code = *code;
    last_file = *f;
}

#define EXPECT(call, cls)                                                          \
    do {                                                                           \
        int rc_ = (call);                                                          \
        CHECK(error_class(rc_) == (cls), "%s gave class %d, expected %s (%d)", #call, \
              error_class(rc_), #cls, cls);                                        \
    } while (0)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc > 1, "usage: io_errors DIR");
    char missing[4096], exists[4096], seq[4096], mine[4096];
    snprintf(missing, sizeof missing, "%s/missing.dat", argv[1]);
    snprintf(exists, sizeof exists, "%s/exists.dat", argv[1]);
    snprintf(seq, sizeof seq, "%s/seq.dat", argv[1]);
    snprintf(mine, sizeof mine, "%s/self-%d.dat", argv[1], rank);

    MPI_Errhandler eh;
    CHECK_RC(MPI_File_get_errhandler(MPI_FILE_NULL, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "the default file error handler is not MPI_ERRORS_RETURN");

    MPI_File fh = MPI_FILE_NULL;
    MPI_Status st;
    EXPECT(MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_NO_SUCH_FILE);
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, exists, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
    int v = 42 + rank;
    CHECK_RC(MPI_File_write_at(fh, rank * 4, &v, 1, MPI_INT, &st));
    CHECK_RC(MPI_File_close(&fh));
    EXPECT(MPI_File_open(MPI_COMM_WORLD, exists, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR, MPI_INFO_NULL, &fh), MPI_ERR_FILE_EXISTS);
    EXPECT(MPI_File_open(MPI_COMM_WORLD, exists, MPI_MODE_RDONLY | MPI_MODE_RDWR, MPI_INFO_NULL, &fh), MPI_ERR_AMODE);
    EXPECT(MPI_File_open(MPI_COMM_WORLD, exists, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh), MPI_ERR_AMODE);
    EXPECT(MPI_File_open(MPI_COMM_WORLD, exists, 0, MPI_INFO_NULL, &fh), MPI_ERR_AMODE);
    EXPECT(MPI_File_open(MPI_COMM_WORLD, exists, MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh), MPI_ERR_AMODE);
    EXPECT(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_BAD_FILE);
    CHECK(fh == MPI_FILE_NULL, "a failed open set the handle");
    if (size > 1) {
        /* A bad amode at the last rank only: the open fails everywhere. */
        int am = rank == size - 1 ? MPI_MODE_RDONLY | MPI_MODE_WRONLY : MPI_MODE_RDONLY;
        int rc = MPI_File_open(MPI_COMM_WORLD, exists, am, MPI_INFO_NULL, &fh);
        CHECK(error_class(rc) == MPI_ERR_AMODE, "open with a bad amode at one rank gave class %d", error_class(rc));
        CHECK(fh == MPI_FILE_NULL, "a failed open set the handle");
    }

    /* Views must agree on the etype's extent and the representation. */
    if (size > 1) {
        CHECK_RC(MPI_File_open(MPI_COMM_WORLD, exists, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
        MPI_Datatype et = rank == 0 ? MPI_INT : MPI_DOUBLE;
        EXPECT(MPI_File_set_view(fh, 0, et, et, "native", MPI_INFO_NULL), MPI_ERR_NOT_SAME);
        EXPECT(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, rank == 0 ? "native" : "external32", MPI_INFO_NULL), MPI_ERR_NOT_SAME);
        /* The view is unchanged: bytes. */
        MPI_Offset bo;
        CHECK_RC(MPI_File_get_byte_offset(fh, 3, &bo));
        CHECK(bo == 3, "a failed set_view changed the view (byte offset %ld)", (long)bo);
        CHECK_RC(MPI_File_close(&fh));
    }

    /* Writing a read-only file. */
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, exists, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    EXPECT(MPI_File_write_at(fh, 0, &v, 1, MPI_INT, &st), MPI_ERR_READ_ONLY);
    EXPECT(MPI_File_write(fh, &v, 1, MPI_INT, &st), MPI_ERR_READ_ONLY);
    EXPECT(MPI_File_set_size(fh, 0), MPI_ERR_READ_ONLY);
    EXPECT(MPI_File_read_at(fh, -1, &v, 1, MPI_INT, &st), MPI_ERR_ARG);
    EXPECT(MPI_File_read_at(fh, 0, &v, -1, MPI_INT, &st), MPI_ERR_COUNT);
    EXPECT(MPI_File_seek(fh, 0, 12345), MPI_ERR_ARG);
    EXPECT(MPI_File_seek(fh, -1, MPI_SEEK_SET), MPI_ERR_ARG);
    EXPECT(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "bogus", MPI_INFO_NULL), MPI_ERR_UNSUPPORTED_DATAREP);
    EXPECT(MPI_File_read_all_end(fh, &v, &st), MPI_ERR_OTHER);
    CHECK_RC(MPI_File_read_at(fh, (MPI_Offset)rank * 4, &v, 1, MPI_INT, &st));
    CHECK(v == 42 + rank, "read back %d", v);
    MPI_Aint ext;
    CHECK_RC(MPI_File_get_type_extent(fh, MPI_DOUBLE, &ext));
    CHECK(ext == 8, "type extent %ld", (long)ext);
    CHECK_RC(MPI_File_close(&fh));
    EXPECT(MPI_File_get_size((MPI_File)0x1234, &(MPI_Offset){0}), MPI_ERR_FILE);
    EXPECT(MPI_File_close(&fh), MPI_ERR_FILE);

    /* A user handler as the default: open errors reach it with MPI_FILE_NULL. */
    MPI_Errhandler mine_eh;
    CHECK_RC(MPI_File_create_errhandler(handler, &mine_eh));
    CHECK_RC(MPI_File_set_errhandler(MPI_FILE_NULL, mine_eh));
    EXPECT(MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDWR, MPI_INFO_NULL, &fh), MPI_ERR_NO_SUCH_FILE);
    CHECK(calls == 1 && error_class(last_code) == MPI_ERR_NO_SUCH_FILE && last_file == MPI_FILE_NULL,
          "handler: %d calls, code %d", calls, last_code);
    EXPECT(MPI_File_delete(missing, MPI_INFO_NULL), MPI_ERR_NO_SUCH_FILE);
    CHECK(calls == 2, "MPI_File_delete did not call the default handler");
    /* Files opened now get it too. */
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, exists, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    CHECK_RC(MPI_File_get_errhandler(fh, &eh));
    CHECK(eh == mine_eh, "a new file did not get the default handler");
    CHECK_RC(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
    EXPECT(MPI_File_write_at(fh, 0, &v, 1, MPI_INT, &st), MPI_ERR_READ_ONLY);
    CHECK(calls == 3 && last_file == fh && error_class(last_code) == MPI_ERR_READ_ONLY, "handler on the file: %d calls", calls);
    CHECK_RC(MPI_File_call_errhandler(fh, MPI_ERR_IO));
    CHECK(calls == 4 && last_code == MPI_ERR_IO, "call_errhandler");
    CHECK_RC(MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN));
    EXPECT(MPI_File_write_at(fh, 0, &v, 1, MPI_INT, &st), MPI_ERR_READ_ONLY);
    CHECK(calls == 4, "MPI_ERRORS_RETURN on the file still called the handler");
    EXPECT(MPI_File_set_errhandler(fh, MPI_ERRHANDLER_NULL), MPI_ERR_ARG);
    CHECK_RC(MPI_File_close(&fh));
    MPI_Errhandler_free(&mine_eh);

    /* MPI_MODE_SEQUENTIAL: shared pointer access only. */
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, seq, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL | MPI_MODE_DELETE_ON_CLOSE,
                           MPI_INFO_NULL, &fh));
    EXPECT(MPI_File_write_at(fh, 0, &v, 1, MPI_INT, &st), MPI_ERR_UNSUPPORTED_OPERATION);
    EXPECT(MPI_File_write(fh, &v, 1, MPI_INT, &st), MPI_ERR_UNSUPPORTED_OPERATION);
    EXPECT(MPI_File_seek(fh, 0, MPI_SEEK_SET), MPI_ERR_UNSUPPORTED_OPERATION);
    CHECK_RC(MPI_File_write_ordered(fh, &v, 1, MPI_INT, &st));
    EXPECT(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL), MPI_ERR_ARG);
    CHECK_RC(MPI_File_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    MPI_Offset disp;
    MPI_Datatype et, ft;
    char rep[MPI_MAX_DATAREP_STRING];
    CHECK_RC(MPI_File_get_view(fh, &disp, &et, &ft, rep));
    CHECK(disp == (MPI_Offset)size * 4, "view displacement %ld after %d ints", (long)disp, size);
    CHECK_RC(MPI_File_write_shared(fh, &v, 1, MPI_INT, &st));
    CHECK_RC(MPI_File_close(&fh));

    /* Atomic mode; MPI_File_delete of a file of this rank. */
    CHECK_RC(MPI_File_open(MPI_COMM_SELF, mine, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    int flag = -1;
    CHECK_RC(MPI_File_get_atomicity(fh, &flag));
    CHECK(flag == 0, "files start in nonatomic mode");
    CHECK_RC(MPI_File_set_atomicity(fh, 1));
    CHECK_RC(MPI_File_get_atomicity(fh, &flag));
    CHECK(flag == 1, "atomicity not set");
    double d[4] = {1, 2, 3, 4}, e[4];
    CHECK_RC(MPI_File_write_at(fh, 8, d, 4, MPI_DOUBLE, &st));
    CHECK_RC(MPI_File_read_at(fh, 8, e, 4, MPI_DOUBLE, &st));
    CHECK(memcmp(d, e, sizeof d) == 0, "atomic read back");
    CHECK_RC(MPI_File_preallocate(fh, 1000));
    MPI_Offset sz;
    CHECK_RC(MPI_File_get_size(fh, &sz));
    CHECK(sz == 1000, "size %ld after preallocate", (long)sz);
    CHECK_RC(MPI_File_set_size(fh, 16));
    CHECK_RC(MPI_File_get_size(fh, &sz));
    CHECK(sz == 16, "size %ld after set_size", (long)sz);
    CHECK_RC(MPI_File_close(&fh));
    CHECK_RC(MPI_File_delete(mine, MPI_INFO_NULL));
    EXPECT(MPI_File_open(MPI_COMM_SELF, mine, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_NO_SUCH_FILE);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("io_errors OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
