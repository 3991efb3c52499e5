/* Built with Debian's mpicc.mpich as well as ours: prints which library it
 * runs on, and exercises constants whose values must agree between the two
 * headers (handles, status layout, special pointers). */
#include "check.h"

int main(int argc, char **argv) {
    int provided;
    CHECK_RC(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided));
    CHECK(provided >= MPI_THREAD_FUNNELED, "provided %d", provided);
    int rank, size, len;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(ver, &len);
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Get_processor_name(host, &len);
    CHECK(len > 0, "processor name");
    int selfrank, selfsize;
    MPI_Comm_rank(MPI_COMM_SELF, &selfrank);
    MPI_Comm_size(MPI_COMM_SELF, &selfsize);
    CHECK(selfrank == 0 && selfsize == 1, "COMM_SELF");
    /* Status fields by name, STATUS_IGNORE, IN_PLACE, MPI_SUM. */
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    long v = 1000 + rank, got;
    MPI_Status st;
    MPI_Sendrecv(&v, 1, MPI_LONG, next, 3, &got, 1, MPI_LONG, prev, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    CHECK(got == 1000 + prev && st.MPI_SOURCE == prev && st.MPI_TAG == 3, "sendrecv");
    MPI_Sendrecv(&v, 1, MPI_LONG, next, 4, &got, 1, MPI_LONG, prev, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double x = rank;
    MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    CHECK(x == size * (size - 1) / 2.0, "allreduce %g", x);
    MPI_Comm dup;
    CHECK_RC(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int r2;
    MPI_Comm_rank(dup, &r2);
    CHECK(r2 == rank, "dup rank");
    MPI_Comm_free(&dup);
    CHECK(dup == MPI_COMM_NULL, "free");
    double t = MPI_Wtime();
    CHECK(t > 0 && MPI_Wtick() > 0, "wtime");
    if (rank == 0) printf("abi_check OK on %d ranks, library: %s\n", size, ver);
    MPI_Finalize();
    return 0;
}
