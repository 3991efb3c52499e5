/* Many ranks across many "hosts" (run with MPICORE_FAKE_HOSTS): every rank
 * exchanges with every other (Alltoall, then a ring of point-to-point and a
 * pairwise exchange), then reports how many file descriptors and threads it
 * holds; rank 0 prints the largest of each, which the test bounds:
 * connections are one per peer actually talked to and direction, and the
 * library starts no thread per connection. */
#include "check.h"
#include <dirent.h>

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *out = malloc(size * sizeof(int)), *in = malloc(size * sizeof(int));
    for (int i = 0; i < size; i++) out[i] = rank * 1000 + i;
    CHECK_RC(MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) CHECK(in[i] == i * 1000 + rank, "alltoall from %d: %d", i, in[i]);
    for (int step = 1; step < size; step++) {
        int to = (rank + step) % size, from = (rank - step + size) % size, got = -1;
        CHECK_RC(MPI_Sendrecv(&rank, 1, MPI_INT, to, step, &got, 1, MPI_INT, from, step, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(got == from, "step %d: got %d from %d", step, got, from);
    }
    int mine[2] = {count_entries("/proc/self/fd"), count_entries("/proc/self/task")}, most[2];
    CHECK_RC(MPI_Reduce(mine, most, 2, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD));
    if (rank == 0) printf("tcp_many OK on %d ranks: max fds %d, max threads %d\n", size, most[0], most[1]);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
