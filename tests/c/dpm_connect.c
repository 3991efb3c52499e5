/* Two jobs meet (MPI 3.1 chapter 10): "accept <file>" opens a port and
 * writes its name to <file>; "connect <file>" reads it and connects (with
 * "names <service>" instead, the name goes through MPI_Publish_name /
 * MPI_Lookup_name). Then: checked messages between every pair of
 * processes, a large one, Bcast and Allreduce on the intercommunicator,
 * MPI_Intercomm_merge and an Allreduce on the merged communicator,
 * MPI_Comm_disconnect. */
#include "check.h"
#include <unistd.h>

#define BIG (1 << 20)

static void get_port(int accepting, int names, const char *where, char *port) {
    if (accepting) {
        CHECK_RC(MPI_Open_port(MPI_INFO_NULL, port));
        if (names) {
            CHECK_RC(MPI_Publish_name(where, MPI_INFO_NULL, port));
        } else {
            char tmp[4096];
            snprintf(tmp, sizeof tmp, "%s.tmp", where);
            FILE *f = fopen(tmp, "w");
            CHECK(f != NULL, "cannot write %s", tmp);
            fprintf(f, "%s\n", port);
            fclose(f);
            CHECK(rename(tmp, where) == 0, "rename");
        }
        return;
    }
    for (int i = 0; i < 6000; i++) {
        if (names) {
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
            int rc = MPI_Lookup_name(where, MPI_INFO_NULL, port);
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
            if (rc == MPI_SUCCESS) return;
            int cls;
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_NAME, "lookup failed with class %d", cls);
        } else {
            FILE *f = fopen(where, "r");
            if (f) {
                CHECK(fgets(port, MPI_MAX_PORT_NAME, f) != NULL, "empty port file");
                fclose(f);
                port[strcspn(port, "\n")] = 0;
                return;
            }
        }
        usleep(10000);
    }
    CHECK(0, "no port name after 60 s");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    CHECK(argc >= 3, "usage: dpm_connect accept|connect|names-accept|names-connect|badport <file, service or port>");
    int accepting = strstr(argv[1], "accept") != NULL;
    int names = strncmp(argv[1], "names", 5) == 0;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char port[MPI_MAX_PORT_NAME] = "";
    if (strcmp(argv[1], "badport") == 0) {
        /* Nobody listens there, and a name that is no port name. */
        MPI_Comm c;
        int cls;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int rc = MPI_Comm_connect(argv[2], MPI_INFO_NULL, 0, MPI_COMM_WORLD, &c);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_PORT, "connect to a dead port: class %d", cls);
        rc = MPI_Comm_connect("no port", MPI_INFO_NULL, 0, MPI_COMM_WORLD, &c);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_PORT, "connect to a bad name: class %d", cls);
        rc = MPI_Close_port("no port");
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_PORT, "close of no port: class %d", cls);
        if (rank == 0) printf("dpm_connect OK badport\n");
        MPI_Finalize();
        return 0;
    }
    if (rank == 0) get_port(accepting, names, argv[2], port);

    MPI_Comm inter;
    if (accepting)
        CHECK_RC(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
    else
        CHECK_RC(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
    int flag, rsize, lsize;
    CHECK_RC(MPI_Comm_test_inter(inter, &flag));
    CHECK(flag, "not an intercommunicator");
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_size(inter, &lsize);
    CHECK(lsize == size, "local size %d", lsize);
    int side = accepting ? 1 : 2, other = accepting ? 2 : 1;

    /* Every pair: i (here) sends 1000*side + 10*i + j to j (there). */
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * rsize);
    int *out = malloc(sizeof(int) * rsize);
    for (int j = 0; j < rsize; j++) {
        out[j] = 1000 * side + 10 * rank + j;
        CHECK_RC(MPI_Isend(&out[j], 1, MPI_INT, j, 7, inter, &reqs[j]));
    }
    for (int j = 0; j < rsize; j++) {
        int v = -1;
        MPI_Status s;
        CHECK_RC(MPI_Recv(&v, 1, MPI_INT, j, 7, inter, &s));
        CHECK(v == 1000 * other + 10 * j + rank, "from %d got %d", j, v);
        CHECK(s.MPI_SOURCE == j && s.MPI_TAG == 7, "status %d %d", s.MPI_SOURCE, s.MPI_TAG);
    }
    CHECK_RC(MPI_Waitall(rsize, reqs, MPI_STATUSES_IGNORE));

    /* A large message each way between the two rank 0s (rendezvous). */
    if (rank == 0) {
        int *a = malloc(sizeof(int) * BIG), *b = malloc(sizeof(int) * BIG);
        for (int i = 0; i < BIG; i++) a[i] = i * side;
        CHECK_RC(MPI_Sendrecv(a, BIG, MPI_INT, 0, 9, b, BIG, MPI_INT, 0, 9, inter, MPI_STATUS_IGNORE));
        for (int i = 0; i < BIG; i++) CHECK(b[i] == i * other, "big[%d] = %d", i, b[i]);
        free(a);
        free(b);
    }

    /* Bcast from the acceptors' rank 0. */
    int v = accepting ? 4242 : 0;
    int root = accepting ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    CHECK_RC(MPI_Bcast(&v, 1, MPI_INT, root, inter));
    if (!accepting) CHECK(v == 4242, "bcast got %d", v);

    /* Allreduce: each side gets the sum over the other group of rank+1. */
    int mine = rank + 1, sum = 0;
    CHECK_RC(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, inter));
    CHECK(sum == rsize * (rsize + 1) / 2, "inter allreduce %d", sum);

    /* Merge: the acceptors first. */
    MPI_Comm merged;
    CHECK_RC(MPI_Intercomm_merge(inter, accepting ? 0 : 1, &merged));
    int mrank, msize;
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    CHECK(msize == size + rsize, "merged size %d", msize);
    CHECK(mrank == (accepting ? rank : rsize + rank), "merged rank %d", mrank);
    int msum = 0;
    CHECK_RC(MPI_Allreduce(&mrank, &msum, 1, MPI_INT, MPI_SUM, merged));
    CHECK(msum == msize * (msize - 1) / 2, "merged allreduce %d", msum);
    CHECK_RC(MPI_Barrier(merged));
    CHECK_RC(MPI_Comm_free(&merged));

    /* Operations still pending are completed by the disconnect. */
    MPI_Request pend[2];
    int pin = -1, pout = 900 + side;
    if (rank == 0) {
        CHECK_RC(MPI_Irecv(&pin, 1, MPI_INT, 0, 11, inter, &pend[0]));
        CHECK_RC(MPI_Isend(&pout, 1, MPI_INT, 0, 11, inter, &pend[1]));
    }
    CHECK_RC(MPI_Comm_disconnect(&inter));
    CHECK(inter == MPI_COMM_NULL, "disconnect left the handle");
    if (rank == 0) {
        int flag2 = 0;
        CHECK_RC(MPI_Testall(2, pend, &flag2, MPI_STATUSES_IGNORE));
        CHECK(flag2, "requests not complete after disconnect");
        CHECK(pin == 900 + other, "pending message %d", pin);
    }
    if (accepting && rank == 0) {
        if (names) {
            CHECK_RC(MPI_Unpublish_name(argv[2], MPI_INFO_NULL, port));
            int rc, cls;
            char p2[MPI_MAX_PORT_NAME];
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
            rc = MPI_Unpublish_name(argv[2], MPI_INFO_NULL, port);
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_SERVICE, "second unpublish: class %d", cls);
            rc = MPI_Lookup_name(argv[2], MPI_INFO_NULL, p2);
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_NAME, "lookup after unpublish: class %d", cls);
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        }
        CHECK_RC(MPI_Close_port(port));
    }
    free(reqs);
    free(out);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("dpm_connect OK %s\n", argv[1]);
    MPI_Finalize();
    return 0;
}
