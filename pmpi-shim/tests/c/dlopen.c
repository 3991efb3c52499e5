/* A library loaded with dlopen after MPI_Init makes MPI calls: its call
 * sites must symbolize too. argv[1]: path of dlopen_lib.so. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    void *lib = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    void (*exchange)(void) = (void (*)(void))dlsym(lib, "plugin_exchange");
    exchange();
    MPI_Finalize();
    return 0;
}
