/* Single-completion calls leave status.MPI_ERROR as the program set it
 * (MPI 3.1 section 3.2.5: only the calls of section 3.7.5 that complete
 * several requests may set it): Recv, Sendrecv, Sendrecv_replace, Probe,
 * Iprobe, Mprobe, Improbe, Mrecv, Wait, Test, Waitany, Testany,
 * Request_get_status and a file read, on success and on a truncation
 * error; Waitall that fails sets it (MPI_ERR_IN_STATUS). 2 ranks. */
#include "check.h"

#define KEPT(s, what) CHECK((s).MPI_ERROR == STATUS_MARK, "%s changed MPI_ERROR to %d", what, (s).MPI_ERROR)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, x = 7, y = 0, big[4] = {1, 2, 3, 4};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "needs 2 ranks, has %d", size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int peer = 1 - rank;
    MPI_Status s;
    MPI_Request r;
    MPI_Message m;
    int flag, idx;

    /* Recv, Sendrecv, Sendrecv_replace. */
    if (rank == 0) MPI_Send(&x, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
    else {
        s = marked_status();
        CHECK_RC(MPI_Recv(&y, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &s));
        KEPT(s, "MPI_Recv");
        CHECK(y == 7 && s.MPI_SOURCE == 0 && s.MPI_TAG == 1, "MPI_Recv got %d from %d tag %d", y, s.MPI_SOURCE, s.MPI_TAG);
    }
    s = marked_status();
    CHECK_RC(MPI_Sendrecv(&rank, 1, MPI_INT, peer, 2, &y, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, &s));
    KEPT(s, "MPI_Sendrecv");
    CHECK(y == peer, "MPI_Sendrecv got %d", y);
    y = rank;
    s = marked_status();
    CHECK_RC(MPI_Sendrecv_replace(&y, 1, MPI_INT, peer, 3, peer, 3, MPI_COMM_WORLD, &s));
    KEPT(s, "MPI_Sendrecv_replace");

    /* Probe, Iprobe, Mprobe + Mrecv, Improbe + Mrecv. */
    if (rank == 0) {
        for (int t = 4; t < 7; t++) MPI_Send(&x, 1, MPI_INT, 1, t, MPI_COMM_WORLD);
    } else {
        s = marked_status();
        CHECK_RC(MPI_Probe(0, 4, MPI_COMM_WORLD, &s));
        KEPT(s, "MPI_Probe");
        flag = 0;
        while (!flag) {
            s = marked_status();
            CHECK_RC(MPI_Iprobe(0, 4, MPI_COMM_WORLD, &flag, &s));
            KEPT(s, "MPI_Iprobe");
        }
        MPI_Recv(&y, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        s = marked_status();
        CHECK_RC(MPI_Mprobe(0, 5, MPI_COMM_WORLD, &m, &s));
        KEPT(s, "MPI_Mprobe");
        s = marked_status();
        CHECK_RC(MPI_Mrecv(&y, 1, MPI_INT, &m, &s));
        KEPT(s, "MPI_Mrecv");
        flag = 0;
        while (!flag) {
            s = marked_status();
            CHECK_RC(MPI_Improbe(0, 6, MPI_COMM_WORLD, &flag, &m, &s));
            KEPT(s, "MPI_Improbe");
        }
        CHECK_RC(MPI_Mrecv(&y, 1, MPI_INT, &m, MPI_STATUS_IGNORE));
    }

    /* Wait, Test, Waitany, Testany, Request_get_status. */
    if (rank == 0) {
        for (int t = 10; t < 14; t++) MPI_Send(&x, 1, MPI_INT, 1, t, MPI_COMM_WORLD);
        MPI_Send(big, 4, MPI_INT, 1, 14, MPI_COMM_WORLD);
    } else {
        MPI_Irecv(&y, 1, MPI_INT, 0, 10, MPI_COMM_WORLD, &r);
        s = marked_status();
        CHECK_RC(MPI_Wait(&r, &s));
        KEPT(s, "MPI_Wait");
        MPI_Irecv(&y, 1, MPI_INT, 0, 11, MPI_COMM_WORLD, &r);
        for (flag = 0; !flag;) {
            s = marked_status();
            CHECK_RC(MPI_Request_get_status(r, &flag, &s));
            KEPT(s, "MPI_Request_get_status");
        }
        for (flag = 0; !flag;) {
            s = marked_status();
            CHECK_RC(MPI_Test(&r, &flag, &s));
            KEPT(s, "MPI_Test");
        }
        MPI_Irecv(&y, 1, MPI_INT, 0, 12, MPI_COMM_WORLD, &r);
        s = marked_status();
        CHECK_RC(MPI_Waitany(1, &r, &idx, &s));
        KEPT(s, "MPI_Waitany");
        MPI_Irecv(&y, 1, MPI_INT, 0, 13, MPI_COMM_WORLD, &r);
        for (flag = 0; !flag;) {
            s = marked_status();
            CHECK_RC(MPI_Testany(1, &r, &idx, &flag, &s));
            KEPT(s, "MPI_Testany");
        }
        /* A truncation: the call returns the error, the field stays. */
        s = marked_status();
        int rc = MPI_Recv(&y, 1, MPI_INT, 0, 14, MPI_COMM_WORLD, &s);
        CHECK(rc != MPI_SUCCESS, "a 4-int message into 1 int succeeded");
        KEPT(s, "a failing MPI_Recv");
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Waitall with a failing request: MPI_ERR_IN_STATUS, fields set. */
    if (rank == 0) {
        MPI_Send(&x, 1, MPI_INT, 1, 20, MPI_COMM_WORLD);
        MPI_Send(big, 4, MPI_INT, 1, 21, MPI_COMM_WORLD);
    } else {
        MPI_Request rr[2];
        MPI_Status ss[2] = {marked_status(), marked_status()};
        int a = 0, b = 0;
        MPI_Irecv(&a, 1, MPI_INT, 0, 20, MPI_COMM_WORLD, &rr[0]);
        MPI_Irecv(&b, 1, MPI_INT, 0, 21, MPI_COMM_WORLD, &rr[1]);
        int rc = MPI_Waitall(2, rr, ss);
        CHECK(rc == MPI_ERR_IN_STATUS, "MPI_Waitall returned %d, not MPI_ERR_IN_STATUS", rc);
        int cls;
        MPI_Error_class(ss[1].MPI_ERROR, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "MPI_Waitall: the truncated receive's MPI_ERROR has class %d", cls);
        CHECK(ss[0].MPI_ERROR == MPI_SUCCESS || ss[0].MPI_ERROR == STATUS_MARK,
              "MPI_Waitall: the good receive's MPI_ERROR is %d", ss[0].MPI_ERROR);
    }

    /* A file read (MPI_COMM_SELF files, one per rank). */
    char path[64];
    snprintf(path, sizeof path, "status_error_field.%d.tmp", rank);
    MPI_File fh;
    CHECK_RC(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    s = marked_status();
    CHECK_RC(MPI_File_write_at(fh, 0, big, 4, MPI_INT, &s));
    KEPT(s, "MPI_File_write_at");
    int back[4] = {0};
    s = marked_status();
    CHECK_RC(MPI_File_read_at(fh, 0, back, 4, MPI_INT, &s));
    KEPT(s, "MPI_File_read_at");
    CHECK(back[3] == 4, "MPI_File_read_at read %d", back[3]);
    MPI_File_close(&fh);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("status_error_field OK\n");
    MPI_Finalize();
    return 0;
}
