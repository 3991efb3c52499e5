/* Time and process switches of a blocking collective: argument 1 names it
 * (alltoall, allgather or barrier; 8 bytes per rank or pair), argument 2 the
 * number of calls. Prints the slowest rank's time per call and the process
 * switches per call and CPU (getrusage, summed over the ranks), to set
 * against tests/bench/floor.c's (see tests/bench/floor.sh).
 *   mpicc -O2 -o switches tests/bench/switches.c && mpirun -n 4 ./switches alltoall 200000 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static long switches(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_nvcsw + u.ru_nivcsw;
}

static char *a, *b;
static void alltoall(void) { MPI_Alltoall(a, 8, MPI_BYTE, b, 8, MPI_BYTE, MPI_COMM_WORLD); }
static void allgather(void) { MPI_Allgather(a, 8, MPI_BYTE, b, 8, MPI_BYTE, MPI_COMM_WORLD); }
static void barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *name = argc > 1 ? argv[1] : "alltoall";
    long ops = argc > 2 ? atol(argv[2]) : 100000;
    a = calloc(size, 8);
    b = calloc(size, 8);
    void (*call)(void) = !strcmp(name, "alltoall") ? alltoall : !strcmp(name, "allgather") ? allgather : barrier;
    for (int i = 0; i < 2000; i++) call();
    MPI_Barrier(MPI_COMM_WORLD);
    long c0 = switches();
    double t0 = MPI_Wtime();
    for (long i = 0; i < ops; i++) call();
    double t = MPI_Wtime() - t0, worst;
    long sw = switches() - c0, all;
    MPI_Reduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&sw, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s %d %.3f us/op %.2f switches/op/cpu\n", name, size, worst / ops * 1e6, (double)all / ops / sysconf(_SC_NPROCESSORS_ONLN));
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
