/* Small nonblocking collectives (Ibarrier, Ibcast, Ireduce, Iallreduce,
 * Iscan, Iexscan, Iallgather(v), Ialltoall, Igather, Iscatter,
 * Ireduce_scatter_block: done in
 * shared memory once a communicator has a segment): 120 outstanding at
 * once on one communicator, mixed with blocking ones, completed in reverse order; a root that starts 40
 * broadcasts before the others have started any (they wait for a message it
 * sends afterwards: must not deadlock); a call that fails on every rank
 * (NULL request) or on one rank only (bad buffer) keeps the ranks in step
 * for the next collectives; persistent ones started before and after the
 * communicator has its segment; a communicator freed while a nonblocking
 * call on it runs. Every value is checked. */
#include "check.h"

#define N 120
#define AHEAD 40

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    int tri = size * (size - 1) / 2, one = 1, all = 0;
    /* A blocking call first makes the communicator's segment. */
    CHECK_RC(MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, c));
    CHECK(all == size, "allreduce: %d", all);

    /* ---- many outstanding, mixed kinds, blocking ones in between -------- */
    static MPI_Request q[N];
    static int in[N], out[N][3], *many[N];
    for (int k = 0; k < N; k++) {
        in[k] = rank + k;
        out[k][0] = out[k][1] = out[k][2] = -1;
        int root = k % size;
        many[k] = malloc(sizeof(int) * 2 * size);
        for (int i = 0; i < 2 * size; i++) many[k][i] = -1;
        switch (k % 12) {
        case 0: CHECK_RC(MPI_Ibarrier(c, &q[k])); break;
        case 1:
            if (rank == root) out[k][0] = k, out[k][1] = 2 * k, out[k][2] = 3 * k;
            CHECK_RC(MPI_Ibcast(out[k], 3, MPI_INT, root, c, &q[k]));
            break;
        case 2: CHECK_RC(MPI_Iallreduce(&in[k], out[k], 1, MPI_INT, MPI_SUM, c, &q[k])); break;
        case 3: CHECK_RC(MPI_Ireduce(&in[k], out[k], 1, MPI_INT, MPI_MAX, root, c, &q[k])); break;
        case 4: CHECK_RC(MPI_Iscan(&in[k], out[k], 1, MPI_INT, MPI_SUM, c, &q[k])); break;
        case 5: CHECK_RC(MPI_Iexscan(&in[k], out[k], 1, MPI_INT, MPI_SUM, c, &q[k])); break;
        case 6: CHECK_RC(MPI_Iallgather(&in[k], 1, MPI_INT, many[k], 1, MPI_INT, c, &q[k])); break;
        case 7: /* two values to each rank: 100 * rank + 10 * to + k % 10 */
            {
                static int send[N][32];
                for (int i = 0; i < size; i++) send[k][2 * i] = send[k][2 * i + 1] = 100 * rank + 10 * i + k % 10;
                CHECK_RC(MPI_Ialltoall(send[k], 2, MPI_INT, many[k], 2, MPI_INT, c, &q[k]));
            }
            break;
        case 8: CHECK_RC(MPI_Igather(&in[k], 1, MPI_INT, many[k], 1, MPI_INT, root, c, &q[k])); break;
        case 9: {
            static int src[N][16];
            for (int i = 0; i < size; i++) src[k][i] = 7 * i + k;
            CHECK_RC(MPI_Iscatter(src[k], 1, MPI_INT, out[k], 1, MPI_INT, root, c, &q[k]));
            break;
        }
        case 10: { /* rank i gives i % 2 + 1 values */
            static int cnt[16], dsp[16];
            int at = 0;
            for (int i = 0; i < size; i++) cnt[i] = i % 2 + 1, dsp[i] = at, at += 2;
            static int two[N][2];
            two[k][0] = in[k], two[k][1] = -in[k];
            CHECK_RC(MPI_Iallgatherv(two[k], rank % 2 + 1, MPI_INT, many[k], cnt, dsp, MPI_INT, c, &q[k]));
            break;
        }
        case 11: /* two of the 2 * size sums to each rank */
            for (int i = 0; i < 2 * size; i++) many[k][i] = rank + k + i;
            CHECK_RC(MPI_Ireduce_scatter_block(many[k], out[k], 2, MPI_INT, MPI_SUM, c, &q[k]));
            break;
        }
        if (k % 10 == 9) {
            int b = rank == k % size ? 1000 + k : -1, s = -1;
            CHECK_RC(MPI_Bcast(&b, 1, MPI_INT, k % size, c));
            CHECK(b == 1000 + k, "blocking bcast after %d: %d", k, b);
            CHECK_RC(MPI_Allreduce(&in[k], &s, 1, MPI_INT, MPI_SUM, c));
            CHECK(s == tri + size * k, "blocking allreduce after %d: %d", k, s);
        }
    }
    for (int k = N - 1; k >= 0; k--) CHECK_RC(MPI_Wait(&q[k], MPI_STATUS_IGNORE));
    for (int k = 0; k < N; k++) {
        int root = k % size, got = out[k][0];
        switch (k % 12) {
        case 1:
            CHECK(got == k && out[k][1] == 2 * k && out[k][2] == 3 * k, "ibcast %d: %d %d %d", k, got, out[k][1], out[k][2]);
            break;
        case 2: CHECK(got == tri + size * k, "iallreduce %d: %d", k, got); break;
        case 3:
            if (rank == root) CHECK(got == size - 1 + k, "ireduce %d: %d", k, got);
            else CHECK(got == -1, "ireduce %d wrote a non-root: %d", k, got);
            break;
        case 4: CHECK(got == rank * (rank + 1) / 2 + (rank + 1) * k, "iscan %d: %d", k, got); break;
        case 5:
            if (rank > 0) CHECK(got == rank * (rank - 1) / 2 + rank * k, "iexscan %d: %d", k, got);
            else CHECK(got == -1, "iexscan %d wrote rank 0: %d", k, got);
            break;
        case 6:
            for (int i = 0; i < size; i++) CHECK(many[k][i] == i + k, "iallgather %d.%d: %d", k, i, many[k][i]);
            break;
        case 7:
            for (int i = 0; i < size; i++)
                CHECK(many[k][2 * i] == 100 * i + 10 * rank + k % 10 && many[k][2 * i + 1] == many[k][2 * i], "ialltoall %d.%d: %d %d", k, i,
                      many[k][2 * i], many[k][2 * i + 1]);
            break;
        case 8:
            for (int i = 0; i < size; i++) CHECK(many[k][i] == (rank == root ? i + k : -1), "igather %d.%d: %d", k, i, many[k][i]);
            break;
        case 9: CHECK(got == 7 * rank + k, "iscatter %d: %d", k, got); break;
        case 10:
            for (int i = 0; i < size; i++) {
                CHECK(many[k][2 * i] == i + k, "iallgatherv %d.%d: %d", k, i, many[k][2 * i]);
                CHECK(many[k][2 * i + 1] == (i % 2 ? -(i + k) : -1), "iallgatherv %d.%d second: %d", k, i, many[k][2 * i + 1]);
            }
            break;
        case 11:
            for (int j = 0; j < 2; j++)
                CHECK(out[k][j] == tri + size * (k + 2 * rank + j), "ireduce_scatter_block %d.%d: %d", k, j, out[k][j]);
            CHECK(out[k][2] == -1, "ireduce_scatter_block %d wrote past its block", k);
            break;
        }
        free(many[k]);
    }

    /* ---- a root far ahead of the others ------------------------------------ */
    static int v[AHEAD];
    MPI_Request aq[AHEAD];
    if (rank == 0) {
        for (int k = 0; k < AHEAD; k++) {
            v[k] = 500 + k;
            CHECK_RC(MPI_Ibcast(&v[k], 1, MPI_INT, 0, c, &aq[k]));
        }
        for (int r = 1; r < size; r++) CHECK_RC(MPI_Send(&one, 1, MPI_INT, r, 3, MPI_COMM_WORLD));
    } else {
        int x;
        CHECK_RC(MPI_Recv(&x, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int k = 0; k < AHEAD; k++) {
            v[k] = -1;
            CHECK_RC(MPI_Ibcast(&v[k], 1, MPI_INT, 0, c, &aq[k]));
        }
    }
    CHECK_RC(MPI_Waitall(AHEAD, aq, MPI_STATUSES_IGNORE));
    for (int k = 0; k < AHEAD; k++) CHECK(v[k] == 500 + k, "ibcast ahead %d: %d", k, v[k]);

    /* ---- failing calls keep the ranks in step --------------------------------- */
    int rc = MPI_Iallreduce(&one, &all, 1, MPI_INT, MPI_SUM, c, NULL);
    CHECK(error_class(rc) == MPI_ERR_ARG, "NULL request: class %d", error_class(rc));
    int bc[2] = {rank == 0 ? 41 : -1, rank == 0 ? 42 : -1};
    MPI_Request r1 = MPI_REQUEST_NULL;
    rc = MPI_Ibcast(size > 1 && rank == 1 ? NULL : bc, 2, MPI_INT, 0, c, &r1);
    if (size > 1 && rank == 1) {
        CHECK(error_class(rc) == MPI_ERR_BUFFER, "NULL buffer: class %d", error_class(rc));
    } else {
        CHECK_RC(rc);
        CHECK_RC(MPI_Wait(&r1, MPI_STATUS_IGNORE));
        CHECK(bc[0] == 41 && bc[1] == 42, "ibcast beside a failed rank: %d %d", bc[0], bc[1]);
    }
    for (int k = 0; k < 3; k++) {
        int s = -1;
        MPI_Request r2;
        CHECK_RC(MPI_Iallreduce(&rank, &s, 1, MPI_INT, MPI_SUM, c, &r2));
        CHECK_RC(MPI_Wait(&r2, MPI_STATUS_IGNORE));
        CHECK(s == tri, "iallreduce after failed calls: %d", s);
        CHECK_RC(MPI_Allreduce(&one, &s, 1, MPI_INT, MPI_SUM, c));
        CHECK(s == size, "allreduce after failed calls: %d", s);
    }

    /* ---- persistent: started before and after the communicator gets its
     * segment (messages, then shared memory), mixed with nonblocking ones -- */
    MPI_Comm c2;
    MPI_Comm_dup(MPI_COMM_WORLD, &c2);
    int pin = 0, pout = -1, pb = -1, pg[16], ps = -1, psrc[16];
    MPI_Request pr[5];
    CHECK_RC(MPI_Allreduce_init(&pin, &pout, 1, MPI_INT, MPI_SUM, c2, MPI_INFO_NULL, &pr[0]));
    CHECK_RC(MPI_Bcast_init(&pb, 1, MPI_INT, size - 1, c2, MPI_INFO_NULL, &pr[1]));
    CHECK_RC(MPI_Allgather_init(&pin, 1, MPI_INT, pg, 1, MPI_INT, c2, MPI_INFO_NULL, &pr[2]));
    CHECK_RC(MPI_Scatter_init(psrc, 1, MPI_INT, &ps, 1, MPI_INT, 0, c2, MPI_INFO_NULL, &pr[3]));
    CHECK_RC(MPI_Barrier_init(c2, MPI_INFO_NULL, &pr[4]));
    for (int it = 0; it < 6; it++) {
        if (it == 3) { /* a blocking call makes the segment */
            int x = -1;
            CHECK_RC(MPI_Allreduce(&one, &x, 1, MPI_INT, MPI_SUM, c2));
            CHECK(x == size, "allreduce on the second communicator: %d", x);
        }
        pin = rank * (it + 1);
        if (rank == size - 1) pb = 300 + it;
        for (int i = 0; i < size; i++) psrc[i] = 10 * i + it, pg[i] = -1;
        MPI_Request nb;
        int nbv = -1;
        CHECK_RC(MPI_Startall(5, pr));
        CHECK_RC(MPI_Iallreduce(&one, &nbv, 1, MPI_INT, MPI_SUM, c2, &nb));
        CHECK_RC(MPI_Waitall(5, pr, MPI_STATUSES_IGNORE));
        CHECK_RC(MPI_Wait(&nb, MPI_STATUS_IGNORE));
        CHECK(pout == tri * (it + 1), "persistent allreduce %d: %d", it, pout);
        CHECK(pb == 300 + it, "persistent bcast %d: %d", it, pb);
        for (int i = 0; i < size; i++) CHECK(pg[i] == i * (it + 1), "persistent allgather %d.%d: %d", it, i, pg[i]);
        CHECK(ps == 10 * rank + it, "persistent scatter %d: %d", it, ps);
        CHECK(nbv == size, "iallreduce beside persistent ones %d: %d", it, nbv);
    }
    for (int i = 0; i < 5; i++) MPI_Request_free(&pr[i]);
    MPI_Comm_free(&c2);

    /* ---- a communicator freed while a nonblocking call on it runs: its
     * segment stays mapped until the call completes, though the next new
     * communicator's segment setup forgets the freed one -------------------- */
    if (size > 1) {
        MPI_Comm c3, c4;
        MPI_Comm_dup(MPI_COMM_WORLD, &c3);
        int x = -1, y = -1, bv = rank == 0 ? 4711 : -1;
        CHECK_RC(MPI_Allreduce(&one, &x, 1, MPI_INT, MPI_SUM, c3));
        MPI_Request bq;
        if (rank != 0) {
            CHECK_RC(MPI_Ibcast(&bv, 1, MPI_INT, 0, c3, &bq));
            CHECK_RC(MPI_Comm_free(&c3));
        }
        MPI_Comm_dup(MPI_COMM_WORLD, &c4);
        CHECK_RC(MPI_Allreduce(&one, &y, 1, MPI_INT, MPI_SUM, c4));
        CHECK(x == size && y == size, "allreduce around a freed communicator: %d %d", x, y);
        if (rank == 0) {
            CHECK_RC(MPI_Ibcast(&bv, 1, MPI_INT, 0, c3, &bq));
            CHECK_RC(MPI_Comm_free(&c3));
        }
        CHECK_RC(MPI_Wait(&bq, MPI_STATUS_IGNORE));
        CHECK(bv == 4711, "ibcast on a freed communicator: %d", bv);
        MPI_Comm_free(&c4);
    }

    MPI_Comm_free(&c);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("coll_nbflat OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
