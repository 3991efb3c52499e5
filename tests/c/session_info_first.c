/* MPI_Session_init as the first MPI call, given an info object made before
 * the runtime starts (MPI 4.0 11.4.1): its thread_level is honoured and
 * returned by MPI_Session_get_info; process set names in any case
 * (mpi://self, mpi://world); a communicator from the group works (MPICH
 * suite: init/session, init/session_self). */
#include "check.h"

int main(void) {
    MPI_Info sinfo, used;
    CHECK_RC(MPI_Info_create(&sinfo));
    CHECK_RC(MPI_Info_set(sinfo, "thread_level", "MPI_THREAD_MULTIPLE"));
    MPI_Session s;
    CHECK_RC(MPI_Session_init(sinfo, MPI_ERRORS_RETURN, &s));
    CHECK_RC(MPI_Info_free(&sinfo));
    CHECK_RC(MPI_Session_get_info(s, &used));
    char v[64];
    int flag = 0;
    CHECK_RC(MPI_Info_get(used, "thread_level", sizeof v - 1, v, &flag));
    CHECK(flag && !strcmp(v, "MPI_THREAD_MULTIPLE"), "thread_level %s", flag ? v : "(unset)");
    CHECK_RC(MPI_Info_free(&used));

    MPI_Group world, self;
    CHECK_RC(MPI_Group_from_session_pset(s, "mpi://world", &world));
    CHECK_RC(MPI_Group_from_session_pset(s, "mpi://self", &self));
    int size, one;
    MPI_Group_size(world, &size);
    MPI_Group_size(self, &one);
    CHECK(one == 1, "mpi://self has %d members", one);
    MPI_Comm comm, me;
    CHECK_RC(MPI_Comm_create_from_group(world, "session_info_first", MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm));
    CHECK_RC(MPI_Comm_create_from_group(self, "session_info_first.self", MPI_INFO_NULL, MPI_ERRORS_RETURN, &me));
    CHECK_RC(MPI_Group_free(&world));
    CHECK_RC(MPI_Group_free(&self));
    int rank, sum = 0;
    MPI_Comm_rank(comm, &rank);
    CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm));
    CHECK(sum == size * (size - 1) / 2, "sum %d on %d ranks", sum, size);
    int in = 7, out = 0;
    MPI_Request r;
    CHECK_RC(MPI_Irecv(&out, 1, MPI_INT, 0, 0, me, &r));
    CHECK_RC(MPI_Send(&in, 1, MPI_INT, 0, 0, me));
    CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(out == 7, "self message %d", out);
    CHECK_RC(MPI_Comm_free(&me));
    CHECK_RC(MPI_Comm_free(&comm));
    CHECK_RC(MPI_Session_finalize(&s));
    if (rank == 0) printf("session_info_first OK on %d ranks\n", size);
    return 0;
}
