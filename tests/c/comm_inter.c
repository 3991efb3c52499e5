/* Intercommunicators: create from the halves of MPI_COMM_WORLD (even and
 * odd ranks), queries, ping-pong across, dup, merge with `high` deciding
 * the order, point-to-point on the merged communicator; an intercomm
 * whose remote group is a single process. Needs at least 2 ranks. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, r, n, flag, res;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Status st;
    if (size < 2) {
        printf("comm_inter OK on %d ranks (needs 2)\n", size);
        MPI_Finalize();
        return 0;
    }

    int color = rank % 2;
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
    int nlocal = color ? size / 2 : (size + 1) / 2, nremote = size - nlocal;
    /* Leaders: world rank 0 (evens) and 1 (odds). */
    CHECK_RC(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 99, &inter));
    MPI_Comm_test_inter(inter, &flag);
    CHECK(flag, "test_inter");
    MPI_Comm_test_inter(half, &flag);
    CHECK(!flag, "test_inter on an intracommunicator");
    MPI_Comm_size(inter, &n);
    MPI_Comm_rank(inter, &r);
    CHECK(n == nlocal && r == rank / 2, "inter size %d rank %d", n, r);
    MPI_Comm_remote_size(inter, &n);
    CHECK(n == nremote, "remote size %d", n);
    MPI_Group rg, wg;
    MPI_Comm_remote_group(inter, &rg);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int zero = 0, w;
    MPI_Group_translate_ranks(rg, 1, &zero, wg, &w);
    CHECK(w == 1 - color, "remote rank 0 is world %d", w);
    MPI_Group_free(&rg);

    /* Ping-pong: local rank i with remote rank i (where it exists). */
    int me = rank / 2;
    for (int it = 0; it < 10; it++) {
        int v = 100 * rank + it, got = -1;
        if (me < nremote) {
            if (color == 0) {
                CHECK_RC(MPI_Send(&v, 1, MPI_INT, me, it, inter));
                CHECK_RC(MPI_Recv(&got, 1, MPI_INT, me, it, inter, &st));
                CHECK(got == 100 * (2 * me + 1) + it + 1, "pong %d", got);
            } else {
                CHECK_RC(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, inter, &st));
                CHECK(st.MPI_SOURCE == me && st.MPI_TAG == it, "ping from %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
                CHECK(got == 100 * (2 * me) + it, "ping %d", got);
                got++;
                got += 100;
                CHECK_RC(MPI_Send(&got, 1, MPI_INT, me, it, inter));
            }
        }
    }
    /* Out-of-range remote rank. */
    int x = 0;
    int rc = MPI_Send(&x, 1, MPI_INT, nremote, 0, inter);
    CHECK(error_class(rc) == MPI_ERR_RANK, "send to remote rank %d: class %d", nremote, error_class(rc));

    /* Dup of an intercommunicator keeps both groups, new context. */
    MPI_Comm idup;
    CHECK_RC(MPI_Comm_dup(inter, &idup));
    MPI_Comm_compare(idup, inter, &res);
    CHECK(res == MPI_CONGRUENT, "inter dup compare %d", res);
    MPI_Comm_remote_size(idup, &n);
    CHECK(n == nremote, "dup remote size %d", n);
    if (me == 0) {
        int v = rank, u = -1;
        CHECK_RC(MPI_Sendrecv(&v, 1, MPI_INT, 0, 1, &u, 1, MPI_INT, 0, 1, idup, &st));
        CHECK(u == 1 - color, "leader exchange on the dup: %d", u);
    }

    /* Merge: the odd group says high, so evens come first. */
    MPI_Comm merged;
    CHECK_RC(MPI_Intercomm_merge(inter, color, &merged));
    MPI_Comm_size(merged, &n);
    MPI_Comm_rank(merged, &r);
    int want = color ? (size + 1) / 2 + rank / 2 : rank / 2;
    CHECK(n == size && r == want, "merged size %d rank %d want %d", n, r, want);
    MPI_Comm_test_inter(merged, &flag);
    CHECK(!flag, "merged is an intracommunicator");
    /* Ring on the merged communicator. */
    int nx = (r + 1) % n, pv = (r + n - 1) % n, out = r * 3, in = -1;
    CHECK_RC(MPI_Sendrecv(&out, 1, MPI_INT, nx, 4, &in, 1, MPI_INT, pv, 4, merged, &st));
    CHECK(in == pv * 3, "merged ring got %d", in);
    MPI_Comm_free(&merged);
    /* Reverse order: now evens say high. */
    CHECK_RC(MPI_Intercomm_merge(inter, !color, &merged));
    MPI_Comm_rank(merged, &r);
    want = color ? rank / 2 : size / 2 + rank / 2;
    CHECK(r == want, "merged (evens high) rank %d want %d", r, want);
    MPI_Comm_free(&merged);
    /* Same high on both sides: still one consistent order. */
    CHECK_RC(MPI_Intercomm_merge(inter, 0, &merged));
    MPI_Comm_rank(merged, &r);
    int *all = malloc(sizeof(int) * size);
    MPI_Group mg;
    MPI_Comm_group(merged, &mg);
    for (int i = 0; i < size; i++) all[i] = i;
    int *tr = malloc(sizeof(int) * size);
    MPI_Group_translate_ranks(mg, size, all, wg, tr);
    int seen = 0;
    for (int i = 0; i < size; i++) seen |= (tr[i] == rank) << 0;
    CHECK(seen && tr[r] == rank, "merged group consistent");
    MPI_Group_free(&mg);
    MPI_Comm_free(&merged);
    free(all);
    free(tr);

    /* An intercommunicator between world rank 0 alone and the rest. */
    MPI_Comm one, inter2;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0, rank, &one);
    CHECK_RC(MPI_Intercomm_create(one, 0, MPI_COMM_WORLD, rank == 0 ? 1 : 0, 7, &inter2));
    MPI_Comm_remote_size(inter2, &n);
    CHECK(n == (rank == 0 ? size - 1 : 1), "inter2 remote size %d", n);
    if (rank == 0) {
        int sum = 0;
        for (int i = 0; i < size - 1; i++) {
            int v;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 3, inter2, &st);
            sum += v;
        }
        CHECK(sum == size * (size - 1) / 2, "sum from the rest %d", sum);
    } else {
        MPI_Send(&rank, 1, MPI_INT, 0, 3, inter2);
    }
    MPI_Comm_free(&inter2);
    MPI_Comm_free(&one);

    /* Bad input. */
    rc = MPI_Intercomm_merge(half, 0, &merged);
    CHECK(error_class(rc) == MPI_ERR_COMM, "merge of an intracommunicator: class %d", error_class(rc));
    rc = MPI_Comm_remote_size(half, &n);
    CHECK(error_class(rc) == MPI_ERR_COMM, "remote_size of an intracommunicator: class %d", error_class(rc));
    rc = MPI_Intercomm_create(half, nlocal, MPI_COMM_WORLD, 0, 1, &inter2);
    CHECK(error_class(rc) == MPI_ERR_RANK, "bad local leader: class %d", error_class(rc));

    MPI_Group_free(&wg);
    MPI_Comm_free(&idup);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("comm_inter OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
