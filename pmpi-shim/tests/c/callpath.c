/* Call paths with known answers: one exchange() helper called from two
 * solvers with different counts and sizes, and one MPI call made by a
 * solver itself. The call-tree profile must tell the two exchange() paths
 * apart: main > solver_a > exchange > MPI_Sendrecv 3 times (10 doubles),
 * main > solver_b > exchange > MPI_Sendrecv 5 times (100 doubles),
 * main > solver_a > MPI_Barrier once.
 * Rank 1 enters solver_b 50 ms late: rank 0's first exchange there waits
 * for it (a Late Sender on the solver_b path, none on solver_a's).
 * `noipa` keeps the helpers whole at -O2 (no inlining or cloning), and
 * the volatile store after each call keeps it from being a tail call, so
 * the source's call structure is the machine code's. */
#include <mpi.h>
#include <unistd.h>

#define HELPER __attribute__((noipa))

static volatile int sink;

HELPER void exchange(double *buf, int n, int rank, int size) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Sendrecv(buf, n, MPI_DOUBLE, right, 7, buf + n, n, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    sink++;
}

HELPER void solver_a(double *buf, int rank, int size) {
    for (int i = 0; i < 3; i++)
        exchange(buf, 10, rank, size);
    MPI_Barrier(MPI_COMM_WORLD);
    sink++;
}

HELPER void solver_b(double *buf, int rank, int size) {
    if (rank == 1)
        usleep(50000);
    for (int i = 0; i < 5; i++)
        exchange(buf, 100, rank, size);
    sink++;
}

int main(int argc, char **argv) {
    static double buf[200];
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    solver_a(buf, rank, size);
    solver_b(buf, rank, size);
    MPI_Finalize();
    return 0;
}
