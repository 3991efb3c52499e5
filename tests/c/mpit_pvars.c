/* The tool information interface's performance variables on 2 ranks: a
 * session counts the messages and bytes of a known ping-pong exactly;
 * stop, reset, readreset, write, MPI_T_PVAR_ALL_HANDLES; the unexpected and
 * posted queues as levels; error codes. */
#include "mpit.h"

#define ROUNDS 10
#define SMALL 100
#define LARGE (64 * 1024) /* above the eager limit: rendezvous */

static MPI_T_pvar_session session;

static MPI_T_pvar_handle handle_of(const char *name, int cls, int want_continuous) {
    int i = -1, count = 0, continuous = -1, readonly = -1, var_class;
    MPI_Datatype dt;
    T_OK(MPI_T_pvar_get_index(name, cls, &i));
    T_OK(MPI_T_pvar_get_info(i, NULL, NULL, NULL, &var_class, &dt, NULL, NULL, NULL, NULL, &readonly, &continuous, NULL));
    CHECK(var_class == cls && dt == MPI_UNSIGNED_LONG, "%s: class %d", name, var_class);
    CHECK(continuous == want_continuous && readonly == want_continuous, "%s: continuous %d readonly %d", name, continuous, readonly);
    MPI_T_pvar_handle h;
    T_OK(MPI_T_pvar_handle_alloc(session, i, NULL, &h, &count));
    CHECK(count == 1, "%s: count %d", name, count);
    return h;
}

static unsigned long rd(MPI_T_pvar_handle h) {
    unsigned long v = 0;
    T_OK(MPI_T_pvar_read(session, h, &v));
    return v;
}

