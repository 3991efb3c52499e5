/* MPI-IO basics: every rank writes its block at an explicit offset, rank 0
 * reads the whole file back and checks every byte; individual file
 * pointers (seek, read, get_position), sizes, statuses, nonblocking and
 * split collective forms, sync, get_amode/group/info, c2f/f2c.
 * argv[1]: a directory for the files (the harness checks io_basic.dat). */
#include "check.h"

#define BLK 1000

static unsigned char pat(int rank, int i) { return (unsigned char)(rank * 7 + i * 13 + 1); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc > 1, "usage: io_basic DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/io_basic.dat", argv[1]);

    MPI_File fh;
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    CHECK(fh != MPI_FILE_NULL, "no file handle");
    unsigned char mine[BLK];
    for (int i = 0; i < BLK; i++) mine[i] = pat(rank, i);
    MPI_Status st;
    /* The first half at an explicit offset, the second half through the
     * individual file pointer. */
    CHECK_RC(MPI_File_write_at(fh, (MPI_Offset)rank * BLK, mine, BLK / 2, MPI_BYTE, &st));
    int n = -1;
    MPI_Get_count(&st, MPI_BYTE, &n);
    CHECK(n == BLK / 2, "write_at count %d", n);
    CHECK_RC(MPI_File_seek(fh, (MPI_Offset)rank * BLK + BLK / 2, MPI_SEEK_SET));
    CHECK_RC(MPI_File_write(fh, mine + BLK / 2, BLK / 2, MPI_BYTE, &st));
    MPI_Offset pos = -1;
    CHECK_RC(MPI_File_get_position(fh, &pos));
    CHECK(pos == (MPI_Offset)(rank + 1) * BLK, "position %ld after write", (long)pos);
    CHECK_RC(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_File_sync(fh));

    MPI_Offset fsize = -1;
    CHECK_RC(MPI_File_get_size(fh, &fsize));
    CHECK(fsize == (MPI_Offset)size * BLK, "size %ld, expected %ld", (long)fsize, (long)size * BLK);
    if (rank == 0) {
        unsigned char *all = malloc((size_t)size * BLK + 100);
        CHECK_RC(MPI_File_read_at(fh, 0, all, size * BLK + 100, MPI_BYTE, &st));
        MPI_Get_count(&st, MPI_BYTE, &n);
        CHECK(n == size * BLK, "read %d bytes at the end of the file, expected %d", n, size * BLK);
        for (int r = 0; r < size; r++)
            for (int i = 0; i < BLK; i++)
                CHECK(all[r * BLK + i] == pat(r, i), "byte %d of rank %d's block is %d", i, r, all[r * BLK + i]);
        free(all);
    }
    /* Every rank reads its right neighbour's block as 4-byte ints through
     * its file pointer: SEEK_END then SEEK_CUR back. */
    int right = (rank + 1) % size;
    CHECK_RC(MPI_File_seek(fh, 0, MPI_SEEK_END));
    CHECK_RC(MPI_File_seek(fh, -(MPI_Offset)(size - right) * BLK, MPI_SEEK_CUR));
    CHECK_RC(MPI_File_get_position(fh, &pos));
    CHECK(pos == (MPI_Offset)right * BLK, "position %ld after seeks", (long)pos);
    int ints[BLK / 4];
    CHECK_RC(MPI_File_read(fh, ints, BLK / 4, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == BLK / 4, "read %d ints", n);
    for (int i = 0; i < BLK; i++) CHECK(((unsigned char *)ints)[i] == pat(right, i), "neighbour byte %d", i);
    /* A read past the end: short, and the pointer moves by what was read. */
    CHECK_RC(MPI_File_seek(fh, fsize - 10, MPI_SEEK_SET));
    unsigned char tail[64];
    CHECK_RC(MPI_File_read(fh, tail, 64, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &n);
    CHECK(n == 10, "short read gave %d bytes", n);
    CHECK_RC(MPI_File_get_position(fh, &pos));
    CHECK(pos == fsize, "position %ld after the short read", (long)pos);
    /* A read of ints ending inside an int: MPI_UNDEFINED count, elements. */
    CHECK_RC(MPI_File_read_at(fh, fsize - 6, ints, 2, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == MPI_UNDEFINED, "count of 6 bytes of ints is %d", n);
    MPI_Get_elements(&st, MPI_BYTE, &n);
    CHECK(n == 6, "elements %d", n);

    /* Everybody has read the neighbour's block before blocks change. */
    MPI_Barrier(MPI_COMM_WORLD);
    /* Nonblocking forms complete through MPI_Wait / MPI_Test. */
    MPI_Request rq;
    unsigned char back[BLK];
    CHECK_RC(MPI_File_iread_at(fh, (MPI_Offset)rank * BLK, back, BLK, MPI_BYTE, &rq));
    int flag = 0;
    while (!flag) CHECK_RC(MPI_Test(&rq, &flag, &st));
    CHECK(rq == MPI_REQUEST_NULL, "request not freed");
    MPI_Get_count(&st, MPI_BYTE, &n);
    CHECK(n == BLK && memcmp(back, mine, BLK) == 0, "iread_at gave %d bytes", n);
    CHECK_RC(MPI_File_seek(fh, (MPI_Offset)rank * BLK, MPI_SEEK_SET));
    for (int i = 0; i < BLK; i++) mine[i] = pat(rank + 100, i);
    CHECK_RC(MPI_File_iwrite(fh, mine, BLK, MPI_BYTE, &rq));
    CHECK_RC(MPI_Wait(&rq, &st));
    MPI_Get_count(&st, MPI_BYTE, &n);
    CHECK(n == BLK, "iwrite count %d", n);
    /* Collective and split collective forms. */
    CHECK_RC(MPI_File_read_at_all(fh, (MPI_Offset)rank * BLK, back, BLK, MPI_BYTE, &st));
    CHECK(memcmp(back, mine, BLK) == 0, "read_at_all after iwrite");
    memset(back, 0, BLK);
    CHECK_RC(MPI_File_read_at_all_begin(fh, (MPI_Offset)rank * BLK, back, BLK, MPI_BYTE));
    CHECK_RC(MPI_File_read_at_all_end(fh, back, &st));
    MPI_Get_count(&st, MPI_BYTE, &n);
    CHECK(n == BLK && memcmp(back, mine, BLK) == 0, "split read gave %d", n);
    CHECK_RC(MPI_File_iread_at_all(fh, (MPI_Offset)rank * BLK, back, BLK, MPI_BYTE, &rq));
    CHECK_RC(MPI_Wait(&rq, &st));
    CHECK(memcmp(back, mine, BLK) == 0, "iread_at_all");
    /* The second half written back as it was, with write_all_begin/end. */
    for (int i = 0; i < BLK; i++) mine[i] = pat(rank, i);
    CHECK_RC(MPI_File_seek(fh, (MPI_Offset)rank * BLK, MPI_SEEK_SET));
    CHECK_RC(MPI_File_write_all_begin(fh, mine, BLK, MPI_BYTE));
    CHECK_RC(MPI_File_write_all_end(fh, mine, &st));
    MPI_Get_count(&st, MPI_BYTE, &n);
    CHECK(n == BLK, "write_all_end count %d", n);

    /* Collective writes through aggregators forced by the hint
     * romio_cb_write=enable: blocks at an odd displacement, so domain
     * boundaries fall inside blocks; the last rank writes nothing. */
    {
        char cb[4096];
        snprintf(cb, sizeof cb, "%s/io_cb.dat", argv[1]);
        MPI_Info hint;
        MPI_Info_create(&hint);
        MPI_Info_set(hint, "romio_cb_write", "enable");
        MPI_File cf;
        CHECK_RC(MPI_File_open(MPI_COMM_WORLD, cb, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, hint, &cf));
        MPI_Info_free(&hint);
        int n_mine = (rank == size - 1 && size > 1) ? 0 : BLK;
        CHECK_RC(MPI_File_write_at_all(cf, 7 + (MPI_Offset)rank * BLK, mine, n_mine, MPI_BYTE, &st));
        MPI_Get_count(&st, MPI_BYTE, &n);
        CHECK(n == n_mine, "write_at_all through aggregators: count %d", n);
        CHECK_RC(MPI_File_sync(cf));
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_RC(MPI_File_sync(cf));
        if (rank == 0) {
            int writers = size > 1 ? size - 1 : 1;
            unsigned char *all = malloc((size_t)size * BLK + 7);
            CHECK_RC(MPI_File_read_at(cf, 0, all, writers * BLK + 7 + 50, MPI_BYTE, &st));
            MPI_Get_count(&st, MPI_BYTE, &n);
            CHECK(n == writers * BLK + 7, "aggregated file holds %d bytes", n);
            for (int i = 0; i < 7; i++) CHECK(all[i] == 0, "byte %d before the blocks", i);
            for (int r = 0; r < writers; r++)
                for (int i = 0; i < BLK; i++)
                    CHECK(all[7 + r * BLK + i] == pat(r, i), "aggregated byte %d of rank %d", i, r);
            free(all);
        }
        CHECK_RC(MPI_File_close(&cf));
    }

    /* Parameters. */
    int amode = 0;
    CHECK_RC(MPI_File_get_amode(fh, &amode));
    CHECK(amode == (MPI_MODE_CREATE | MPI_MODE_RDWR), "amode %d", amode);
    MPI_Group g, wg;
    int cmp;
    CHECK_RC(MPI_File_get_group(fh, &g));
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &cmp);
    CHECK(cmp == MPI_IDENT, "file group differs from the world group");
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "access_style", "read_mostly");
    CHECK_RC(MPI_File_set_info(fh, info));
    MPI_Info_free(&info);
    CHECK_RC(MPI_File_get_info(fh, &info));
    char val[64];
    int found = 0;
    MPI_Info_get(info, "access_style", 63, val, &found);
    CHECK(found && strcmp(val, "read_mostly") == 0, "hint not kept");
    MPI_Info_free(&info);
    MPI_Fint f = MPI_File_c2f(fh);
    CHECK(MPI_File_f2c(f) == fh, "c2f/f2c round trip");
    CHECK(MPI_File_c2f(MPI_FILE_NULL) == 0, "c2f of MPI_FILE_NULL");

    CHECK_RC(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL, "close did not reset the handle");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("io_basic OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
