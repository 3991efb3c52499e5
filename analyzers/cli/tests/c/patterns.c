/* Programs whose analysis is known by construction, chosen by argv[1]:
 *   late MS       rank 0 sends to rank 1 MS milliseconds after rank 1 posts
 *                 its receive (a Late Sender of MS ms at rank 1)
 *   imbalance MS  3 allreduces; the last rank arrives MS ms late at each
 *   ring          rank r sends (r+1)*1000 bytes to r+1 (Sendrecv) and 100
 *                 bytes to r-1 (Isend, received with Irecv(ANY_SOURCE))
 *   iorma PATH    every rank: MPI_File_open(PATH) on WORLD, a collective
 *                 write_at_all of 1 MiB at rank MiB, a seek and an
 *                 independent write of 4096 bytes, an independent read_at of
 *                 1 MiB, close (6 file calls); a window of 4 MiB
 *                 (MPI_Win_allocate), a fence epoch with a Put of 4 MiB to
 *                 rank+1, a lock epoch with a Put of 1024 bytes to rank+1,
 *                 MPI_Win_free
 *   abort         rank 1 sends one message to rank 0, then calls MPI_Abort
 *                 while rank 0 waits for a second message */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char buf[65536], in[65536];
static char big[4 << 20];

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "late";
    int ms = argc > 2 ? atoi(argv[2]) : 100;
    MPI_Barrier(MPI_COMM_WORLD);
    if (!strcmp(mode, "late")) {
        if (rank == 0) {
            usleep(ms * 1000);
            MPI_Send(buf, 8, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Recv(in, 8, MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else if (!strcmp(mode, "imbalance")) {
        for (int i = 0; i < 3; i++) {
            if (rank == size - 1) usleep(ms * 1000);
            double x = rank, y;
            MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
    } else if (!strcmp(mode, "ring")) {
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        MPI_Sendrecv(buf, (rank + 1) * 1000, MPI_BYTE, to, 1, in, sizeof in, MPI_BYTE, from, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Request q[2];
        MPI_Irecv(in, 100, MPI_BYTE, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &q[0]);
        MPI_Isend(buf, 100, MPI_BYTE, from, 2, MPI_COMM_WORLD, &q[1]);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    } else if (!strcmp(mode, "isendrecv")) {
        /* MPI 4's Isendrecv around a ring: 4 messages sent and received by
         * the same calls, the receive half completed at MPI_Wait. */
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        MPI_Request q;
        MPI_Isendrecv(buf, 500, MPI_BYTE, to, 9, in, sizeof in, MPI_BYTE, from, 9, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    } else if (!strcmp(mode, "iorma") && argc > 2) {
        const MPI_Offset mib = 1 << 20;
        MPI_File fh;
        MPI_File_open(MPI_COMM_WORLD, argv[2], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
        MPI_File_write_at_all(fh, rank * mib, big, (int)mib, MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_seek(fh, size * mib + rank * 4096, MPI_SEEK_SET);
        MPI_File_write(fh, big, 4096, MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_read_at(fh, rank * mib, big, (int)mib, MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_close(&fh);
        char *base;
        MPI_Win win;
        MPI_Win_allocate(4 << 20, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        int to = (rank + 1) % size;
        MPI_Win_fence(0, win);
        MPI_Put(big, 4 << 20, MPI_BYTE, to, 0, 4 << 20, MPI_BYTE, win);
        MPI_Win_fence(0, win);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, to, 0, win);
        MPI_Put(big, 1024, MPI_BYTE, to, 0, 1024, MPI_BYTE, win);
        MPI_Win_unlock(to, win);
        MPI_Win_free(&win);
    } else if (!strcmp(mode, "abort")) {
        if (rank == 1) {
            MPI_Send(buf, 8, MPI_BYTE, 0, 9, MPI_COMM_WORLD);
            usleep(200 * 1000);
            MPI_Abort(MPI_COMM_WORLD, 3);
        } else if (rank == 0) {
            MPI_Recv(in, 8, MPI_BYTE, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(in, 8, MPI_BYTE, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
