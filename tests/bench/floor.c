/* The floor of a blocking collective in which every rank needs every
 * rank's arrival (Barrier, Alltoall, Allgather) with more ranks than cores,
 * without MPI: N processes (argument 1) make M operations (argument 2),
 * each publishing its operation number in its own cache line and waiting
 * until every rank has published it. A waiter yields the CPU (sched_yield)
 * when a rank it still waits for last ran on its own CPU (it cannot run
 * while this one polls), and polls otherwise, the rule of mpi-core's
 * shared-memory collectives (coll/flat.rs, `wait_long`), with none of the
 * library's work. Prints the time per operation and the process switches
 * per operation and CPU (getrusage), which no blocking design can bring
 * below (ranks per CPU - 1); see BENCHMARKS.md, "The floor".
 *   gcc -O2 -o floor tests/bench/floor.c && ./floor 4 200000 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct slot {
    _Atomic long seq;
    _Atomic int cpu;
    long switches;
    char pad[64 - 24];
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static long switches(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_nvcsw + u.ru_nivcsw;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4;
    long ops = argc > 2 ? atol(argv[2]) : 200000, warm = 2000;
    struct slot *s = mmap(0, sizeof(struct slot) * (n + 1), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED || n < 1) return 1;
    _Atomic double *t = (_Atomic double *)&s[n];
    for (int r = 0; r < n; r++) {
        if (fork()) continue;
        int cpu = sched_getcpu();
        s[r].cpu = cpu;
        double t0 = 0;
        long c0 = 0;
        for (long k = 1; k <= warm + ops; k++) {
            if (k == warm + 1) {
                t0 = now();
                c0 = switches();
            }
            atomic_store_explicit(&s[r].seq, k, memory_order_release);
            for (;;) {
                int missing = 0, here = 0;
                for (int q = 0; q < n; q++) {
                    if (atomic_load_explicit(&s[q].seq, memory_order_acquire) < k) {
                        missing = 1;
                        here |= atomic_load_explicit(&s[q].cpu, memory_order_relaxed) == cpu;
                    }
                }
                if (!missing) break;
                if (here) {
                    sched_yield();
                    cpu = sched_getcpu();
                    atomic_store_explicit(&s[r].cpu, cpu, memory_order_relaxed);
                } else {
                    __builtin_ia32_pause();
                }
            }
        }
        s[r].switches = switches() - c0;
        if (r == 0) *t = now() - t0;
        exit(0);
    }
    while (wait(0) > 0) {
    }
    long sw = 0;
    for (int r = 0; r < n; r++) sw += s[r].switches;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    printf("floor %d %.3f us/op %.2f switches/op/cpu\n", n, *t / ops * 1e6, (double)sw / ops / cpus);
    return 0;
}
