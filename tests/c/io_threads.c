/* MPI_THREAD_MULTIPLE: several threads of every rank write through one
 * file handle at once, at explicit offsets and through the shared file
 * pointer; every record must land exactly once.
 * argv[1]: directory. */
#include "check.h"
#include <pthread.h>

#define T 4
#define R 100
#define REC 8

static MPI_File fh;
static int rank, size;

static void *work(void *arg) {
    int t = (int)(long)arg;
    for (int i = 0; i < R; i++) {
        long v[1] = {((long)rank * T + t) * R + i};
        /* Explicit offsets: a region of its own per thread. */
        CHECK_RC(MPI_File_write_at(fh, (MPI_Offset)v[0] * REC, v, REC, MPI_BYTE, MPI_STATUS_IGNORE));
        /* The shared file pointer, after the explicit region. */
        MPI_Request rq;
        CHECK_RC(MPI_File_iwrite_shared(fh, v, REC, MPI_BYTE, &rq));
        CHECK_RC(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE, "thread level %d", provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc > 1, "usage: io_threads DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/io_threads.dat", argv[1]);
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    long n = (long)size * T * R;
    /* The shared pointer starts after the explicit region. */
    CHECK_RC(MPI_File_seek_shared(fh, n * REC, MPI_SEEK_SET));
    pthread_t th[T];
    for (long t = 0; t < T; t++) pthread_create(&th[t], NULL, work, (void *)t);
    for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
    CHECK_RC(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_File_sync(fh));
    if (rank == 0) {
        long *all = malloc(sizeof(long) * 2 * n);
        MPI_Status st;
        CHECK_RC(MPI_File_read_at(fh, 0, all, (int)(2 * n * REC), MPI_BYTE, &st));
        int got;
        MPI_Get_count(&st, MPI_BYTE, &got);
        CHECK(got == 2 * n * REC, "file holds %d bytes, expected %ld", got, 2 * n * REC);
        char *seen = calloc((size_t)n, 1);
        for (long i = 0; i < n; i++) CHECK(all[i] == i, "explicit record %ld is %ld", i, all[i]);
        for (long i = n; i < 2 * n; i++) {
            CHECK(all[i] >= 0 && all[i] < n && !seen[all[i]], "shared record %ld (%ld) out of range or twice", i - n, all[i]);
            seen[all[i]] = 1;
        }
        free(seen);
        free(all);
    }
    CHECK_RC(MPI_File_close(&fh));
    if (rank == 0) printf("io_threads OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
