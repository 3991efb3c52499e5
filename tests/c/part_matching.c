/* Partitioned communication matches in the order of the initialization
 * calls (MPI 4.0 4.2), not of the starts or of the rounds' completion, and
 * its traffic is its own: a plain receive (even with MPI_ANY_TAG) never
 * takes a partitioned message. Pairs of ranks (2k, 2k+1) talk; an odd last
 * rank only takes part in the barriers.
 *
 * 1. Three channels with one tag: the sender starts and readies them in
 *    the order 2, 0, 1; the receiver starts in 0, 1, 2; each buffer must
 *    get the data of the channel initialized at its place, with the user's
 *    tag in the status.
 * 2. Three channels with tags 2, 1, 0 initialized in reverse on the sender.
 * 3. A receive started (and waited for) before its sender initialized:
 *    the sender first waits for a plain message the receiver sends after
 *    MPI_Start, so the hello cannot have arrived at the start.
 * 4. A partitioned send readied, then a plain MPI_Send of 0 elements of
 *    MPI_DATATYPE_NULL with the same tag: the receiver's MPI_Recv with
 *    MPI_ANY_TAG takes the plain message (MPICH accepts the null datatype
 *    for count 0); the partitioned receive gets its data.
 * 5. Two rounds of one channel with partitions made ready one by one and in
 *    reverse, MPI_Parrived polled until all arrived. */
#include "check.h"

#define PARTS 4
#define COUNT 16
#define N (PARTS * COUNT)

static int bufs[3][N];

static void fill(int *b, int v) {
    for (int i = 0; i < N; i++) b[i] = v;
}

static void expect(int *b, int v, const char *what) {
    for (int i = 0; i < N; i++) CHECK(b[i] == v, "%s: element %d is %d, expected %d", what, i, b[i], v);
}

static void same_tag(int rank, int peer, int sender) {
    MPI_Request r[3];
    MPI_Status st[3];
    if (sender) {
        for (int k = 0; k < 3; k++)
            CHECK_RC(MPI_Psend_init(bufs[k], PARTS, COUNT, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &r[k]));
        int order[3] = {2, 0, 1};
        for (int j = 0; j < 3; j++) {
            int k = order[j];
            CHECK_RC(MPI_Start(&r[k]));
            fill(bufs[k], 100 + k);
            CHECK_RC(MPI_Pready_range(0, PARTS - 1, r[k]));
        }
        CHECK_RC(MPI_Waitall(3, r, MPI_STATUSES_IGNORE));
    } else {
        for (int k = 0; k < 3; k++) {
            fill(bufs[k], -1);
            CHECK_RC(MPI_Precv_init(bufs[k], PARTS, COUNT, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &r[k]));
        }
        for (int k = 0; k < 3; k++) CHECK_RC(MPI_Start(&r[k]));
        CHECK_RC(MPI_Waitall(3, r, st));
        for (int k = 0; k < 3; k++) {
            expect(bufs[k], 100 + k, "same tag");
            CHECK(st[k].MPI_SOURCE == peer && st[k].MPI_TAG == 5, "status %d: source %d tag %d", k,
                  st[k].MPI_SOURCE, st[k].MPI_TAG);
        }
    }
    for (int k = 0; k < 3; k++) CHECK_RC(MPI_Request_free(&r[k]));
    (void)rank;
}

static void tags_reversed(int peer, int sender) {
    MPI_Request r[3];
    MPI_Status st[3];
    if (sender) {
        for (int k = 2; k >= 0; k--)
            CHECK_RC(MPI_Psend_init(bufs[k], PARTS, COUNT, MPI_INT, peer, k, MPI_COMM_WORLD, MPI_INFO_NULL, &r[k]));
        for (int k = 0; k < 3; k++) {
            CHECK_RC(MPI_Start(&r[k]));
            fill(bufs[k], 200 + k);
            CHECK_RC(MPI_Pready_range(0, PARTS - 1, r[k]));
        }
        CHECK_RC(MPI_Waitall(3, r, MPI_STATUSES_IGNORE));
    } else {
        for (int k = 0; k < 3; k++) {
            fill(bufs[k], -1);
            CHECK_RC(MPI_Precv_init(bufs[k], PARTS, COUNT, MPI_INT, peer, k, MPI_COMM_WORLD, MPI_INFO_NULL, &r[k]));
        }
        CHECK_RC(MPI_Startall(3, r));
        CHECK_RC(MPI_Waitall(3, r, st));
        for (int k = 0; k < 3; k++) {
            expect(bufs[k], 200 + k, "tags");
            CHECK(st[k].MPI_TAG == k, "status %d: tag %d", k, st[k].MPI_TAG);
        }
    }
    for (int k = 0; k < 3; k++) CHECK_RC(MPI_Request_free(&r[k]));
}

