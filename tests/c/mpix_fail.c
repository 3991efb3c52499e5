/* ULFM with a real failure (run with mpirun -disable-auto-cleanup): the
 * last rank kills itself with SIGKILL; the survivors see the failure in
 * a collective (MPIX_ERR_PROC_FAILED, or MPIX_ERR_REVOKED if another
 * survivor revoked first), in point-to-point with the dead rank
 * (MPIX_ERR_PROC_FAILED) and in a receive from any source
 * (MPIX_ERR_PROC_FAILED_PENDING until acknowledged); they revoke, shrink
 * to the survivors and compute a correct allreduce on the result; agree
 * reports the failure until it is acknowledged; get_acked names it. */
#include <signal.h>
#include <unistd.h>

#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, rc, cls;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2, "needs 2 ranks or more");
    int dead = size - 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm comm;
    CHECK_RC(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    CHECK_RC(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    CHECK_RC(MPI_Barrier(comm));
    /* The doomed rank dies only once every survivor has left the barrier
     * (it gathers a token from each): a rank that dies right after its part
     * of a collective may make the collective fail at others (its last
     * messages can be lost with its connections), which ULFM allows. */
    int token = 1, tokens[64] = {0};
    CHECK(size <= 64, "at most 64 ranks");
    CHECK_RC(MPI_Gather(&token, 1, MPI_INT, tokens, 1, MPI_INT, dead, comm));
    if (rank == dead) raise(SIGKILL);

    /* The collective involving the dead rank fails, at least where the
     * dead rank's part was needed (as in ULFM, a rank whose part of the
     * algorithm got through may return success). */
    int one = 1, sum = 0;
    rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
    cls = error_class(rc);
    CHECK(rc == MPI_SUCCESS || cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_REVOKED,
          "allreduce with a dead rank: rc %d class %d", rc, cls);
    int errs = rc != MPI_SUCCESS, any = 0;
    /* Somebody saw it: the survivors agree on that (the failure is not
     * acknowledged, so agree reports it, with the flag agreed anyway). */
    any = !errs;
    rc = MPIX_Comm_agree(comm, &any);
    CHECK(error_class(rc) == MPIX_ERR_PROC_FAILED, "agree with an unacknowledged failure: class %d", error_class(rc));
    CHECK(any == 0, "no survivor saw the failure");
    CHECK_RC(MPIX_Comm_revoke(comm));
    MPI_Comm shrunk;
    CHECK_RC(MPIX_Comm_shrink(comm, &shrunk));
    int srank, ssize;
    MPI_Comm_rank(shrunk, &srank);
    MPI_Comm_size(shrunk, &ssize);
    CHECK(ssize == size - 1 && srank == rank, "shrunk: rank %d of %d", srank, ssize);
    CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, shrunk));
    CHECK(sum == (size - 1) * (size - 2) / 2, "allreduce on the survivors: %d", sum);
    CHECK_RC(MPI_Barrier(shrunk));

    /* Point-to-point with the dead rank, on the world communicator. */
    int x = 0;
    rc = MPI_Send(&x, 1, MPI_INT, dead, 0, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPIX_ERR_PROC_FAILED, "send to the dead: class %d", error_class(rc));
    rc = MPI_Recv(&x, 1, MPI_INT, dead, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(error_class(rc) == MPIX_ERR_PROC_FAILED, "receive from the dead: class %d", error_class(rc));
    rc = MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(error_class(rc) == MPIX_ERR_PROC_FAILED_PENDING, "any-source receive: class %d", error_class(rc));
    /* Agree reports the failure until it is acknowledged. */
    int flag = 1;
    rc = MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
    CHECK(error_class(rc) == MPIX_ERR_PROC_FAILED, "agree before the acknowledgement: class %d", error_class(rc));
    CHECK_RC(MPIX_Comm_failure_ack(MPI_COMM_WORLD));
    MPI_Group acked, world;
    CHECK_RC(MPIX_Comm_failure_get_acked(MPI_COMM_WORLD, &acked));
    int n = -1, r0 = 0, tr = -1;
    MPI_Group_size(acked, &n);
    CHECK(n == 1, "%d acknowledged failures", n);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_translate_ranks(acked, 1, &r0, world, &tr);
    CHECK(tr == dead, "acknowledged failure is rank %d", tr);
    flag = rank == 0 ? 2 : 3;
    CHECK_RC(MPIX_Comm_agree(MPI_COMM_WORLD, &flag));
    CHECK(flag == 2, "agree after the acknowledgement gave %d", flag);
    /* Acknowledged: any-source receives work again among the survivors. */
    if (size > 2) {
        if (rank == 0) {
            x = 42;
            CHECK_RC(MPI_Send(&x, 1, MPI_INT, 1, 5, MPI_COMM_WORLD));
        } else if (rank == 1) {
            MPI_Status st;
            CHECK_RC(MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st));
            CHECK(x == 42 && st.MPI_SOURCE == 0, "got %d from %d", x, st.MPI_SOURCE);
        }
    }
    MPI_Group_free(&acked);
    MPI_Group_free(&world);
    MPI_Comm_free(&shrunk);
    MPI_Comm_free(&comm);
    if (rank == 0) printf("mpix_fail OK: %d survivors\n", size - 1);
    MPI_Finalize();
    return 0;
}
