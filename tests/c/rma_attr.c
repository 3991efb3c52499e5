/* Caching, names and error handling on windows (what issue #5 asks of
 * windows): attribute copy/delete callbacks counted at delete, replace and
 * MPI_Win_free, the predefined attributes of every flavor, names, info,
 * groups, user error handlers invoked with the right classes.
 * With argument "split" (run with MPICORE_FAKE_HOSTS=2): ranks on two
 * hosts cannot share a window (MPI_ERR_RMA_SHARED), and a fence Put ring
 * works over TCP. */
#include "check.h"

static int deleted = 0, handler_calls = 0, last_class = -1;
static MPI_Win handler_win = MPI_WIN_NULL;

static int del_fn(MPI_Win w, int keyval, void *val, void *extra) {
    (void)w; (void)keyval; (void)extra;
    deleted += *(int *)val;
    return MPI_SUCCESS;
}

static void on_error(MPI_Win *w, int *code, ...) {
    handler_calls++;
    handler_win = *w;
    MPI_Error_class(*code, &last_class);
}

static void split_hosts(int rank, int size) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int *p;
    MPI_Win w;
    int rc = MPI_Win_allocate_shared(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &w);
    CHECK(error_class(rc) == MPI_ERR_RMA_SHARED, "shared window across hosts gave class %d", error_class(rc));
    int buf[4] = {0}, v[4];
    for (int i = 0; i < 4; i++) v[i] = rank * 10 + i;
    CHECK_RC(MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    CHECK_RC(MPI_Win_fence(0, w));
    CHECK_RC(MPI_Put(v, 4, MPI_INT, (rank + 1) % size, 0, 4, MPI_INT, w));
    CHECK_RC(MPI_Win_fence(0, w));
    int left = (rank + size - 1) % size;
    for (int i = 0; i < 4; i++) CHECK(buf[i] == left * 10 + i, "put over tcp [%d]: %d", i, buf[i]);
    CHECK_RC(MPI_Win_free(&w));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("rma_attr split OK on %d ranks\n", size);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && strcmp(argv[1], "split") == 0) {
        split_hosts(rank, size);
        MPI_Finalize();
        return 0;
    }

    int buf[10];
    MPI_Win win;
    CHECK_RC(MPI_Win_create(buf, sizeof buf, 2, MPI_INFO_NULL, MPI_COMM_WORLD, &win));

    /* Predefined attributes. */
    void *base;
    MPI_Aint *sz;
    int *du, *flavor, *model, flag;
    CHECK_RC(MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag));
    CHECK(flag && base == buf, "WIN_BASE %p, want %p", base, (void *)buf);
    CHECK_RC(MPI_Win_get_attr(win, MPI_WIN_SIZE, &sz, &flag));
    CHECK(flag && *sz == sizeof buf, "WIN_SIZE %ld", (long)*sz);
    CHECK_RC(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &du, &flag));
    CHECK(flag && *du == 2, "WIN_DISP_UNIT %d", *du);
    CHECK_RC(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_CREATE, "flavor %d", *flavor);
    CHECK_RC(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && *model == MPI_WIN_UNIFIED, "model %d", *model);
    MPI_Win others[2];
    double *dp;
    CHECK_RC(MPI_Win_allocate(24, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &dp, &others[0]));
    CHECK_RC(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &others[1]));
    int want_flavor[2] = {MPI_WIN_FLAVOR_ALLOCATE, MPI_WIN_FLAVOR_DYNAMIC};
    for (int k = 0; k < 2; k++) {
        CHECK_RC(MPI_Win_get_attr(others[k], MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
        CHECK(flag && *flavor == want_flavor[k], "flavor %d, want %d", *flavor, want_flavor[k]);
    }
    CHECK_RC(MPI_Win_get_attr(others[0], MPI_WIN_BASE, &base, &flag));
    CHECK(base == dp, "allocate: WIN_BASE %p, baseptr %p", base, (void *)dp);
    CHECK((size_t)dp % 16 == 0, "MPI_Win_allocate memory at %p is not aligned", (void *)dp);
    CHECK_RC(MPI_Win_get_attr(others[1], MPI_WIN_SIZE, &sz, &flag));
    CHECK(*sz == 0, "dynamic: WIN_SIZE %ld", (long)*sz);
    CHECK_RC(MPI_Win_free(&others[0]));
    CHECK_RC(MPI_Win_free(&others[1]));

    /* User attributes: the delete callback runs on replace, delete and free. */
    int key;
    CHECK_RC(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, del_fn, &key, NULL));
    int v1 = 1, v2 = 10, v3 = 100;
    CHECK_RC(MPI_Win_set_attr(win, key, &v1));
    CHECK_RC(MPI_Win_set_attr(win, key, &v2)); /* replaces v1: deleted += 1 */
    int *got;
    CHECK_RC(MPI_Win_get_attr(win, key, &got, &flag));
    CHECK(flag && got == &v2, "attribute not replaced");
    CHECK_RC(MPI_Win_delete_attr(win, key)); /* deleted += 10 */
    CHECK_RC(MPI_Win_get_attr(win, key, &got, &flag));
    CHECK(!flag, "attribute still there after delete");
    CHECK_RC(MPI_Win_set_attr(win, key, &v3));
    CHECK(deleted == 11, "delete callbacks before free: %d, want 11", deleted);

    /* Names, info, group. */
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    CHECK_RC(MPI_Win_get_name(win, name, &len));
    CHECK(len == 0 && name[0] == 0, "default name '%s'", name);
    CHECK_RC(MPI_Win_set_name(win, "halo window"));
    CHECK_RC(MPI_Win_get_name(win, name, &len));
    CHECK(len == 11 && strcmp(name, "halo window") == 0, "name '%s' (%d)", name, len);
    MPI_Info info, used;
    MPI_Info_create(&info);
    MPI_Info_set(info, "no_locks", "true");
    CHECK_RC(MPI_Win_set_info(win, info));
    CHECK_RC(MPI_Win_get_info(win, &used));
    char val[32];
    MPI_Info_get(used, "no_locks", sizeof val - 1, val, &flag);
    CHECK(flag && strcmp(val, "true") == 0, "info hint lost");
    /* The standard keys are all listed, with their defaults; unknown keys
     * are not "used". */
    MPI_Info_free(&used);
    MPI_Info_set(info, "no_such_hint", "1");
    CHECK_RC(MPI_Win_set_info(win, info));
    CHECK_RC(MPI_Win_get_info(win, &used));
    MPI_Info_get(used, "accumulate_ordering", sizeof val - 1, val, &flag);
    CHECK(flag && strcmp(val, "rar,raw,war,waw") == 0, "accumulate_ordering: %s", flag ? val : "(unset)");
    MPI_Info_get(used, "accumulate_ops", sizeof val - 1, val, &flag);
    CHECK(flag && strcmp(val, "same_op_no_op") == 0, "accumulate_ops: %s", flag ? val : "(unset)");
    MPI_Info_get(used, "no_locks", sizeof val - 1, val, &flag);
    CHECK(flag && strcmp(val, "true") == 0, "no_locks after a second set_info: %s", flag ? val : "(unset)");
    MPI_Info_get(used, "no_such_hint", sizeof val - 1, val, &flag);
    CHECK(!flag, "an unknown hint is reported as used");
    MPI_Info_free(&info);
    MPI_Info_free(&used);
    MPI_Group wg, world;
    int cmp;
    CHECK_RC(MPI_Win_get_group(win, &wg));
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_compare(wg, world, &cmp);
    CHECK(cmp == MPI_IDENT, "window group compares %d", cmp);
    MPI_Group_free(&wg);
    MPI_Group_free(&world);

    /* Error handlers: fatal by default, a user handler sees each class. */
    MPI_Errhandler eh, cur;
    CHECK_RC(MPI_Win_get_errhandler(win, &cur));
    CHECK(cur == MPI_ERRORS_ARE_FATAL, "default window error handler is not MPI_ERRORS_ARE_FATAL");
    CHECK_RC(MPI_Win_create_errhandler(on_error, &eh));
    CHECK_RC(MPI_Win_set_errhandler(win, eh));
    CHECK_RC(MPI_Win_get_errhandler(win, &cur));
    CHECK(cur == eh, "errhandler not set");
    int x = 5;
    struct { int rc_class; int calls; } seen;
    int rc = MPI_Put(&x, 1, MPI_INT, 0, 0, 1, MPI_INT, win); /* no epoch */
    seen.rc_class = error_class(rc);
    seen.calls = handler_calls;
    CHECK(seen.rc_class == MPI_ERR_RMA_SYNC && last_class == MPI_ERR_RMA_SYNC && seen.calls == 1 && handler_win == win,
          "put outside an epoch: rc class %d, handler class %d, calls %d", seen.rc_class, last_class, seen.calls);
    rc = MPI_Win_unlock(0, win);
    CHECK(error_class(rc) == MPI_ERR_RMA_SYNC && last_class == MPI_ERR_RMA_SYNC && handler_calls == 2, "unlock without lock: %d", error_class(rc));
    rc = MPI_Win_complete(win);
    CHECK(error_class(rc) == MPI_ERR_RMA_SYNC && handler_calls == 3, "complete without start: %d", error_class(rc));
    rc = MPI_Win_flush(0, win);
    CHECK(error_class(rc) == MPI_ERR_RMA_SYNC && handler_calls == 4, "flush without lock: %d", error_class(rc));
    CHECK_RC(MPI_Win_fence(0, win));
    rc = MPI_Put(&x, 1, MPI_INT, size, 0, 1, MPI_INT, win);
    CHECK(error_class(rc) == MPI_ERR_RANK && last_class == MPI_ERR_RANK && handler_calls == 5, "bad rank: %d", error_class(rc));
    rc = MPI_Put(&x, 1, MPI_INT, 0, -1, 1, MPI_INT, win);
    CHECK(error_class(rc) == MPI_ERR_DISP && handler_calls == 6, "negative disp: %d", error_class(rc));
    rc = MPI_Put(&x, 1, MPI_INT, 0, 19, 1, MPI_INT, win); /* bytes 38..42 of 40 */
    CHECK(error_class(rc) == MPI_ERR_RMA_RANGE && handler_calls == 7, "past the window: %d", error_class(rc));
    rc = MPI_Accumulate(&x, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_MAXLOC, win);
    CHECK(error_class(rc) == MPI_ERR_OP && handler_calls == 8, "MAXLOC on MPI_INT: %d", error_class(rc));
    CHECK_RC(MPI_Put(&x, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win));
    CHECK_RC(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    rc = MPI_Win_lock(12345, 0, 0, win);
    CHECK(error_class(rc) == MPI_ERR_LOCKTYPE && handler_calls == 9, "bad lock type: %d", error_class(rc));
    CHECK_RC(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    CHECK(handler_calls == 10 && last_class == MPI_ERR_OTHER, "call_errhandler: %d calls, class %d", handler_calls, last_class);
    /* A handler made for communicators is refused on a window. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK_RC(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_Errhandler ceh;
    CHECK_RC(MPI_Comm_create_errhandler((MPI_Comm_errhandler_function *)on_error, &ceh));
    rc = MPI_Win_set_errhandler(win, ceh);
    CHECK(error_class(rc) == MPI_ERR_ARG, "a communicator handler on a window: %d", error_class(rc));
    MPI_Errhandler_free(&ceh);
    /* An invalid window: the error goes to MPI_COMM_WORLD's handler. */
    MPI_Win bogus = MPI_WIN_NULL;
    rc = MPI_Win_fence(0, bogus);
    CHECK(error_class(rc) == MPI_ERR_WIN, "fence on MPI_WIN_NULL: %d", error_class(rc));
    MPI_Errhandler_free(&eh);

    /* Many windows of every flavor made and freed: memory stays flat. */
    long rss0 = 0;
    for (int i = 0; i < 1500; i++) {
        if (i == 300) rss0 = test_rss_kb();
        MPI_Win t;
        void *p;
        int small[4];
        switch (i % 4) {
        case 0: CHECK_RC(MPI_Win_create(small, sizeof small, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &t)); break;
        case 1: CHECK_RC(MPI_Win_allocate(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &t)); break;
        case 2: CHECK_RC(MPI_Win_allocate_shared(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &t)); break;
        default: CHECK_RC(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &t)); break;
        }
        CHECK_RC(MPI_Win_fence(0, t));
        CHECK_RC(MPI_Win_fence(0, t));
        CHECK_RC(MPI_Win_free(&t));
    }
    long rss1 = test_rss_kb();
    CHECK(rss1 - rss0 < 4096, "RSS grew from %ld to %ld kB over 1200 windows", rss0, rss1);

    CHECK_RC(MPI_Win_free(&win)); /* deleted += 100 */
    CHECK(deleted == 111, "delete callbacks after free: %d, want 111", deleted);
    CHECK_RC(MPI_Win_free_keyval(&key));
    MPI_Barrier(MPI_COMM_WORLD);
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int vlen = 0;
    MPI_Get_library_version(ver, &vlen);
    if (rank == 0) printf("rma_attr OK on %d ranks, library: %.40s\n", size, ver);
    MPI_Finalize();
    return 0;
}
