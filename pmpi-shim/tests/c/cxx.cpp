// A C++ program: call sites in a namespaced function and in a method
// symbolize to demangled names. Two ranks.
#include <mpi.h>

namespace solver {
struct Grid {
    int rank = 0;
    void exchange() {
        int v = rank, s = 0;
        MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); // line 10
    }
};
__attribute__((noinline)) void step(Grid &g, int n) {
    for (int i = 0; i < n; i++) g.exchange();
    MPI_Barrier(MPI_COMM_WORLD); // line 15
}
} // namespace solver

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    solver::Grid g;
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    solver::step(g, 2);
    MPI_Finalize();
    return 0;
}
