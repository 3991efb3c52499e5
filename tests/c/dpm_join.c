/* MPI_Comm_join between two jobs: in "listen <dir>" every rank r listens on
 * a TCP port of 127.0.0.1 and writes its number to <dir>/join.r; in "dial
 * <dir>" rank r connects to it. Each pair joins, swaps checked values,
 * merges (the listener first) and reduces, disconnects; the socket still
 * works (and blocks) afterwards. */
#include "check.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    CHECK(argc >= 3, "usage: dpm_join listen|dial <dir>");
    int listening = strcmp(argv[1], "listen") == 0;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/join.%d", argv[2], rank);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = -1;
    if (listening) {
        int l = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(l >= 0, "socket");
        CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0, "bind");
        CHECK(listen(l, 1) == 0, "listen");
        socklen_t n = sizeof a;
        getsockname(l, (struct sockaddr *)&a, &n);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "w");
        CHECK(f != NULL, "cannot write %s", tmp);
        fprintf(f, "%d\n", ntohs(a.sin_port));
        fclose(f);
        CHECK(rename(tmp, path) == 0, "rename");
        fd = accept(l, NULL, NULL);
        CHECK(fd >= 0, "accept");
        close(l);
    } else {
        int port = 0;
        for (int i = 0; i < 6000 && port == 0; i++) {
            FILE *f = fopen(path, "r");
            if (f) {
                CHECK(fscanf(f, "%d", &port) == 1, "bad port file");
                fclose(f);
            } else {
                usleep(10000);
            }
        }
        CHECK(port > 0, "no port file after 60 s");
        a.sin_port = htons(port);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect");
    }

    MPI_Comm inter;
    CHECK_RC(MPI_Comm_join(fd, &inter));
    int flag, rsize, lsize;
    MPI_Comm_test_inter(inter, &flag);
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_size(inter, &lsize);
    CHECK(flag && rsize == 1 && lsize == 1, "inter %d sizes %d %d", flag, lsize, rsize);
    int mine = (listening ? 100 : 200) + rank, theirs = -1;
    CHECK_RC(MPI_Sendrecv(&mine, 1, MPI_INT, 0, 3, &theirs, 1, MPI_INT, 0, 3, inter, MPI_STATUS_IGNORE));
    CHECK(theirs == (listening ? 200 : 100) + rank, "got %d", theirs);

    MPI_Comm merged;
    CHECK_RC(MPI_Intercomm_merge(inter, listening ? 0 : 1, &merged));
    int mrank, msize, sum = 0;
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    CHECK(msize == 2 && mrank == (listening ? 0 : 1), "merged %d of %d", mrank, msize);
    CHECK_RC(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK(sum == 300 + 2 * rank, "sum %d", sum);
    CHECK_RC(MPI_Comm_free(&merged));
    CHECK_RC(MPI_Comm_disconnect(&inter));

    /* The user's socket is the user's again. */
    char c = listening ? 'L' : 'D', got = 0;
    CHECK(write(fd, &c, 1) == 1, "write after join");
    CHECK(read(fd, &got, 1) == 1, "read after join (still blocking?)");
    CHECK(got == (listening ? 'D' : 'L'), "got %c", got);
    close(fd);

    /* A descriptor that is no socket fails with an error, not a hang. */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_join(-1, &inter);
    CHECK(rc != MPI_SUCCESS, "join on -1 succeeded");

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("dpm_join OK %s\n", argv[1]);
    MPI_Finalize();
    return 0;
}