int main(int argc, char **argv) {
    int provided, rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "needs 2 ranks");
    int peer = 1 - rank;
    T_OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));

    int num = 0;
    T_OK(MPI_T_pvar_get_num(&num));
    CHECK(num >= 7, "%d performance variables", num);
    for (int i = 0; i < num; i++) {
        char name[128], desc[512];
        int nl = sizeof name, dl = sizeof desc, verbosity, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum et;
        T_OK(MPI_T_pvar_get_info(i, name, &nl, &verbosity, &cls, &dt, &et, desc, &dl, &bind, &ro, &cont, &atomic));
        CHECK(bind == MPI_T_BIND_NO_OBJECT && et == MPI_T_ENUM_NULL && nl == (int)strlen(name) + 1, "%s info", name);
        if (rank == 0) printf("pvar %s class %d continuous %d readonly %d\n", name, cls - MPI_T_PVAR_CLASS_STATE, cont, ro);
    }
    int idx;
    T_ERR(MPI_T_pvar_get_index("mpicore_p2p_sent_messages", MPI_T_PVAR_CLASS_LEVEL, &idx), MPI_T_ERR_INVALID_NAME);
    T_ERR(MPI_T_pvar_get_info(num, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);

    T_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle sent = handle_of("mpicore_p2p_sent_messages", MPI_T_PVAR_CLASS_COUNTER, 0);
    MPI_T_pvar_handle sent_b = handle_of("mpicore_p2p_sent_bytes", MPI_T_PVAR_CLASS_COUNTER, 0);
    MPI_T_pvar_handle recvd = handle_of("mpicore_p2p_received_messages", MPI_T_PVAR_CLASS_COUNTER, 0);
    MPI_T_pvar_handle recvd_b = handle_of("mpicore_p2p_received_bytes", MPI_T_PVAR_CLASS_COUNTER, 0);
    MPI_T_pvar_handle unexp = handle_of("mpicore_p2p_unexpected_queue", MPI_T_PVAR_CLASS_LEVEL, 1);
    MPI_T_pvar_handle peak = handle_of("mpicore_p2p_unexpected_peak", MPI_T_PVAR_CLASS_HIGHWATERMARK, 1);
    MPI_T_pvar_handle posted = handle_of("mpicore_p2p_posted_queue", MPI_T_PVAR_CLASS_LEVEL, 1);

    /* Stopped counters do not count. */
    char *buf = calloc(LARGE, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Sendrecv(buf, SMALL, MPI_BYTE, peer, 1, buf + SMALL, SMALL, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(rd(sent) == 0 && rd(recvd) == 0, "a stopped counter counted");

    /* The ping-pong: ROUNDS small messages and one large each way. */
    T_OK(MPI_T_pvar_start(session, MPI_T_PVAR_ALL_HANDLES));
    for (int r = 0; r < ROUNDS; r++) {
        if (rank == 0) {
            MPI_Send(buf, SMALL, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
            MPI_Recv(buf, SMALL, MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, SMALL, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, SMALL, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
        }
    }
    MPI_Sendrecv_replace(buf, LARGE, MPI_BYTE, peer, 8, peer, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    T_OK(MPI_T_pvar_stop(session, MPI_T_PVAR_ALL_HANDLES));
    unsigned long want_b = ROUNDS * SMALL + LARGE;
    printf("rank %d: sent %lu messages %lu bytes, received %lu messages %lu bytes\n", rank, rd(sent), rd(sent_b), rd(recvd), rd(recvd_b));
    CHECK(rd(sent) == ROUNDS + 1 && rd(sent_b) == want_b, "sent %lu / %lu", rd(sent), rd(sent_b));
    CHECK(rd(recvd) == ROUNDS + 1 && rd(recvd_b) == want_b, "received %lu / %lu", rd(recvd), rd(recvd_b));
    /* Stopped: traffic is not counted. */
    MPI_Sendrecv(buf, SMALL, MPI_BYTE, peer, 1, buf + SMALL, SMALL, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(rd(sent) == ROUNDS + 1, "counted while stopped");

    /* readreset, reset, write. */
    unsigned long v = 0;
    T_OK(MPI_T_pvar_readreset(session, sent, &v));
    CHECK(v == ROUNDS + 1 && rd(sent) == 0, "readreset gave %lu, then %lu", v, rd(sent));
    T_OK(MPI_T_pvar_reset(session, MPI_T_PVAR_ALL_HANDLES));
    CHECK(rd(sent_b) == 0 && rd(recvd) == 0 && rd(recvd_b) == 0, "reset of all handles");
    v = 5;
    T_OK(MPI_T_pvar_write(session, recvd, &v));
    T_OK(MPI_T_pvar_start(session, recvd));
    MPI_Sendrecv(buf, SMALL, MPI_BYTE, peer, 1, buf + SMALL, SMALL, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    T_OK(MPI_T_pvar_stop(session, recvd));
    CHECK(rd(recvd) == 6, "written 5, one more message: %lu", rd(recvd));

    /* Continuous, read-only variables. */
    T_ERR(MPI_T_pvar_start(session, unexp), MPI_T_ERR_PVAR_NO_STARTSTOP);
    T_ERR(MPI_T_pvar_stop(session, peak), MPI_T_ERR_PVAR_NO_STARTSTOP);
    T_ERR(MPI_T_pvar_write(session, unexp, &v), MPI_T_ERR_PVAR_NO_WRITE);
    T_ERR(MPI_T_pvar_reset(session, posted), MPI_T_ERR_PVAR_NO_WRITE);
    T_ERR(MPI_T_pvar_readreset(session, peak, &v), MPI_T_ERR_PVAR_NO_WRITE);
    T_ERR(MPI_T_pvar_read(session, MPI_T_PVAR_ALL_HANDLES, &v), MPI_T_ERR_INVALID_HANDLE);
    T_ERR(MPI_T_pvar_write(session, MPI_T_PVAR_ALL_HANDLES, &v), MPI_T_ERR_INVALID_HANDLE);

    /* Three messages wait unexpected at rank 0, then one posted receive. */
    CHECK(rd(unexp) == 0 && rd(posted) == 0, "queues not empty: %lu %lu", rd(unexp), rd(posted));
    if (rank == 1) {
        for (int k = 0; k < 3; k++) MPI_Send(buf, SMALL, MPI_BYTE, 0, 20 + k, MPI_COMM_WORLD);
    } else {
        int flag = 0;
        while (rd(unexp) < 3) /* progress without receiving them */
            MPI_Iprobe(1, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        CHECK(rd(unexp) == 3 && rd(peak) >= 3, "unexpected %lu peak %lu", rd(unexp), rd(peak));
        for (int k = 0; k < 3; k++) MPI_Recv(buf, SMALL, MPI_BYTE, 1, 20 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(rd(unexp) == 0 && rd(peak) >= 3, "after receiving: unexpected %lu", rd(unexp));
        printf("rank 0: unexpected queue held 3, peak %s\n", rd(peak) >= 3 ? "at least 3" : "wrong");
    }
    MPI_Request req;
    if (rank == 0) {
        MPI_Irecv(buf, SMALL, MPI_BYTE, 1, 30, MPI_COMM_WORLD, &req);
        CHECK(rd(posted) == 1, "posted %lu", rd(posted));
        MPI_Send(buf, 0, MPI_BYTE, 1, 31, MPI_COMM_WORLD);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(rd(posted) == 0, "posted after the match %lu", rd(posted));
        printf("rank 0: posted queue held 1\n");
    } else {
        MPI_Recv(buf, 0, MPI_BYTE, 0, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, SMALL, MPI_BYTE, 0, 30, MPI_COMM_WORLD);
    }

    /* Handles and sessions. */
    MPI_T_pvar_session other;
    T_OK(MPI_T_pvar_session_create(&other));
    T_ERR(MPI_T_pvar_read(other, sent, &v), MPI_T_ERR_INVALID_HANDLE);
    T_OK(MPI_T_pvar_session_free(&other));
    CHECK(other == MPI_T_PVAR_SESSION_NULL, "session not reset");
    T_ERR(MPI_T_pvar_start(other, MPI_T_PVAR_ALL_HANDLES), MPI_T_ERR_INVALID_SESSION);
    T_OK(MPI_T_pvar_handle_free(session, &sent));
    CHECK(sent == MPI_T_PVAR_HANDLE_NULL, "handle not reset");
    T_ERR(MPI_T_pvar_read(session, sent, &v), MPI_T_ERR_INVALID_HANDLE);
    T_OK(MPI_T_pvar_session_free(&session));
    T_OK(MPI_T_finalize());
    T_ERR(MPI_T_pvar_get_num(&num), MPI_T_ERR_NOT_INITIALIZED);
    free(buf);
    MPI_Finalize();
    if (rank == 0) printf("mpit_pvars OK\n");
    return 0;
}
