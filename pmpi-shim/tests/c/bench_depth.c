/* Overhead of call paths and counters: a tight loop of a cheap call
 * (MPI_Comm_rank) made from the bottom of a chain of nested functions,
 * so that call paths of depth 8 are whole. Prints ns per call.
 * Usage: bench_depth CALLS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define NESTED __attribute__((noipa))

static volatile int sink;

NESTED static void loop(long calls) {
    int r;
    for (long i = 0; i < calls; i++)
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
    sink++;
}

/* level(n) calls itself n times, then the loop: n + 1 frames above it. */
NESTED static void level(int n, long calls) {
    if (n == 0)
        loop(calls);
    else
        level(n - 1, calls);
    sink++;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    long calls = argc > 1 ? atol(argv[1]) : 1000000;
    double t0 = MPI_Wtime();
    level(10, calls);
    double t1 = MPI_Wtime();
    printf("call_ns %.2f\n", (t1 - t0) * 1e9 / calls);
    MPI_Finalize();
    return 0;
}
