/* MPI_Comm_spawn from several threads at once, each on a communicator of
 * its own (a dup of MPI_COMM_WORLD): the roots' meetings with the new
 * jobs run at the same time in one process and must not take each other's
 * messages (MPICH suite: threads/spawn/th_taskmanager). Each thread spawns
 * a job of 2 ("child <thread>"), sends each child a value that comes back
 * plus one, broadcasts, and disconnects; 3 rounds.
 * With argument "self" every thread spawns on MPI_COMM_SELF (MPICH suite:
 * threads/spawn/multispawn): the meetings are of one group, and each new
 * intercommunicator must still get a context id of its own. */
#include "check.h"
#include <pthread.h>

#define NTHREADS 4
#define ROUNDS 3

static MPI_Comm comms[NTHREADS];
static pthread_barrier_t start;
static const char *self;

static void child(const char *id) {
    MPI_Comm parent;
    CHECK_RC(MPI_Comm_get_parent(&parent));
    CHECK(parent != MPI_COMM_NULL, "a spawned process has no parent");
    int rank, v = -1, b = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CHECK_RC(MPI_Recv(&v, 1, MPI_INT, 0, 1, parent, MPI_STATUS_IGNORE));
    CHECK(v == 100 * atoi(id) + rank, "child %s.%d got %d", id, rank, v);
    v++;
    CHECK_RC(MPI_Send(&v, 1, MPI_INT, 0, 2, parent));
    CHECK_RC(MPI_Bcast(&b, 1, MPI_INT, 0, parent));
    CHECK(b == atoi(id), "child %s.%d: bcast %d", id, rank, b);
    CHECK_RC(MPI_Comm_disconnect(&parent));
}

static void *spawner(void *arg) {
    int t = (int)(long)arg, rank;
    MPI_Comm c = comms[t], inter;
    MPI_Comm_rank(c, &rank);
    char id[8];
    snprintf(id, sizeof id, "%d", t);
    char *args[] = {"child", id, NULL};
    int codes[2];
    pthread_barrier_wait(&start);
    CHECK_RC(MPI_Comm_spawn(self, args, 2, MPI_INFO_NULL, 0, c, &inter, codes));
    CHECK(codes[0] == MPI_SUCCESS && codes[1] == MPI_SUCCESS, "thread %d: error codes %d %d", t, codes[0], codes[1]);
    int rsize;
    MPI_Comm_remote_size(inter, &rsize);
    CHECK(rsize == 2, "thread %d: remote size %d", t, rsize);
    if (rank == 0) {
        for (int j = 0; j < 2; j++) {
            int v = 100 * t + j;
            CHECK_RC(MPI_Send(&v, 1, MPI_INT, j, 1, inter));
        }
        for (int j = 0; j < 2; j++) {
            int v = -1;
            CHECK_RC(MPI_Recv(&v, 1, MPI_INT, j, 2, inter, MPI_STATUS_IGNORE));
            CHECK(v == 100 * t + j + 1, "thread %d: child %d answered %d", t, j, v);
        }
    }
    CHECK_RC(MPI_Bcast(&t, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter));
    CHECK_RC(MPI_Comm_disconnect(&inter));
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (argc > 2 && !strcmp(argv[1], "child")) {
        child(argv[2]);
        MPI_Finalize();
        return 0;
    }
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    self = argv[0];
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int on_self = argc > 1 && !strcmp(argv[1], "self");
    for (int t = 0; t < NTHREADS; t++) {
        if (on_self) comms[t] = MPI_COMM_SELF;
        else MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    }
    for (int r = 0; r < ROUNDS; r++) {
        pthread_barrier_init(&start, NULL, NTHREADS);
        pthread_t th[NTHREADS];
        for (long t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, spawner, (void *)t);
        for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
        pthread_barrier_destroy(&start);
    }
    if (!on_self)
        for (int t = 0; t < NTHREADS; t++) MPI_Comm_free(&comms[t]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("dpm_spawn_threads OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
