/* MPI_THREAD_MULTIPLE: two threads per rank, each exchanging 50 messages
 * with the other rank on its own duplicate of MPI_COMM_WORLD, inside a
 * region named after the thread. Two ranks. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#define MPITRACE_WEAK
#include "mpitrace.h"

static MPI_Comm comms[2];
static int rank;

static void *work(void *arg) {
    int t = (int)(long)arg, x = 0;
    MPITRACE_REGION_BEGIN(t ? "thread1" : "thread0");
    for (int i = 0; i < 50; i++) {
        if (rank == 0) MPI_Send(&x, 1, MPI_INT, 1, t, comms[t]);
        else MPI_Recv(&x, 1, MPI_INT, 0, t, comms[t], MPI_STATUS_IGNORE);
    }
    MPITRACE_REGION_END(t ? "thread1" : "thread0");
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided != MPI_THREAD_MULTIPLE) { fprintf(stderr, "no THREAD_MULTIPLE\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    pthread_t th[2];
    for (long t = 0; t < 2; t++) pthread_create(&th[t], NULL, work, (void *)t);
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
    MPI_Comm_free(&comms[0]);
    MPI_Comm_free(&comms[1]);
    MPI_Finalize();
    return 0;
}
