/* The tool information interface's control variables, categories,
 * enumerations, events and sources: before MPI_Init, while MPI runs and after
 * MPI_Finalize; error codes; the string-length rule. Expects
 * MPICORE_EAGER_LIMIT=4096 in the environment. Prints every variable with
 * its value (rank 0), so runs of the same program built with two compilers
 * can be compared. */
#include "mpit.h"

static int cvar_index(const char *name) {
    int i = -1;
    T_OK(MPI_T_cvar_get_index(name, &i));
    return i;
}

static unsigned long read_ulong(const char *name) {
    MPI_T_cvar_handle h;
    int count = 0;
    unsigned long v = 0;
    T_OK(MPI_T_cvar_handle_alloc(cvar_index(name), NULL, &h, &count));
    CHECK(count == 1, "%s: count %d", name, count);
    T_OK(MPI_T_cvar_read(h, &v));
    T_OK(MPI_T_cvar_handle_free(&h));
    CHECK(h == MPI_T_CVAR_HANDLE_NULL, "handle not reset");
    return v;
}

/* Lists every control variable with its value; returns how many. */
static int list_cvars(const char *when, int print) {
    int num = 0;
    T_OK(MPI_T_cvar_get_num(&num));
    CHECK(num > 10, "only %d control variables", num);
    for (int i = 0; i < num; i++) {
        char name[128], desc[512];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum et;
        T_OK(MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &dt, &et, desc, &desc_len, &bind, &scope));
        CHECK(name_len == (int)strlen(name) + 1, "%s: name_len %d", name, name_len);
        CHECK(desc_len == (int)strlen(desc) + 1 && desc_len > 10, "%s: desc_len %d", name, desc_len);
        CHECK(bind == MPI_T_BIND_NO_OBJECT, "%s: bind %d", name, bind);
        CHECK(scope == MPI_T_SCOPE_READONLY || scope == MPI_T_SCOPE_ALL_EQ, "%s: scope %d", name, scope);
        CHECK(verbosity >= MPI_T_VERBOSITY_USER_BASIC && verbosity <= MPI_T_VERBOSITY_MPIDEV_ALL, "verbosity");
        int idx = -1;
        T_OK(MPI_T_cvar_get_index(name, &idx));
        CHECK(idx == i, "%s: index %d != %d", name, idx, i);
        MPI_T_cvar_handle h;
        int count = 0;
        T_OK(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
        char line[256];
        if (dt == MPI_UNSIGNED_LONG) {
            unsigned long v;
            CHECK(count == 1, "count %d", count);
            T_OK(MPI_T_cvar_read(h, &v));
            snprintf(line, sizeof line, "%lu", v);
        } else if (dt == MPI_INT) {
            int v;
            CHECK(count == 1, "count %d", count);
            T_OK(MPI_T_cvar_read(h, &v));
            snprintf(line, sizeof line, "%d", v);
            if (et != MPI_T_ENUM_NULL) {
                int n = 0, found = 0;
                char ename[64];
                int elen = sizeof ename;
                T_OK(MPI_T_enum_get_info(et, &n, ename, &elen));
                for (int k = 0; k < n; k++) {
                    int value;
                    char item[64];
                    int ilen = sizeof item;
                    T_OK(MPI_T_enum_get_item(et, k, &value, item, &ilen));
                    if (value == v) {
                        snprintf(line, sizeof line, "%s (%s)", item, ename);
                        found = 1;
                    }
                }
                CHECK(found, "%s: value %d not in its enumeration", name, v);
                T_ERR(MPI_T_enum_get_item(et, n, &v, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
            }
        } else {
            CHECK(dt == MPI_CHAR, "%s: datatype", name);
            char *s = calloc(count, 1);
            T_OK(MPI_T_cvar_read(h, s));
            CHECK(memchr(s, 0, count) != NULL, "%s: no NUL within %d chars", name, count);
            snprintf(line, sizeof line, "\"%s\"", s);
            free(s);
        }
        T_OK(MPI_T_cvar_handle_free(&h));
        if (print) printf("%s: cvar %s = %s\n", when, name, line);
    }
    return num;
}

static void check_strings_and_errors(void) {
    int i = cvar_index("MPICORE_EAGER_LIMIT");
    /* Only the length: buffer NULL, or length 0. */
    int len = 0;
    T_OK(MPI_T_cvar_get_info(i, NULL, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    CHECK(len == (int)strlen("MPICORE_EAGER_LIMIT") + 1, "needed length %d", len);
    char small[8] = "xxxxxxx";
    len = 0;
    T_OK(MPI_T_cvar_get_info(i, small, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    CHECK(len == 20 && small[0] == 'x', "length 0 wrote the buffer");
    /* Truncation: len-1 characters and a NUL, len = full length + 1. */
    len = 5;
    T_OK(MPI_T_cvar_get_info(i, small, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    CHECK(strcmp(small, "MPIC") == 0 && len == 20, "truncated to '%s', len %d", small, len);

    int num = 0;
    T_OK(MPI_T_cvar_get_num(&num));
    T_ERR(MPI_T_cvar_get_info(num, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    T_ERR(MPI_T_cvar_get_info(-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    MPI_T_cvar_handle h;
    int count;
    T_ERR(MPI_T_cvar_handle_alloc(num, NULL, &h, &count), MPI_T_ERR_INVALID_INDEX);
    T_ERR(MPI_T_cvar_get_index("MPICORE_NO_SUCH_KNOB", &i), MPI_T_ERR_INVALID_NAME);
    /* A value fixed at MPI_Init cannot be written. */
    T_OK(MPI_T_cvar_handle_alloc(cvar_index("MPICORE_EAGER_LIMIT"), NULL, &h, &count));
    unsigned long v = 1;
    T_ERR(MPI_T_cvar_write(h, &v), MPI_T_ERR_CVAR_SET_NEVER);
    T_OK(MPI_T_cvar_handle_free(&h));
    T_ERR(MPI_T_cvar_handle_free(&h), MPI_T_ERR_INVALID_HANDLE);
    T_ERR(MPI_T_cvar_read(h, &v), MPI_T_ERR_INVALID_HANDLE);
    /* No events. */
    int n = -1;
    T_OK(MPI_T_event_get_num(&n));
    CHECK(n == 0, "%d events", n);
    T_ERR(MPI_T_event_get_index("anything", &n), MPI_T_ERR_INVALID_NAME);
    MPI_T_event_registration reg;
    T_ERR(MPI_T_event_handle_alloc(0, NULL, MPI_INFO_NULL, &reg), MPI_T_ERR_INVALID_INDEX);
}

/* Walks the category tree from the root; every variable appears once. */
static void check_categories(int ncvars, int print) {
    int ncat = 0, root = -1;
    T_OK(MPI_T_category_get_num(&ncat));
    T_OK(MPI_T_category_get_index("mpicore", &root));
    int nc, np, nsub;
    T_OK(MPI_T_category_get_info(root, NULL, NULL, NULL, NULL, &nc, &np, &nsub));
    CHECK(nsub == ncat - 1, "root has %d of %d categories", nsub, ncat);
    int subs[16], total_c = nc, total_p = np;
    T_OK(MPI_T_category_get_categories(root, 16, subs));
    for (int k = 0; k < nsub; k++) {
        char name[64];
        int len = sizeof name;
        T_OK(MPI_T_category_get_info(subs[k], name, &len, NULL, NULL, &nc, &np, NULL));
        int cv[64], pv[64];
        T_OK(MPI_T_category_get_cvars(subs[k], 64, cv));
        T_OK(MPI_T_category_get_pvars(subs[k], 64, pv));
        int ne = -1;
        T_OK(MPI_T_category_get_num_events(subs[k], &ne));
        CHECK(ne == 0, "events in a category");
        if (print) {
            printf("category %s:", name);
            for (int j = 0; j < nc; j++) {
                char vn[128];
                int vl = sizeof vn;
                T_OK(MPI_T_cvar_get_info(cv[j], vn, &vl, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
                printf(" %s", vn);
            }
            printf(" |");
            for (int j = 0; j < np; j++) {
                char vn[128];
                int vl = sizeof vn;
                T_OK(MPI_T_pvar_get_info(pv[j], vn, &vl, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
                printf(" %s", vn);
            }
            printf("\n");
        }
        total_c += nc;
        total_p += np;
    }
    int npvars;
    T_OK(MPI_T_pvar_get_num(&npvars));
    CHECK(total_c == ncvars && total_p == npvars, "categories hold %d cvars, %d pvars", total_c, total_p);
    T_ERR(MPI_T_category_get_info(ncat, NULL, NULL, NULL, NULL, &nc, &np, &nsub), MPI_T_ERR_INVALID_INDEX);
    int stamp = -1;
    T_OK(MPI_T_category_changed(&stamp));
    CHECK(stamp == 0, "changed %d", stamp);
}

static void check_source(void) {
    int n = 0;
    T_OK(MPI_T_source_get_num(&n));
    CHECK(n == 1, "%d sources", n);
    char name[64];
    int len = sizeof name;
    MPI_T_source_order order;
    MPI_Count tps = 0, max = 0, t0 = 0, t1 = 0;
    MPI_Info info;
    T_OK(MPI_T_source_get_info(0, name, &len, NULL, NULL, &order, &tps, &max, &info));
    CHECK(order == MPI_T_SOURCE_ORDERED && tps == 1000000000 && max > 0, "source info");
    T_OK(MPI_T_source_get_timestamp(0, &t0));
    T_OK(MPI_T_source_get_timestamp(0, &t1));
    CHECK(t1 >= t0 && t0 > 0, "timestamps %lld %lld", (long long)t0, (long long)t1);
    T_ERR(MPI_T_source_get_timestamp(1, &t0), MPI_T_ERR_INVALID_INDEX);
}

int main(int argc, char **argv) {
    int provided, n;
    /* Not initialized yet. */
    T_ERR(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    T_ERR(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);

    /* Before MPI_Init: the values the environment sets. */
    T_OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK(provided == MPI_THREAD_SINGLE, "provided %d", provided);
    CHECK(read_ulong("MPICORE_EAGER_LIMIT") == 4096, "eager limit before MPI_Init");
    unsigned long seg = read_ulong("MPICORE_COLL_SEGMENT");
    MPI_T_cvar_handle h;
    int count;
    T_OK(MPI_T_cvar_handle_alloc(cvar_index("MPICORE_COLL_SEGMENT"), NULL, &h, &count));
    T_ERR(MPI_T_cvar_write(h, &seg), MPI_T_ERR_CVAR_SET_NOT_NOW);
    T_OK(MPI_T_cvar_handle_free(&h));

    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* A second user of the interface (reference counted). */
    T_OK(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);

    int ncvars = list_cvars("running", rank == 0);
    CHECK(read_ulong("MPICORE_EAGER_LIMIT") == 4096, "eager limit not the one set");
    CHECK(read_ulong("MPICORE_RING_SIZE") >= 4096, "ring size");
    check_strings_and_errors();
    check_categories(ncvars, rank == 0);
    check_source();

    /* A collective threshold written on every rank is used at once. */
    unsigned long shm_max = 0;
    T_OK(MPI_T_cvar_handle_alloc(cvar_index("MPICORE_COLL_SHM_MAX"), NULL, &h, &count));
    T_OK(MPI_T_cvar_write(h, &shm_max));
    T_OK(MPI_T_cvar_read(h, &shm_max));
    CHECK(shm_max == 0, "write not read back: %lu", shm_max);
    double x = rank + 1, sum = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == size * (size + 1) / 2.0, "allreduce after the write: %g", sum);
    seg = 0;
    T_OK(MPI_T_cvar_handle_free(&h));
    T_OK(MPI_T_cvar_handle_alloc(cvar_index("MPICORE_COLL_SEGMENT"), NULL, &h, &count));
    T_ERR(MPI_T_cvar_write(h, &seg), MPI_T_ERR_INVALID);
    T_OK(MPI_T_cvar_handle_free(&h));

    T_OK(MPI_T_finalize());
    T_OK(MPI_T_cvar_get_num(&n)); /* still one user */
    MPI_Finalize();

    /* After MPI_Finalize the interface still works. */
    CHECK(read_ulong("MPICORE_EAGER_LIMIT") == 4096, "eager limit after MPI_Finalize");
    CHECK(list_cvars("finalized", 0) == ncvars, "variables changed");
    T_OK(MPI_T_finalize());
    T_ERR(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    T_ERR(MPI_T_pvar_session_create(NULL), MPI_T_ERR_NOT_INITIALIZED);
    if (rank == 0) printf("mpit_vars OK on %d ranks\n", size);
    return 0;
}
