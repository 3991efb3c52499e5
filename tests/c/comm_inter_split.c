/* MPI_Comm_split and MPI_Comm_create on an intercommunicator (even world
 * ranks against odd ones): the new intercommunicators' local and remote
 * groups, in key / group order, checked by size, rank, the remote group's
 * world ranks and an exchange across; colors on one side only, undefined
 * colors and empty groups give MPI_COMM_NULL; MPI_Comm_split_type groups
 * each host's processes of both sides; a group that is not part of the
 * local group is MPI_ERR_GROUP. Needs at least 2 ranks. */
#include "check.h"

static int rank, size, side;

/* World rank of rank r of side s (0: evens, 1: odds). */
static int world_of(int s, int r) { return 2 * r + s; }

/* Checks intercommunicator c against the expected local and remote lists
 * of side ranks (local: this side's, remote: the other side's). */
static void check_inter(MPI_Comm c, const int *loc, int nl, const int *rem, int nr, const char *what) {
    int flag, n, r;
    MPI_Comm_test_inter(c, &flag);
    CHECK(flag, "%s: not an intercommunicator", what);
    MPI_Comm_size(c, &n);
    CHECK(n == nl, "%s: local size %d, expected %d", what, n, nl);
    MPI_Comm_remote_size(c, &n);
    CHECK(n == nr, "%s: remote size %d, expected %d", what, n, nr);
    MPI_Comm_rank(c, &r);
    CHECK(world_of(side, loc[r]) == rank, "%s: rank %d is world %d, not this process (%d)", what, r, world_of(side, loc[r]), rank);
    MPI_Group rg, wg;
    MPI_Comm_remote_group(c, &rg);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    for (int j = 0; j < nr; j++) {
        int w;
        MPI_Group_translate_ranks(rg, 1, &j, wg, &w);
        CHECK(w == world_of(1 - side, rem[j]), "%s: remote rank %d is world %d, expected %d", what, j, w, world_of(1 - side, rem[j]));
    }
    MPI_Group_free(&rg);
    MPI_Group_free(&wg);
    if (r < nr) {
        int got = -1;
        CHECK_RC(MPI_Sendrecv(&rank, 1, MPI_INT, r, 5, &got, 1, MPI_INT, r, 5, c, MPI_STATUS_IGNORE));
        CHECK(got == world_of(1 - side, rem[r]), "%s: remote rank %d sent %d", what, r, got);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size < 2) {
        printf("comm_inter_split OK on %d ranks (needs 2)\n", size);
        MPI_Finalize();
        return 0;
    }
    side = rank % 2;
    int me = rank / 2;
    int nside[2] = {(size + 1) / 2, size / 2};
    int nl = nside[side], nr = nside[1 - side];
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, side, rank, &half);
    CHECK_RC(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - side, 7, &inter));
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    int loc[64], rem[64], a, b;

    /* Split by parity of the side rank, keys reversing the order. */
    for (int round = 0; round < 3; round++) {
        MPI_Comm s;
        int color = me % 2;
        CHECK_RC(MPI_Comm_split(inter, color, -me, &s));
        a = b = 0;
        for (int r = nl - 1; r >= 0; r--)
            if (r % 2 == color) loc[a++] = r;
        for (int r = nr - 1; r >= 0; r--)
            if (r % 2 == color) rem[b++] = r;
        if (b == 0) {
            CHECK(s == MPI_COMM_NULL, "split: color %d is on one side only, yet a communicator came back", color);
        } else {
            CHECK(s != MPI_COMM_NULL, "split: color %d got MPI_COMM_NULL", color);
            check_inter(s, loc, a, rem, b, "split");
            /* A split of the split (all one color, keys by side rank). */
            MPI_Comm s2;
            CHECK_RC(MPI_Comm_split(s, 3, me, &s2));
            int l2[64], r2[64];
            for (int i = 0; i < a; i++) l2[i] = loc[a - 1 - i];
            for (int i = 0; i < b; i++) r2[i] = rem[b - 1 - i];
            check_inter(s2, l2, a, r2, b, "split of a split");
            MPI_Comm_free(&s2);
            MPI_Comm_free(&s);
        }
    }

    /* The odd side gives MPI_UNDEFINED: nobody gets a communicator. */
    MPI_Comm u;
    CHECK_RC(MPI_Comm_split(inter, side ? MPI_UNDEFINED : 1, 0, &u));
    CHECK(u == MPI_COMM_NULL, "split with one side undefined gave a communicator");

    /* Create: evens keep all but side rank 0, in reverse order; odds keep
     * everyone in order. An empty side gives MPI_COMM_NULL everywhere. */
    MPI_Group lg, g;
    MPI_Comm_group(inter, &lg);
    int ranks[64], n = 0;
    if (side == 0)
        for (int r = nl - 1; r >= 1; r--) ranks[n++] = r;
    else
        for (int r = 0; r < nl; r++) ranks[n++] = r;
    MPI_Group_incl(lg, n, ranks, &g);
    MPI_Comm c;
    CHECK_RC(MPI_Comm_create(inter, g, &c));
    int nev = nside[0] - 1;
    if (nev == 0 || (side == 0 && me == 0)) {
        CHECK(c == MPI_COMM_NULL, "create: expected MPI_COMM_NULL (evens kept %d)", nev);
    } else {
        int ev[64], od[64];
        for (int i = 0; i < nev; i++) ev[i] = nside[0] - 1 - i;
        for (int i = 0; i < nside[1]; i++) od[i] = i;
        if (side == 0)
            check_inter(c, ev, nev, od, nside[1], "create");
        else
            check_inter(c, od, nside[1], ev, nev, "create");
        MPI_Comm_free(&c);
    }
    MPI_Group_free(&g);

    /* Split_type (MPI 4.0 allows intercommunicators): local and remote
     * processes of one host form a new intercommunicator, ordered by key;
     * a host with processes of one side only gives MPI_COMM_NULL. */
    {
        char name[MPI_MAX_PROCESSOR_NAME], *names;
        int len;
        memset(name, 0, sizeof name);
        MPI_Get_processor_name(name, &len);
        names = calloc((size_t)size, MPI_MAX_PROCESSOR_NAME);
        MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
        a = b = 0;
        for (int r = nl - 1; r >= 0; r--)
            if (!strcmp(names + (size_t)world_of(side, r) * MPI_MAX_PROCESSOR_NAME, name)) loc[a++] = r;
        for (int r = nr - 1; r >= 0; r--)
            if (!strcmp(names + (size_t)world_of(1 - side, r) * MPI_MAX_PROCESSOR_NAME, name)) rem[b++] = r;
        free(names);
        MPI_Comm st;
        CHECK_RC(MPI_Comm_split_type(inter, MPI_COMM_TYPE_SHARED, -me, MPI_INFO_NULL, &st));
        if (b == 0) {
            CHECK(st == MPI_COMM_NULL, "split_type: no remote process on this host, yet a communicator came back");
        } else {
            CHECK(st != MPI_COMM_NULL, "split_type: got MPI_COMM_NULL with %d remote processes on this host", b);
            check_inter(st, loc, a, rem, b, "split_type");
            MPI_Comm_free(&st);
        }
        CHECK_RC(MPI_Comm_split_type(inter, MPI_UNDEFINED, 0, MPI_INFO_NULL, &st));
        CHECK(st == MPI_COMM_NULL, "split_type MPI_UNDEFINED gave a communicator");
    }

    /* A group with processes of the other side: MPI_ERR_GROUP, at once. */
    MPI_Group rg;
    MPI_Comm_remote_group(inter, &rg);
    int rc = MPI_Comm_create(inter, rg, &c);
    CHECK(error_class(rc) == MPI_ERR_GROUP, "create with the remote group: class %d", error_class(rc));
    MPI_Group_free(&rg);
    /* A bad color. */
    rc = MPI_Comm_split(inter, -5, 0, &c);
    CHECK(error_class(rc) == MPI_ERR_ARG, "split with color -5: class %d", error_class(rc));

    /* The intercommunicator still works after all that. */
    if (me < nr) {
        int got = -1;
        CHECK_RC(MPI_Sendrecv(&rank, 1, MPI_INT, me, 9, &got, 1, MPI_INT, me, 9, inter, MPI_STATUS_IGNORE));
        CHECK(got == world_of(1 - side, me), "inter after: got %d", got);
    }
    MPI_Group_free(&lg);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("comm_inter_split OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
