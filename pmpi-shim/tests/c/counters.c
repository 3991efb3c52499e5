/* A known number of instructions per rank between two barriers: the loop
 * runs 2 instructions (dec, jnz) per iteration, 25e6 * (rank + 1) times,
 * so the compute interval that ends at the second MPI_Barrier holds
 * 50e6 * (rank + 1) instructions, plus the few hundred of the shim's own
 * code around the two calls. */
#include <mpi.h>
#include <stdint.h>

#define ITERATIONS 25000000ull

static void work(uint64_t n) {
#if defined(__x86_64__)
    __asm__ volatile("1: dec %0\n\tjnz 1b" : "+r"(n) : : "cc");
#elif defined(__aarch64__)
    __asm__ volatile("1: subs %0, %0, #1\n\tb.ne 1b" : "+r"(n) : : "cc");
#else
#error "the instruction loop is written for x86-64 and AArch64"
#endif
}

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    work(ITERATIONS * (uint64_t)(rank + 1));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