static void started_before_hello(int peer, int sender) {
    MPI_Request r;
    int go = 0;
    if (sender) {
        CHECK_RC(MPI_Recv(&go, 1, MPI_INT, peer, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(go == 1, "go is %d", go);
        CHECK_RC(MPI_Psend_init(bufs[0], PARTS, COUNT, MPI_INT, peer, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
        CHECK_RC(MPI_Start(&r));
        fill(bufs[0], 300);
        for (int p = 0; p < PARTS; p++) CHECK_RC(MPI_Pready(p, r));
        CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else {
        fill(bufs[0], -1);
        CHECK_RC(MPI_Precv_init(bufs[0], PARTS, COUNT, MPI_INT, peer, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
        CHECK_RC(MPI_Start(&r));
        go = 1;
        CHECK_RC(MPI_Send(&go, 1, MPI_INT, peer, 9, MPI_COMM_WORLD));
        MPI_Status st;
        CHECK_RC(MPI_Wait(&r, &st));
        expect(bufs[0], 300, "started before the hello");
        CHECK(st.MPI_TAG == 9 && st.MPI_SOURCE == peer, "status: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
    }
    CHECK_RC(MPI_Request_free(&r));
}

static void plain_recv_any_tag(int peer, int sender) {
    MPI_Request r;
    if (sender) {
        CHECK_RC(MPI_Psend_init(bufs[0], 1, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
        CHECK_RC(MPI_Start(&r));
        bufs[0][0] = 400;
        CHECK_RC(MPI_Pready(0, r));
        CHECK_RC(MPI_Send(NULL, 0, MPI_DATATYPE_NULL, peer, 0, MPI_COMM_WORLD));
        CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else {
        bufs[0][0] = -1;
        CHECK_RC(MPI_Precv_init(bufs[0], 1, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
        /* Give the partitioned data every chance to arrive first. */
        int flag = 0;
        for (int i = 0; i < 200 && !flag; i++) CHECK_RC(MPI_Iprobe(peer, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        MPI_Status st;
        int got = 12345;
        CHECK_RC(MPI_Recv(&got, 1, MPI_INT, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        int n = -1;
        CHECK_RC(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(n == 0 && got == 12345, "the plain receive took %d ints (%d): a partitioned message", n, got);
        CHECK_RC(MPI_Start(&r));
        CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK(bufs[0][0] == 400, "partitioned data %d", bufs[0][0]);
    }
    CHECK_RC(MPI_Request_free(&r));
}

static void rounds_and_parrived(int peer, int sender) {
    MPI_Request r;
    if (sender) {
        CHECK_RC(MPI_Psend_init(bufs[1], PARTS, COUNT, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    } else {
        CHECK_RC(MPI_Precv_init(bufs[1], PARTS, COUNT, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    }
    for (int round = 0; round < 2; round++) {
        CHECK_RC(MPI_Start(&r));
        if (sender) {
            fill(bufs[1], 500 + round);
            for (int p = PARTS - 1; p >= 0; p--) CHECK_RC(MPI_Pready(p, r));
        } else {
            int all = 0;
            while (!all) {
                all = 1;
                for (int p = 0; p < PARTS; p++) {
                    int f = 0;
                    CHECK_RC(MPI_Parrived(r, p, &f));
                    all &= f;
                }
            }
        }
        CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
        if (!sender) expect(bufs[1], 500 + round, "rounds");
    }
    CHECK_RC(MPI_Request_free(&r));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int paired = rank < size - size % 2;
    int peer = rank ^ 1, sender = rank % 2 == 0;
    if (paired) {
        same_tag(rank, peer, sender);
        tags_reversed(peer, sender);
        started_before_hello(peer, sender);
        plain_recv_any_tag(peer, sender);
        rounds_and_parrived(peer, sender);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("part_matching OK\n");
    MPI_Finalize();
    return 0;
}
