/* MPI_Reduce_local's buffers: MPI_IN_PLACE for either, or one buffer as
 * both, is MPI_ERR_BUFFER (there is no in-place form); a valid call
 * combines (MPICH suite: errors/coll/reduce_local). */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int in[4] = {1, 2, 3, 4}, io[4] = {10, 20, 30, 40};
    CHECK_RC(MPI_Reduce_local(in, io, 4, MPI_INT, MPI_SUM));
    CHECK(io[0] == 11 && io[3] == 44, "sum %d %d", io[0], io[3]);
    int rc = MPI_Reduce_local(MPI_IN_PLACE, io, 4, MPI_INT, MPI_SUM);
    CHECK(error_class(rc) == MPI_ERR_BUFFER, "MPI_IN_PLACE as inbuf: class %d", error_class(rc));
    rc = MPI_Reduce_local(in, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM);
    CHECK(error_class(rc) == MPI_ERR_BUFFER, "MPI_IN_PLACE as inoutbuf: class %d", error_class(rc));
    rc = MPI_Reduce_local(io, io, 4, MPI_INT, MPI_SUM);
    CHECK(error_class(rc) == MPI_ERR_BUFFER, "one buffer as both: class %d", error_class(rc));
    CHECK(io[0] == 11 && io[3] == 44, "a failed call changed the buffer: %d %d", io[0], io[3]);
    /* Zero elements move nothing: the same pointer is no error. */
    CHECK_RC(MPI_Reduce_local(io, io, 0, MPI_INT, MPI_SUM));
    if (rank == 0) printf("coll_reduce_local_args OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
