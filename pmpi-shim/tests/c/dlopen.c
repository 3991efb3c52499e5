/* A library loaded with dlopen after MPI_Init makes MPI calls: its call
 * sites must symbolize too. argv[1]: path of dlopen_lib.so; argv[2] "kill":
 * rank 1 goes on calling MPI for 1.5 s, then kills itself (SIGKILL). */
#include <dlfcn.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    void *lib = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    void (*exchange)(void) = (void (*)(void))dlsym(lib, "plugin_exchange");
    exchange();
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc > 2 && strcmp(argv[2], "kill") == 0 && rank == 1) {
        for (int i = 0; i < 3000; i++) {
            MPI_Comm_rank(MPI_COMM_WORLD, &rank);
            usleep(500);
        }
        kill(getpid(), SIGKILL);
    }
    MPI_Finalize();
    return 0;
}
