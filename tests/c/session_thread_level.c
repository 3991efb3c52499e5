/* A session made while the world model runs at MPI_THREAD_MULTIPLE runs at
 * that level: MPI_Session_get_info reports the level the process provides
 * (MPI_THREAD_MULTIPLE), not the one asked for (none, or a lower one),
 * which the standard allows as for MPI_Init_thread (MPICH suite:
 * threads/init/mult_session). As in that test, threads make their
 * sessions, groups and communicators concurrently and use them. */
#include "check.h"
#include <pthread.h>

#define NTHREADS 3

static int wsize;

static void *library(void *arg) {
    long id = (long)arg;
    MPI_Info ask = MPI_INFO_NULL, got;
    if (id == 2) {
        MPI_Info_create(&ask);
        MPI_Info_set(ask, "thread_level", "MPI_THREAD_FUNNELED");
    }
    MPI_Session s;
    CHECK_RC(MPI_Session_init(ask, MPI_ERRORS_RETURN, &s));
    if (ask != MPI_INFO_NULL) MPI_Info_free(&ask);
    CHECK_RC(MPI_Session_get_info(s, &got));
    char v[64];
    int flag = 0;
    CHECK_RC(MPI_Info_get(got, "thread_level", sizeof v - 1, v, &flag));
    CHECK(flag && !strcmp(v, "MPI_THREAD_MULTIPLE"), "thread %ld: session thread_level %s", id, flag ? v : "(unset)");
    MPI_Info_free(&got);
    MPI_Group g;
    CHECK_RC(MPI_Group_from_session_pset(s, id % 2 ? "mpi://SELF" : "mpi://WORLD", &g));
    char tag[32];
    snprintf(tag, sizeof tag, "session_thread_level.%ld", id);
    MPI_Comm c;
    CHECK_RC(MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    MPI_Group_free(&g);
    int one = 1, sum = 0;
    CHECK_RC(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == (id % 2 ? 1 : wsize), "thread %ld: sum %d", id, sum);
    MPI_Comm_free(&c);
    CHECK_RC(MPI_Session_finalize(&s));
    return NULL;
}

int main(int argc, char **argv) {
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    pthread_t th[NTHREADS];
    for (long i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, library, (void *)i);
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    int level;
    MPI_Query_thread(&level);
    CHECK(level == MPI_THREAD_MULTIPLE, "MPI_Query_thread %d", level);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("session_thread_level OK on %d ranks\n", wsize);
    MPI_Finalize();
    return 0;
}
