/* Collectives on an intercommunicator between the even and the odd ranks of
 * MPI_COMM_WORLD: every nonblocking form (all started at once, completed by
 * one Waitall), the v/w and reduce-scatter forms blocking, persistent
 * Allreduce/Bcast started several times, a non-commutative user op applied
 * in rank order, a derived datatype, and the errors of in-place and Scan.
 * Every received value is checked. Needs at least 2 ranks (at most 8 per
 * group: the reduce-scatter vectors have 12 elements). */
#include "check.h"

static int color, me, nlocal, nremote;
/* World rank of remote rank r. */
#define REMOTE(r) (2 * (r) + 1 - color)
#define RS_TOTAL 12

/* 2x2 integer matrix product, inout = in * inout (in comes from lower ranks),
 * on `*len` elements of a type of 4 ints. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++, a += 4, b += 4) {
        int c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                    a[2] * b[1] + a[3] * b[3]};
        memcpy(b, c, sizeof c);
    }
}

/* The matrix of world rank w: not commuting with the others. */
static void mat_of(int w, int *m) {
    m[0] = 1;
    m[1] = w + 1;
    m[2] = w % 3;
    m[3] = 1 + (w % 2);
}

/* Block of the reduce-scatter result at local rank i: (offset, count). */
static void rs_block(int n, int i, int *off, int *cnt) {
    int q = RS_TOTAL / n, r = RS_TOTAL % n;
    *off = i * q + (i < r ? i : r);
    *cnt = q + (i < r);
}

/* Checks this rank's block of the reduce-scatter (SUM of rank * 100 + j
 * over the other group) and that nothing was written after it. */
