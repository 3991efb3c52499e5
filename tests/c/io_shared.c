/* The shared file pointer: write_shared from every rank gives each record
 * exactly once; read_shared hands every record to exactly one rank;
 * write_ordered / read_ordered (and their split forms) go in rank order;
 * seek_shared and get_position_shared in a view whose etype is a record.
 * argv[1]: directory (the harness checks io_ordered.dat on disk). */
#include "check.h"
#include <unistd.h>

#define K 5
#define REC 16

static void record(char *buf, int r, int k) {
    char tmp[REC + 1];
    snprintf(tmp, sizeof tmp, "r=%04d k=%04d  \n", r, k);
    memcpy(buf, tmp, REC);
}

static int parse(const char *buf, int *r, int *k) {
    char tmp[REC + 1];
    memcpy(tmp, buf, REC);
    tmp[REC] = 0;
    return sscanf(tmp, "r=%d k=%d", r, k) == 2;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc > 1, "usage: io_shared DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/io_shared.dat", argv[1]);
    MPI_Datatype rect;
    MPI_Type_contiguous(REC, MPI_CHAR, &rect);
    MPI_Type_commit(&rect);

    /* 1. Independent writes through the shared pointer. */
    MPI_File fh;
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    char buf[REC * 8];
    MPI_Status st;
    for (int k = 0; k < K; k++) {
        record(buf, rank, k);
        if (k == K - 1) {
            MPI_Request rq;
            CHECK_RC(MPI_File_iwrite_shared(fh, buf, REC, MPI_CHAR, &rq));
            CHECK_RC(MPI_Wait(&rq, &st));
        } else {
            CHECK_RC(MPI_File_write_shared(fh, buf, REC, MPI_CHAR, &st));
        }
    }
    CHECK_RC(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_File_sync(fh));
    MPI_Offset pos;
    CHECK_RC(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == (MPI_Offset)size * K * REC, "shared position %ld", (long)pos);
    if (rank == 0) {
        char *all = malloc((size_t)size * K * REC);
        CHECK_RC(MPI_File_read_at(fh, 0, all, size * K * REC, MPI_CHAR, &st));
        int *seen = calloc((size_t)size * K, sizeof(int));
        int *last = malloc(sizeof(int) * size);
        for (int r = 0; r < size; r++) last[r] = -1;
        for (int i = 0; i < size * K; i++) {
            int r, k;
            CHECK(parse(all + i * REC, &r, &k) && r >= 0 && r < size && k >= 0 && k < K, "record %d garbled", i);
            CHECK(seen[r * K + k]++ == 0, "record r=%d k=%d twice", r, k);
            CHECK(k > last[r], "rank %d's records out of its order", r);
            last[r] = k;
        }
        free(all);
        free(seen);
        free(last);
    }
    /* Back to the start together; every record is read by exactly one rank. */
    CHECK_RC(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    long sum = 0;
    int got = 0;
    for (;;) {
        CHECK_RC(MPI_File_read_shared(fh, buf, 1, rect, &st));
        int n;
        MPI_Get_count(&st, rect, &n);
        if (n == 0) break;
        CHECK(n == 1, "read_shared count %d", n);
        int r, k;
        CHECK(parse(buf, &r, &k), "read_shared record garbled");
        sum += r * 1000 + k;
        got++;
    }
    long total = 0, expect = 0;
    int count = 0;
    MPI_Allreduce(&sum, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&got, &count, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int k = 0; k < K; k++) expect += r * 1000 + k;
    CHECK(count == size * K && total == expect, "read_shared gave %d records (sum %ld, expected %ld)", count, total, expect);
    /* Reads at the end of the file moved the pointer no further. */
    CHECK_RC(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == (MPI_Offset)size * K * REC, "shared position %ld after reading to the end", (long)pos);
    CHECK_RC(MPI_File_close(&fh));

    /* 2. Ordered: rank r writes r + 1 records, in a view whose etype is a
     * record (shared positions count records). */
    /* The same file under different names: even ranks (rank 0 included)
     * by a name relative to the directory they moved to, odd ranks by the
     * full path. */
    if (rank % 2 == 0) {
        CHECK(chdir(argv[1]) == 0, "chdir %s", argv[1]);
        snprintf(path, sizeof path, "io_ordered.dat");
    } else {
        snprintf(path, sizeof path, "%s/io_ordered.dat", argv[1]);
    }
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    CHECK_RC(MPI_File_set_view(fh, 0, rect, rect, "native", MPI_INFO_NULL));
    int mine = rank + 1 > 8 ? 8 : rank + 1;
    for (int k = 0; k < mine; k++) record(buf + k * REC, rank, k);
    CHECK_RC(MPI_File_write_ordered(fh, buf, mine, rect, &st));
    int n;
    MPI_Get_count(&st, rect, &n);
    CHECK(n == mine, "write_ordered count %d", n);
    int all_recs = 0;
    for (int r = 0; r < size; r++) all_recs += r + 1 > 8 ? 8 : r + 1;
    CHECK_RC(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == all_recs, "shared position %ld after write_ordered, expected %d", (long)pos, all_recs);
    /* A second round with the split form: same layout again after it. */
    for (int k = 0; k < mine; k++) record(buf + k * REC, rank, 100 + k);
    CHECK_RC(MPI_File_write_ordered_begin(fh, buf, mine * REC, MPI_CHAR));
    CHECK_RC(MPI_File_write_ordered_end(fh, buf, &st));
    MPI_Get_count(&st, MPI_CHAR, &n);
    CHECK(n == mine * REC, "write_ordered_end count %d", n);
    CHECK_RC(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == 2 * all_recs, "shared position %ld after two rounds", (long)pos);
    CHECK_RC(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_File_sync(fh));
    /* Read back in order: each rank gets its own records. */
    CHECK_RC(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    char in[REC * 8];
    CHECK_RC(MPI_File_read_ordered(fh, in, mine, rect, &st));
    for (int k = 0; k < mine; k++) {
        int r, kk;
        CHECK(parse(in + k * REC, &r, &kk) && r == rank && kk == k, "read_ordered record %d is r=%d k=%d", k, r, kk);
    }
    CHECK_RC(MPI_File_read_ordered_begin(fh, in, mine, rect));
    CHECK_RC(MPI_File_read_ordered_end(fh, in, &st));
    for (int k = 0; k < mine; k++) {
        int r, kk;
        CHECK(parse(in + k * REC, &r, &kk) && r == rank && kk == 100 + k, "second read_ordered record %d", k);
    }
    /* At the end of the file: nothing read, the pointer stays. */
    CHECK_RC(MPI_File_read_ordered(fh, in, mine, rect, &st));
    MPI_Get_count(&st, rect, &n);
    CHECK(n == 0, "read_ordered at the end of the file gave %d records", n);
    CHECK_RC(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == 2 * all_recs, "shared position %ld after reading at the end", (long)pos);
    /* SEEK_END / SEEK_CUR of the shared pointer, in records. */
    CHECK_RC(MPI_File_seek_shared(fh, -1, MPI_SEEK_END));
    CHECK_RC(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == 2 * all_recs - 1, "shared position %ld after SEEK_END", (long)pos);
    /* One record left: rank 0 gets it (the last rank's last), the others
     * nothing, and the pointer ends at the end of the file. */
    CHECK_RC(MPI_File_read_ordered(fh, in, mine, rect, &st));
    MPI_Get_count(&st, rect, &n);
    int lastn = size > 8 ? 8 : size;
    int r_, k_;
    CHECK(n == (rank == 0 ? 1 : 0), "read_ordered of the last record: %d records", n);
    CHECK(rank != 0 || (parse(in, &r_, &k_) && r_ == size - 1 && k_ == 100 + lastn - 1), "last record is r=%d k=%d", r_, k_);
    CHECK_RC(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == 2 * all_recs, "shared position %ld after the short read_ordered", (long)pos);
    CHECK_RC(MPI_File_close(&fh));

    MPI_Type_free(&rect);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("io_shared OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
