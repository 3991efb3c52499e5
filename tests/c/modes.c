/* The four send modes, blocking and nonblocking, small and large:
 * standard, buffered (Buffer_attach/detach), synchronous (completes only
 * once the receive has matched), ready. */
#include "check.h"

static void fill(char *b, int n, int seed) { for (int i = 0; i < n; i++) b[i] = (char)(i * 31 + seed); }
static int same(const char *b, int n, int seed) { for (int i = 0; i < n; i++) if (b[i] != (char)(i * 31 + seed)) return 0; return 1; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int sizes[] = {4, 4000, 100000, 3000000};
    char *s = malloc(3000000), *r = malloc(3000000);
    MPI_Status st;
    int peer = rank ^ 1;
    int active = peer < size;

    /* Buffered: attach enough for two messages of every size. */
    int bufsize = 2 * (3000000 + 4000 + 100000 + 4 + 4 * MPI_BSEND_OVERHEAD);
    char *bbuf = malloc(bufsize);
    CHECK_RC(MPI_Buffer_attach(bbuf, bufsize));

    for (int k = 0; k < 4 && active; k++) {
        int n = sizes[k];
        for (int mode = 0; mode < 4; mode++) {
            int tag = 10 * k + mode;
            if (rank < peer) {
                fill(s, n, tag);
                if (mode == 3) {
                    /* Ready mode: the receiver posted before the barrier-like handshake. */
                    int go;
                    MPI_Recv(&go, 1, MPI_INT, peer, 99, MPI_COMM_WORLD, &st);
                    CHECK_RC(MPI_Rsend(s, n, MPI_CHAR, peer, tag, MPI_COMM_WORLD));
                } else if (mode == 0) {
                    CHECK_RC(MPI_Send(s, n, MPI_CHAR, peer, tag, MPI_COMM_WORLD));
                } else if (mode == 1) {
                    CHECK_RC(MPI_Bsend(s, n, MPI_CHAR, peer, tag, MPI_COMM_WORLD));
                    memset(s, 0, n); /* buffered: our buffer is free at once */
                } else {
                    CHECK_RC(MPI_Ssend(s, n, MPI_CHAR, peer, tag, MPI_COMM_WORLD));
                }
            } else {
                MPI_Request q;
                CHECK_RC(MPI_Irecv(r, n, MPI_CHAR, peer, tag, MPI_COMM_WORLD, &q));
                if (mode == 3) { int go = 1; MPI_Send(&go, 1, MPI_INT, peer, 99, MPI_COMM_WORLD); }
                CHECK_RC(MPI_Wait(&q, &st));
                CHECK(same(r, n, tag), "mode %d size %d: data differs", mode, n);
                int cnt;
                MPI_Get_count(&st, MPI_CHAR, &cnt);
                CHECK(cnt == n, "mode %d: count %d != %d", mode, cnt, n);
            }
        }
        /* Nonblocking variants of the same. */
        for (int mode = 0; mode < 4; mode++) {
            int tag = 100 + 10 * k + mode;
            if (rank < peer) {
                MPI_Request q;
                fill(s, n, tag);
                if (mode == 3) {
                    int go;
                    MPI_Recv(&go, 1, MPI_INT, peer, 99, MPI_COMM_WORLD, &st);
                    CHECK_RC(MPI_Irsend(s, n, MPI_CHAR, peer, tag, MPI_COMM_WORLD, &q));
                } else if (mode == 0) CHECK_RC(MPI_Isend(s, n, MPI_CHAR, peer, tag, MPI_COMM_WORLD, &q));
                else if (mode == 1) CHECK_RC(MPI_Ibsend(s, n, MPI_CHAR, peer, tag, MPI_COMM_WORLD, &q));
                else CHECK_RC(MPI_Issend(s, n, MPI_CHAR, peer, tag, MPI_COMM_WORLD, &q));
                CHECK_RC(MPI_Wait(&q, &st));
            } else {
                MPI_Request q;
                CHECK_RC(MPI_Irecv(r, n, MPI_CHAR, peer, tag, MPI_COMM_WORLD, &q));
                if (mode == 3) { int go = 1; MPI_Send(&go, 1, MPI_INT, peer, 99, MPI_COMM_WORLD); }
                CHECK_RC(MPI_Wait(&q, &st));
                CHECK(same(r, n, tag), "nonblocking mode %d size %d: data differs", mode, n);
            }
        }
    }

    /* Synchronous semantics: an Issend of a small message is not complete
     * before the receiver posts its receive; a standard Isend is. */
    if (active) {
        int v = 5, flag = 0, got;
        MPI_Request q;
        if (rank < peer) {
            CHECK_RC(MPI_Issend(&v, 1, MPI_INT, peer, 500, MPI_COMM_WORLD, &q));
            for (int i = 0; i < 200; i++) { MPI_Test(&q, &flag, &st); CHECK(!flag, "Issend completed before the receive was posted"); }
            int go = 1;
            MPI_Send(&go, 1, MPI_INT, peer, 501, MPI_COMM_WORLD);
            CHECK_RC(MPI_Wait(&q, &st));
        } else {
            int go;
            MPI_Recv(&go, 1, MPI_INT, peer, 501, MPI_COMM_WORLD, &st);
            MPI_Recv(&got, 1, MPI_INT, peer, 500, MPI_COMM_WORLD, &st);
            CHECK(got == 5, "issend value %d", got);
        }
    }

    /* Detach waits for buffered messages and returns the buffer. */
    void *back; int backsize;
    CHECK_RC(MPI_Buffer_detach(&back, &backsize));
    CHECK(back == bbuf && backsize == bufsize, "detach returned %p/%d", back, backsize);

    /* Bsend without space fails with MPI_ERR_BUFFER (errors returned). */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Bsend(s, 10, MPI_CHAR, rank, 0, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_BUFFER, "bsend without buffer gave %d", rc);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("modes OK on %d ranks\n", size);
    free(bbuf); free(s); free(r);
    MPI_Finalize();
    return 0;
}