static void check_rs(const int *out, const char *what) {
    int off, cnt;
    rs_block(nlocal, me, &off, &cnt);
    for (int j = 0; j < cnt; j++) {
        int w = 0;
        for (int r = 0; r < nremote; r++) w += REMOTE(r) * 100 + off + j;
        CHECK(out[j] == w, "%s %d: %d want %d", what, j, out[j], w);
    }
    CHECK(out[cnt] == -1, "%s wrote past its block", what);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        printf("coll_inter OK on %d ranks (needs 2)\n", size);
        MPI_Finalize();
        return 0;
    }
    color = rank % 2;
    me = rank / 2;
    nlocal = color ? size / 2 : (size + 1) / 2;
    nremote = size - nlocal;
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
    CHECK_RC(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 9, &inter));
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    int lsize = -1, rsize = -1;
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);
    CHECK(lsize == nlocal && rsize == nremote, "sizes %d %d", lsize, rsize);

    /* ---- every nonblocking collective at once -------------------------- */
    MPI_Request rq[16];
    int nr = 0;
    CHECK_RC(MPI_Ibarrier(inter, &rq[nr++]));

    int bc[3] = {-1, -1, -1};
    if (!color && me == 0) bc[0] = 11, bc[1] = 22, bc[2] = 33;
    int root_even = color ? 0 : (me == 0 ? MPI_ROOT : MPI_PROC_NULL);
    int root_odd = color ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    CHECK_RC(MPI_Ibcast(bc, 3, MPI_INT, root_even, inter, &rq[nr++]));

    int red_in = rank, red_out = -1;
    CHECK_RC(MPI_Ireduce(&red_in, &red_out, 1, MPI_INT, MPI_MAX, root_odd, inter, &rq[nr++]));

    int sum = -1;
    CHECK_RC(MPI_Iallreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, inter, &rq[nr++]));

    int pair[2] = {rank, rank + 1000};
    int *ag = malloc(sizeof(int) * 2 * nremote);
    CHECK_RC(MPI_Iallgather(pair, 2, MPI_INT, ag, 2, MPI_INT, inter, &rq[nr++]));

    /* Allgatherv: remote rank r gives r + 1 values, stored with a gap. */
    int agv_n = 0, *agv_c = malloc(sizeof(int) * nremote), *agv_d = malloc(sizeof(int) * nremote);
    for (int r = 0; r < nremote; r++) {
        agv_c[r] = r + 1;
        agv_d[r] = agv_n;
        agv_n += r + 2;
    }
    int *agv = malloc(sizeof(int) * agv_n), agv_s[8];
    for (int i = 0; i < agv_n; i++) agv[i] = -1;
    for (int k = 0; k <= me; k++) agv_s[k] = rank * 10 + k;
    CHECK_RC(MPI_Iallgatherv(agv_s, me + 1, MPI_INT, agv, agv_c, agv_d, MPI_INT, inter, &rq[nr++]));

    /* Gather to the even leader. */
    int g_in = rank + 500, *g = malloc(sizeof(int) * nremote);
    CHECK_RC(MPI_Igather(&g_in, 1, MPI_INT, g, 1, MPI_INT, root_even, inter, &rq[nr++]));

    /* Gatherv to the odd leader: remote rank r gives r + 1 values. */
    int gv_n = 0, *gv_c = malloc(sizeof(int) * nremote), *gv_d = malloc(sizeof(int) * nremote);
    for (int r = nremote - 1; r >= 0; r--) { /* blocks in reverse order */
        gv_c[r] = r + 1;
        gv_d[r] = gv_n;
        gv_n += r + 1;
    }
    int *gv = malloc(sizeof(int) * (gv_n + 1)), gv_s[8];
    for (int k = 0; k <= me; k++) gv_s[k] = rank * 3 + k;
    CHECK_RC(MPI_Igatherv(gv_s, me + 1, MPI_INT, gv, gv_c, gv_d, MPI_INT, root_odd, inter, &rq[nr++]));

    /* Scatter from the odd leader to the evens: two values each. */
    int *sc = malloc(sizeof(int) * 2 * nremote), sc_out[2] = {-1, -1};
    for (int r = 0; r < nremote; r++) sc[2 * r] = r * 7, sc[2 * r + 1] = r * 7 + 1;
    CHECK_RC(MPI_Iscatter(sc, 2, MPI_INT, sc_out, 2, MPI_INT, root_odd, inter, &rq[nr++]));

    /* Scatterv from the even leader: remote rank r gets r + 1 values. */
    int *scv = malloc(sizeof(int) * agv_n), scv_out[8];
    for (int r = 0; r < nremote; r++)
        for (int k = 0; k <= r; k++) scv[agv_d[r] + k] = 100 * r + k;
    for (int k = 0; k < 8; k++) scv_out[k] = -1;
    CHECK_RC(MPI_Iscatterv(scv, agv_c, agv_d, MPI_INT, scv_out, me + 1, MPI_INT, root_even, inter, &rq[nr++]));

    /* Alltoall: one value per remote rank. */
    int *sa = malloc(sizeof(int) * nremote), *ra = malloc(sizeof(int) * nremote);
    for (int r = 0; r < nremote; r++) sa[r] = rank * 100 + r, ra[r] = -1;
    CHECK_RC(MPI_Ialltoall(sa, 1, MPI_INT, ra, 1, MPI_INT, inter, &rq[nr++]));

    /* Alltoallv: (me + r) % 3 + 1 values between local me and remote r. */
    int *av_sc = malloc(sizeof(int) * nremote), *av_sd = malloc(sizeof(int) * nremote);
    int *av_rc = malloc(sizeof(int) * nremote), *av_rd = malloc(sizeof(int) * nremote);
    int av_n = 0;
    for (int r = 0; r < nremote; r++) {
        av_sc[r] = av_rc[r] = (me + r) % 3 + 1;
        av_sd[r] = av_rd[r] = av_n;
        av_n += 3;
    }
    int *av_s = malloc(sizeof(int) * av_n), *av_r = malloc(sizeof(int) * av_n);
    for (int r = 0; r < nremote; r++)
        for (int k = 0; k < 3; k++) av_s[av_sd[r] + k] = rank * 1000 + r * 10 + k, av_r[av_rd[r] + k] = -1;
    CHECK_RC(MPI_Ialltoallv(av_s, av_sc, av_sd, MPI_INT, av_r, av_rc, av_rd, MPI_INT, inter, &rq[nr++]));

    /* Alltoallw: one int to each remote rank, received alternately as an
     * int and as a derived type holding one int, at byte displacements. */
    MPI_Datatype one;
    MPI_Type_contiguous(1, MPI_INT, &one);
    MPI_Type_commit(&one);
    int *aw_c = malloc(sizeof(int) * nremote), *aw_sd = malloc(sizeof(int) * nremote), *aw_rd = malloc(sizeof(int) * nremote);
    MPI_Datatype *aw_st = malloc(sizeof(MPI_Datatype) * nremote), *aw_rt = malloc(sizeof(MPI_Datatype) * nremote);
    int *aw_s = malloc(sizeof(int) * nremote), *aw_r = malloc(sizeof(int) * 2 * nremote);
    for (int r = 0; r < nremote; r++) {
        aw_c[r] = 1;
        aw_sd[r] = (int)sizeof(int) * r;
        aw_rd[r] = (int)sizeof(int) * 2 * r;
        aw_st[r] = MPI_INT;
        aw_rt[r] = r % 2 ? one : MPI_INT;
        aw_s[r] = rank * 50 + r;
        aw_r[2 * r] = aw_r[2 * r + 1] = -1;
    }
    CHECK_RC(MPI_Ialltoallw(aw_s, aw_c, aw_sd, aw_st, aw_r, aw_c, aw_rd, aw_rt, inter, &rq[nr++]));

    /* Reduce_scatter of 12 ints: the other group's sum scattered here. */
    int rs_c[8], rs_in[RS_TOTAL], rs_out[RS_TOTAL + 1];
    for (int i = 0; i < nlocal; i++) {
        int off;
        rs_block(nlocal, i, &off, &rs_c[i]);
    }
    for (int j = 0; j < RS_TOTAL; j++) rs_in[j] = rank * 100 + j, rs_out[j] = -1;
    rs_out[RS_TOTAL] = -1;
    CHECK_RC(MPI_Ireduce_scatter(rs_in, rs_out, rs_c, MPI_INT, MPI_SUM, inter, &rq[nr++]));

    /* Reduce_scatter_block: 12 / nlocal per rank. */
    int rsb_in[RS_TOTAL], rsb_out[RS_TOTAL], rsb_n = RS_TOTAL / nlocal;
    for (int j = 0; j < RS_TOTAL; j++) rsb_in[j] = rank + j, rsb_out[j] = -1;
    CHECK_RC(MPI_Ireduce_scatter_block(rsb_in, rsb_out, rsb_n, MPI_INT, MPI_MAX, inter, &rq[nr++]));

    CHECK_RC(MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE));

    /* ---- checks ----------------------------------------------------------- */
    if (color) CHECK(bc[0] == 11 && bc[1] == 22 && bc[2] == 33, "ibcast got %d %d %d", bc[0], bc[1], bc[2]);
    else if (me != 0) CHECK(bc[0] == -1, "ibcast changed a non-root: %d", bc[0]);
    if (color && me == 0) CHECK(red_out == 2 * (nremote - 1), "ireduce got %d", red_out);
    int want = 0;
    for (int r = 0; r < nremote; r++) want += REMOTE(r);
    CHECK(sum == want, "iallreduce got %d want %d", sum, want);
    for (int r = 0; r < nremote; r++)
        CHECK(ag[2 * r] == REMOTE(r) && ag[2 * r + 1] == REMOTE(r) + 1000, "iallgather %d: %d %d", r, ag[2 * r], ag[2 * r + 1]);
    for (int r = 0; r < nremote; r++) {
        for (int k = 0; k <= r; k++) CHECK(agv[agv_d[r] + k] == REMOTE(r) * 10 + k, "iallgatherv %d.%d: %d", r, k, agv[agv_d[r] + k]);
        CHECK(agv[agv_d[r] + r + 1] == -1, "iallgatherv wrote the gap after block %d", r);
    }
    if (!color && me == 0)
        for (int r = 0; r < nremote; r++) CHECK(g[r] == REMOTE(r) + 500, "igather %d: %d", r, g[r]);
    if (color && me == 0)
        for (int r = 0; r < nremote; r++)
            for (int k = 0; k <= r; k++) CHECK(gv[gv_d[r] + k] == REMOTE(r) * 3 + k, "igatherv %d.%d: %d", r, k, gv[gv_d[r] + k]);
    if (!color) CHECK(sc_out[0] == me * 7 && sc_out[1] == me * 7 + 1, "iscatter got %d %d", sc_out[0], sc_out[1]);
    if (color) {
        for (int k = 0; k <= me; k++) CHECK(scv_out[k] == 100 * me + k, "iscatterv %d: %d", k, scv_out[k]);
        CHECK(scv_out[me + 1] == -1, "iscatterv wrote past its block");
    }
    for (int r = 0; r < nremote; r++) CHECK(ra[r] == REMOTE(r) * 100 + me, "ialltoall %d: %d", r, ra[r]);
    for (int r = 0; r < nremote; r++)
        for (int k = 0; k < 3; k++) {
            int w = k < av_rc[r] ? REMOTE(r) * 1000 + me * 10 + k : -1;
            CHECK(av_r[av_rd[r] + k] == w, "ialltoallv %d.%d: %d want %d", r, k, av_r[av_rd[r] + k], w);
        }
    for (int r = 0; r < nremote; r++)
        CHECK(aw_r[2 * r] == REMOTE(r) * 50 + me && aw_r[2 * r + 1] == -1, "ialltoallw %d: %d %d", r, aw_r[2 * r], aw_r[2 * r + 1]);
    check_rs(rs_out, "ireduce_scatter");
    for (int j = 0; j < rsb_n; j++) {
        int w = REMOTE(nremote - 1) + me * rsb_n + j;
        CHECK(rsb_out[j] == w, "ireduce_scatter_block %d: %d want %d", j, rsb_out[j], w);
    }

    /* ---- blocking v/w and reduce-scatter forms ------------------------------ */
    for (int i = 0; i < agv_n; i++) agv[i] = -1;
    CHECK_RC(MPI_Allgatherv(agv_s, me + 1, MPI_INT, agv, agv_c, agv_d, MPI_INT, inter));
    for (int r = 0; r < nremote; r++)
        for (int k = 0; k <= r; k++) CHECK(agv[agv_d[r] + k] == REMOTE(r) * 10 + k, "allgatherv %d.%d: %d", r, k, agv[agv_d[r] + k]);
    for (int i = 0; i < gv_n; i++) gv[i] = -1;
    CHECK_RC(MPI_Gatherv(gv_s, me + 1, MPI_INT, gv, gv_c, gv_d, MPI_INT, root_odd, inter));
    if (color && me == 0)
        for (int r = 0; r < nremote; r++)
            for (int k = 0; k <= r; k++) CHECK(gv[gv_d[r] + k] == REMOTE(r) * 3 + k, "gatherv %d.%d: %d", r, k, gv[gv_d[r] + k]);
    for (int k = 0; k < 8; k++) scv_out[k] = -1;
    CHECK_RC(MPI_Scatterv(scv, agv_c, agv_d, MPI_INT, scv_out, me + 1, MPI_INT, root_even, inter));
    if (color)
        for (int k = 0; k <= me; k++) CHECK(scv_out[k] == 100 * me + k, "scatterv %d: %d", k, scv_out[k]);
    for (int i = 0; i < av_n; i++) av_r[i] = -1;
    CHECK_RC(MPI_Alltoallv(av_s, av_sc, av_sd, MPI_INT, av_r, av_rc, av_rd, MPI_INT, inter));
    for (int r = 0; r < nremote; r++)
        for (int k = 0; k < av_rc[r]; k++)
            CHECK(av_r[av_rd[r] + k] == REMOTE(r) * 1000 + me * 10 + k, "alltoallv %d.%d: %d", r, k, av_r[av_rd[r] + k]);
    for (int i = 0; i < 2 * nremote; i++) aw_r[i] = -1;
    CHECK_RC(MPI_Alltoallw(aw_s, aw_c, aw_sd, aw_st, aw_r, aw_c, aw_rd, aw_rt, inter));
    for (int r = 0; r < nremote; r++) CHECK(aw_r[2 * r] == REMOTE(r) * 50 + me, "alltoallw %d: %d", r, aw_r[2 * r]);
    for (int j = 0; j <= RS_TOTAL; j++) rs_out[j] = -1;
    CHECK_RC(MPI_Reduce_scatter(rs_in, rs_out, rs_c, MPI_INT, MPI_SUM, inter));
    check_rs(rs_out, "reduce_scatter");
    CHECK_RC(MPI_Reduce_scatter_block(rsb_in, rsb_out, rsb_n, MPI_INT, MPI_MIN, inter));
    for (int j = 0; j < rsb_n; j++) CHECK(rsb_out[j] == REMOTE(0) + me * rsb_n + j, "reduce_scatter_block %d: %d", j, rsb_out[j]);

    /* ---- non-commutative op: the other group's matrices in rank order ------ */
    MPI_Op mm;
    CHECK_RC(MPI_Op_create(matmul, 0, &mm));
    int m[4], prod[4] = {-1, -1, -1, -1}, expect[4] = {1, 0, 0, 1};
    mat_of(rank, m);
    for (int r = 0; r < nremote; r++) {
        int x[4], len = 1;
        mat_of(REMOTE(r), x);
        matmul(expect, x, &len, NULL); /* x = expect * x */
        memcpy(expect, x, sizeof x);
    }
    MPI_Request mr;
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_INT, &mat);
    MPI_Type_commit(&mat);
    CHECK_RC(MPI_Iallreduce(m, prod, 1, mat, mm, inter, &mr));
    CHECK_RC(MPI_Wait(&mr, MPI_STATUS_IGNORE));
    for (int i = 0; i < 4; i++) CHECK(prod[i] == expect[i], "matrix product [%d] = %d want %d", i, prod[i], expect[i]);
    for (int i = 0; i < 4; i++) prod[i] = -1;
    CHECK_RC(MPI_Reduce(m, prod, 1, mat, mm, root_even, inter));
    if (!color && me == 0)
        for (int i = 0; i < 4; i++) CHECK(prod[i] == expect[i], "reduce matrix product [%d] = %d want %d", i, prod[i], expect[i]);
    MPI_Op_free(&mm);
    MPI_Type_free(&mat);

    /* ---- derived datatype: every other int of a strided buffer ------------- */
    MPI_Datatype every2;
    MPI_Type_vector(3, 1, 2, MPI_INT, &every2);
    MPI_Type_commit(&every2);
    int vs[6] = {rank, -9, rank + 1, -9, rank + 2, -9};
    int *vr = malloc(sizeof(int) * 6 * nremote);
    for (int i = 0; i < 6 * nremote; i++) vr[i] = -5;
    MPI_Datatype every2r;
    MPI_Type_create_resized(every2, 0, 6 * sizeof(int), &every2r);
    MPI_Type_commit(&every2r);
    CHECK_RC(MPI_Allgather(vs, 1, every2, vr, 1, every2r, inter));
    for (int r = 0; r < nremote; r++)
        for (int k = 0; k < 6; k++) {
            int w = k % 2 ? -5 : REMOTE(r) + k / 2;
            CHECK(vr[6 * r + k] == w, "allgather of a vector type %d.%d: %d want %d", r, k, vr[6 * r + k], w);
        }
    MPI_Type_free(&every2);
    MPI_Type_free(&every2r);

    /* ---- persistent: Allreduce and Bcast started three times --------------- */
    int pin = 0, pout = -1, pb = -1;
    MPI_Request pr[2];
    CHECK_RC(MPI_Allreduce_init(&pin, &pout, 1, MPI_INT, MPI_SUM, inter, MPI_INFO_NULL, &pr[0]));
    CHECK_RC(MPI_Bcast_init(&pb, 1, MPI_INT, root_odd, inter, MPI_INFO_NULL, &pr[1]));
    for (int it = 0; it < 3; it++) {
        pin = rank * (it + 1);
        if (color && me == 0) pb = 77 + it;
        CHECK_RC(MPI_Startall(2, pr));
        CHECK_RC(MPI_Waitall(2, pr, MPI_STATUSES_IGNORE));
        CHECK(pout == want * (it + 1), "persistent allreduce %d: %d want %d", it, pout, want * (it + 1));
        if (!color) CHECK(pb == 77 + it, "persistent bcast %d: %d", it, pb);
    }
    MPI_Request_free(&pr[0]);
    MPI_Request_free(&pr[1]);

    /* ---- errors ------------------------------------------------------------- */
    int rc = MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_SUM, inter);
    CHECK(error_class(rc) == MPI_ERR_BUFFER, "in-place allreduce: class %d", error_class(rc));
    rc = MPI_Scan(&rank, &sum, 1, MPI_INT, MPI_SUM, inter);
    CHECK(error_class(rc) == MPI_ERR_COMM, "scan: class %d", error_class(rc));
    MPI_Request bad;
    rc = MPI_Ibcast(bc, 1, MPI_INT, nremote, inter, &bad);
    CHECK(error_class(rc) == MPI_ERR_ROOT, "bad root: class %d", error_class(rc));
    CHECK_RC(MPI_Barrier(inter));

    MPI_Type_free(&one);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("coll_inter OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
