/* MPI_THREAD_MULTIPLE: four threads per rank exchange messages with the
 * same thread of the neighbour ranks concurrently (tags by thread), with
 * blocking and nonblocking calls mixed. */
#include "check.h"
#include <pthread.h>

static int rank, size;

static void *worker(void *arg) {
    int t = (int)(long)arg;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int it = 0; it < 300; it++) {
        int out[64], in[64];
        for (int i = 0; i < 64; i++) out[i] = rank * 100000 + t * 1000 + it;
        if (it % 2) {
            MPI_Request q[2];
            MPI_Irecv(in, 64, MPI_INT, prev, t, MPI_COMM_WORLD, &q[0]);
            MPI_Isend(out, 64, MPI_INT, next, t, MPI_COMM_WORLD, &q[1]);
            MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        } else {
            MPI_Sendrecv(out, 64, MPI_INT, next, t, in, 64, MPI_INT, prev, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        CHECK(in[63] == prev * 100000 + t * 1000 + it, "thread %d iteration %d got %d", t, it, in[63]);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int main_flag;
    MPI_Is_thread_main(&main_flag);
    CHECK(main_flag, "main thread");
    pthread_t th[4];
    for (long t = 0; t < 4; t++) pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < 4; t++) pthread_join(th[t], NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("threads OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
