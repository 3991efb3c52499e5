/* Cost of handing a CPU from one process to another with sched_yield:
 * N processes (argument 1, default 2) pinned to CPU 0 take turns
 * incrementing a shared counter, 10^6 turns each; prints the time per
 * handoff. This is the floor of a blocking collective with more ranks than
 * cores (each rank must run once per operation). No MPI:
 *   gcc -O2 -o yield tests/bench/yield.c && ./yield 2 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2;
    long iters = 1000000;
    _Atomic long *turn = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(0, &s);
    sched_setaffinity(0, sizeof s, &s);
    for (int p = 0; p < n; p++) {
        if (fork() == 0) {
            double t0 = now();
            for (long i = 0; i < iters; i++) {
                while (atomic_load(turn) % n != p) sched_yield();
                atomic_fetch_add(turn, 1);
            }
            if (p == 0) printf("%d processes: %.3f us per handoff\n", n, (now() - t0) / ((double)iters * n) * 1e6);
            fflush(stdout);
            _exit(0);
        }
    }
    while (wait(0) > 0) {
    }
    return 0;
}
