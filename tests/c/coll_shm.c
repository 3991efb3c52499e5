/* The shared-memory segments of small collectives: a program that makes and
 * frees many communicators, each doing small collectives, keeps only the
 * segments of its live communicators mapped (counted in /proc/self/maps),
 * and the collectives on the 40th communicator still use shared memory
 * (a segment is mapped for it) and give the right values. */
#include "check.h"

/* Mappings of collective segments in this process. */
static int segments(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL, "cannot open /proc/self/maps");
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "/memfd:mpicore-coll")) n++; /* flat::create_anon */
    fclose(f);
    return n;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int shm = size > 1 && !(getenv("MPICORE_COLL_SHM_MAX") && atoi(getenv("MPICORE_COLL_SHM_MAX")) == 0);
    int sum = 0;
    CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size * (size - 1) / 2, "allreduce on world: %d", sum);
    for (int i = 0; i < 40; i++) {
        MPI_Comm c;
        CHECK_RC(MPI_Comm_dup(MPI_COMM_WORLD, &c));
        int v = rank + i, s = -1, b = rank == i % size ? 1000 + i : -1;
        CHECK_RC(MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, c));
        CHECK(s == size * (size - 1) / 2 + size * i, "allreduce on communicator %d: %d", i, s);
        CHECK_RC(MPI_Bcast(&b, 1, MPI_INT, i % size, c));
        CHECK(b == 1000 + i, "bcast on communicator %d: %d", i, b);
        /* World's segment and this communicator's; freed ones are gone. */
        int n = segments();
        CHECK(n == (shm ? 2 : 0), "communicator %d: %d segments mapped", i, n);
        CHECK_RC(MPI_Comm_free(&c));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("coll_shm OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
