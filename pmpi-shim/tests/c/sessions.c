/* MPI 4 sessions without MPI_Init: a communicator from the mpi://WORLD
 * process set, an Allreduce and a message 0 -> 1 on it; a second session
 * opened and finalized while the first (which traces) is open. Two ranks. */
#include <mpi.h>

int main(void) {
    MPI_Session s;
    MPI_Group g;
    MPI_Comm c;
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s);
    MPI_Group_from_session_pset(s, "mpi://WORLD", &g);
    MPI_Comm_create_from_group(g, "test.sessions", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
    int r, v = 0;
    MPI_Comm_rank(c, &r);
    MPI_Allreduce(&r, &v, 1, MPI_INT, MPI_SUM, c);
    if (r == 0) MPI_Send(&v, 1, MPI_INT, 1, 3, c);
    if (r == 1) MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 3, c, MPI_STATUS_IGNORE);
    MPI_Session s2;
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s2);
    MPI_Session_finalize(&s2);
    MPI_Comm_free(&c);
    MPI_Group_free(&g);
    MPI_Session_finalize(&s);
    return 0;
}
