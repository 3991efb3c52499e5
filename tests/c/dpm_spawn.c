/* MPI_Comm_spawn under the project's mpirun: the parent job spawns 2 copies
 * of this program ("child"), then 1+2 with MPI_Comm_spawn_multiple ("child
 * m0", "child m1"); parent rank 0 sends each child a value that comes back
 * doubled plus the child's appnum; Bcast from the parents; the merged
 * communicator (parents first) reduces; both sides disconnect. A command
 * that does not exist fails with MPI_ERR_SPAWN. */
#include "check.h"

static void child(int argc, char **argv) {
    MPI_Comm parent;
    CHECK_RC(MPI_Comm_get_parent(&parent));
    CHECK(parent != MPI_COMM_NULL, "a spawned process has no parent");
    int rank, size, rsize, *appnum, flag;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_remote_size(parent, &rsize);
    CHECK_RC(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag));
    int app = flag ? *appnum : 0;
    if (argc > 2) CHECK(app == argv[2][1] - '0', "appnum %d for %s", app, argv[2]);
    int v = -1;
    CHECK_RC(MPI_Recv(&v, 1, MPI_INT, 0, 1, parent, MPI_STATUS_IGNORE));
    CHECK(v == 500 + rank, "child %d got %d", rank, v);
    v = 2 * v + app;
    CHECK_RC(MPI_Send(&v, 1, MPI_INT, 0, 2, parent));
    int b = 0;
    CHECK_RC(MPI_Bcast(&b, 1, MPI_INT, 0, parent));
    CHECK(b == 77, "bcast %d", b);
    MPI_Comm merged;
    CHECK_RC(MPI_Intercomm_merge(parent, 1, &merged));
    int mrank, msize, sum = 0;
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    CHECK(msize == size + rsize && mrank == rsize + rank, "merged %d of %d", mrank, msize);
    CHECK_RC(MPI_Allreduce(&mrank, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK(sum == msize * (msize - 1) / 2, "merged sum %d", sum);
    MPI_Comm_free(&merged);
    CHECK_RC(MPI_Comm_disconnect(&parent));
    MPI_Comm p2;
    MPI_Comm_get_parent(&p2);
    CHECK(p2 == MPI_COMM_NULL, "parent after disconnect");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("dpm_spawn child OK %s (%d processes)\n", argc > 2 ? argv[2] : "", size);
}

/* The parents' half (the group of `local`) of one spawned job of `n`
 * processes with appnums `apps`. */
static void talk(MPI_Comm local, MPI_Comm inter, int n, const int *apps) {
    int rank, size, rsize;
    MPI_Comm_rank(local, &rank);
    MPI_Comm_size(local, &size);
    MPI_Comm_remote_size(inter, &rsize);
    CHECK(rsize == n, "remote size %d, wanted %d", rsize, n);
    if (rank == 0) {
        for (int j = 0; j < n; j++) {
            int v = 500 + j;
            CHECK_RC(MPI_Send(&v, 1, MPI_INT, j, 1, inter));
        }
        for (int j = 0; j < n; j++) {
            int v = -1;
            CHECK_RC(MPI_Recv(&v, 1, MPI_INT, j, 2, inter, MPI_STATUS_IGNORE));
            CHECK(v == 2 * (500 + j) + apps[j], "from child %d: %d", j, v);
        }
    }
    int b = 77;
    CHECK_RC(MPI_Bcast(&b, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter));
    MPI_Comm merged;
    CHECK_RC(MPI_Intercomm_merge(inter, 0, &merged));
    int mrank, msize, sum = 0;
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    CHECK(msize == size + n && mrank == rank, "merged %d of %d", mrank, msize);
    CHECK_RC(MPI_Allreduce(&mrank, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK(sum == msize * (msize - 1) / 2, "merged sum %d", sum);
    MPI_Comm_free(&merged);
    CHECK_RC(MPI_Comm_disconnect(&inter));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        child(argc, argv);
        MPI_Finalize();
        return 0;
    }
    MPI_Comm parent;
    CHECK_RC(MPI_Comm_get_parent(&parent));
    CHECK(parent == MPI_COMM_NULL, "the first job has a parent");
    int rank, errs[3] = {-1, -1, -1};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    MPI_Comm inter;
    char *args[] = {"child", NULL};
    CHECK_RC(MPI_Comm_spawn(argv[0], args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, errs));
    CHECK(errs[0] == MPI_SUCCESS && errs[1] == MPI_SUCCESS, "errcodes %d %d", errs[0], errs[1]);
    int zeros[2] = {0, 0};
    talk(MPI_COMM_WORLD, inter, 2, zeros);

    char *cmds[2] = {argv[0], argv[0]};
    char *a0[] = {"child", "m0", NULL}, *a1[] = {"child", "m1", NULL};
    char **argvs[2] = {a0, a1};
    int maxprocs[2] = {1, 2};
    MPI_Info infos[2] = {MPI_INFO_NULL, MPI_INFO_NULL};
    CHECK_RC(MPI_Comm_spawn_multiple(2, cmds, argvs, maxprocs, infos, 0, MPI_COMM_WORLD, &inter, errs));
    for (int i = 0; i < 3; i++) CHECK(errs[i] == MPI_SUCCESS, "errcodes[%d] = %d", i, errs[i]);
    int apps[3] = {0, 1, 1};
    talk(MPI_COMM_WORLD, inter, 3, apps);

    /* Every rank spawns a child of its own at the same time. */
    char *as[] = {"child", "s0", NULL};
    CHECK_RC(MPI_Comm_spawn(argv[0], as, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter, MPI_ERRCODES_IGNORE));
    talk(MPI_COMM_SELF, inter, 1, zeros);

    /* No such program: MPI_ERR_SPAWN everywhere, the codes at the root
     * (not under launchers that end the job instead: "no-missing"). */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (argc > 1 && strcmp(argv[1], "no-missing") == 0) goto done;
    errs[0] = errs[1] = -1;
    int rc = MPI_Comm_spawn("/nonexistent/mpicore-program", MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, errs);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_SPAWN, "spawn of a missing program: class %d", cls);
    if (rank == 0) CHECK(errs[0] == MPI_ERR_SPAWN && errs[1] == MPI_ERR_SPAWN, "errcodes %d %d", errs[0], errs[1]);
done:

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("dpm_spawn OK\n");
    MPI_Finalize();
    return 0;
}
