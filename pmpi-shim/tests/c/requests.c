/* Requests: persistent send/receive with Start/Wait, Waitany, Waitsome,
 * Testall polling, a cancelled receive, MPI_Sendrecv, MPI_Isendrecv(_replace)
 * a Waitall in reverse posting order, receives completing out of posting
 * order, a freed active receive and Improbe/Imrecv. Two ranks. */
#include <mpi.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, a[4] = {0}, b[4] = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = 1 - rank;
    MPI_Request p;
    if (rank == 0) MPI_Send_init(a, 4, MPI_INT, peer, 11, MPI_COMM_WORLD, &p);
    else MPI_Recv_init(b, 4, MPI_INT, peer, 11, MPI_COMM_WORLD, &p);
    for (int i = 0; i < 3; i++) { MPI_Start(&p); MPI_Wait(&p, MPI_STATUS_IGNORE); }
    MPI_Request_free(&p);

    MPI_Request r[3];
    MPI_Irecv(b, 1, MPI_INT, peer, 12, MPI_COMM_WORLD, &r[0]);
    MPI_Irecv(b + 1, 2, MPI_INT, peer, 13, MPI_COMM_WORLD, &r[1]);
    MPI_Isend(a, 1, MPI_INT, peer, 12, MPI_COMM_WORLD, &r[2]);
    int idx;
    MPI_Waitany(3, r, &idx, MPI_STATUS_IGNORE);
    MPI_Send(a, 2, MPI_INT, peer, 13, MPI_COMM_WORLD);
    int outcount, idxs[3];
    MPI_Status sts[3];
    do { MPI_Waitsome(3, r, &outcount, idxs, sts); } while (outcount != MPI_UNDEFINED);

    MPI_Request c;
    MPI_Irecv(b, 1, MPI_INT, peer, 99, MPI_COMM_WORLD, &c);
    MPI_Cancel(&c);
    MPI_Status cst;
    MPI_Wait(&c, &cst);

    MPI_Request t[2];
    MPI_Irecv(b, 1, MPI_INT, peer, 14, MPI_COMM_WORLD, &t[0]);
    MPI_Isend(a, 1, MPI_INT, peer, 14, MPI_COMM_WORLD, &t[1]);
    int flag = 0;
    while (!flag) MPI_Testall(2, t, &flag, MPI_STATUSES_IGNORE);

    MPI_Sendrecv(a, 3, MPI_INT, peer, 15, b, 3, MPI_INT, MPI_ANY_SOURCE, 15, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    /* Nonblocking send-receive, completed by Wait (ignored status) and
     * Waitall (real statuses); one receive half with a wildcard. MPI 4.0:
     * not in Open MPI 4.1, whose trace is checked without it. */
#if MPI_VERSION >= 4
    MPI_Request q[2];
    MPI_Isendrecv(a, 2, MPI_INT, peer, 17, b, 4, MPI_INT, peer, 17, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Isendrecv_replace(a, 3, MPI_INT, peer, 18, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &q[0]);
    MPI_Isendrecv(a, 1, MPI_INT, peer, 19, b, 1, MPI_INT, peer, 19, MPI_COMM_WORLD, &q[1]);
    MPI_Status qs[2];
    MPI_Waitall(2, q, qs);
#endif
    /* Two receives of one source and tag, waited for in reverse order:
     * messages of 1 and 2 ints, matched in posting order. */
    MPI_Request w[2];
    MPI_Irecv(b, 4, MPI_INT, peer, 20, MPI_COMM_WORLD, &w[1]);
    MPI_Irecv(b + 2, 2, MPI_INT, peer, 20, MPI_COMM_WORLD, &w[0]);
    MPI_Send(a, 1, MPI_INT, peer, 20, MPI_COMM_WORLD);
    MPI_Send(a, 2, MPI_INT, peer, 20, MPI_COMM_WORLD);
    MPI_Waitall(2, w, MPI_STATUSES_IGNORE);
    /* A receive posted before a blocking one of the same source and tag
     * gets the first message even though it completes later. */
    MPI_Request x;
    int d[4] = {0};
    MPI_Irecv(b, 4, MPI_INT, peer, 21, MPI_COMM_WORLD, &x);
    MPI_Send(a, 1, MPI_INT, peer, 21, MPI_COMM_WORLD);
    MPI_Send(a, 2, MPI_INT, peer, 21, MPI_COMM_WORLD);
    MPI_Recv(d, 4, MPI_INT, peer, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&x, MPI_STATUS_IGNORE);
    /* A receive freed while active still takes its message (the first). */
    static int freed[4];
    MPI_Irecv(freed, 4, MPI_INT, peer, 22, MPI_COMM_WORLD, &x);
    MPI_Request_free(&x);
    MPI_Send(a, 1, MPI_INT, peer, 22, MPI_COMM_WORLD);
    MPI_Send(a, 2, MPI_INT, peer, 22, MPI_COMM_WORLD);
    MPI_Recv(d, 4, MPI_INT, peer, 22, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    /* Nonblocking matched probe: rank 0 sends, rank 1 probes and receives. */
    if (rank == 0) MPI_Send(a, 2, MPI_INT, 1, 23, MPI_COMM_WORLD);
    else {
        MPI_Message m;
        MPI_Status ps;
        int f = 0;
        while (!f) MPI_Improbe(0, 23, MPI_COMM_WORLD, &f, &m, &ps);
        MPI_Imrecv(b, 2, MPI_INT, &m, &x);
        MPI_Wait(&x, MPI_STATUS_IGNORE);
    }
    /* Matched probe: rank 0 sends, rank 1 probes any source, then receives. */
    if (rank == 0) MPI_Send(a, 2, MPI_INT, 1, 16, MPI_COMM_WORLD);
    else {
        MPI_Message m;
        MPI_Status ps;
        int pflag = 0;
        while (!pflag) MPI_Iprobe(MPI_ANY_SOURCE, 16, MPI_COMM_WORLD, &pflag, &ps);
        MPI_Mprobe(MPI_ANY_SOURCE, 16, MPI_COMM_WORLD, &m, &ps);
        MPI_Mrecv(b, 2, MPI_INT, &m, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
