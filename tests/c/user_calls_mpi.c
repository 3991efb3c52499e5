/* The program's code that calls MPI, run by the library: user reduction
 * functions (blocking, nonblocking, persistent and local reductions, on a
 * contiguous and a strided type, commutative or not), attribute copy and
 * delete callbacks, and an error handler. Each calls MPI_Type_get_extent and
 * MPI_Comm_rank and checks what they say; none may hang (the library must
 * not hold its lock while it runs them). */
#include "check.h"

static int me, nprocs;
static long op_calls, copy_calls, delete_calls, handler_calls;

/* Checks from inside the program's code that MPI answers. */
static void ask_mpi(MPI_Datatype dt, MPI_Aint want_extent) {
    MPI_Aint lb = -1, extent = -1;
    CHECK(MPI_Type_get_extent(dt, &lb, &extent) == MPI_SUCCESS, "MPI_Type_get_extent failed");
    CHECK(lb == 0 && extent == want_extent, "extent %ld (lb %ld), want %ld", (long)extent, (long)lb, (long)want_extent);
    int r = -1;
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &r) == MPI_SUCCESS && r == me, "MPI_Comm_rank said %d", r);
}

/* Sum on MPI_INT elements. */
static void sum_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
    ask_mpi(*dt, sizeof(int));
    op_calls++;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

/* Not commutative: 2x2 matrix product, inout = in * inout, in rank order. */
static void matmul_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
    ask_mpi(*dt, 4 * sizeof(int));
    op_calls++;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++, a += 4, b += 4) {
        int c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                    a[2] * b[1] + a[3] * b[3]};
        for (int k = 0; k < 4; k++) b[k] = c[k];
    }
}

/* The matrix of rank r: [[1, r], [r % 3, 1]] (products of these depend on
 * the order). */
static void matrix_of(int r, int *m) {
    m[0] = 1, m[1] = r, m[2] = r % 3, m[3] = 1;
}

static void expect_product(const int *got, int upto) {
    int acc[4] = {1, 0, 0, 1};
    for (int r = 0; r < upto; r++) {
        int m[4], c[4];
        matrix_of(r, m);
        c[0] = acc[0] * m[0] + acc[1] * m[2], c[1] = acc[0] * m[1] + acc[1] * m[3];
        c[2] = acc[2] * m[0] + acc[3] * m[2], c[3] = acc[2] * m[1] + acc[3] * m[3];
        for (int k = 0; k < 4; k++) acc[k] = c[k];
    }
    for (int k = 0; k < 4; k++) CHECK(got[k] == acc[k], "product[%d] = %d, want %d", k, got[k], acc[k]);
}

static int copy_fn(MPI_Comm old, int key, void *extra, void *in, void *out, int *flag) {
    ask_mpi(MPI_INT, sizeof(int));
    int size = -1;
    CHECK(MPI_Comm_size(old, &size) == MPI_SUCCESS && size == nprocs, "size of the old comm %d", size);
    copy_calls++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm comm, int key, void *val, void *extra) {
    ask_mpi(MPI_INT, sizeof(int));
    delete_calls++;
    return MPI_SUCCESS;
}

static void handler(MPI_Comm *comm, int *code, ...) {
    ask_mpi(MPI_DOUBLE, sizeof(double));
    char text[MPI_MAX_ERROR_STRING];
    int len = 0, class = -1;
    CHECK(MPI_Error_string(*code, text, &len) == MPI_SUCCESS && len > 0, "MPI_Error_string");
    CHECK(MPI_Error_class(*code, &class) == MPI_SUCCESS && class == MPI_ERR_RANK, "class %d", class);
    handler_calls++;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Op sum, matmul;
    MPI_Op_create(sum_fn, 1, &sum);
    MPI_Op_create(matmul_fn, 0, &matmul);
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_INT, &mat);
    MPI_Type_commit(&mat);
    int want = nprocs * (nprocs - 1) / 2;

    /* Small and large (the large ones take the schedules' segmented paths). */
    for (int n = 1; n <= 100000; n *= 100) {
        int *in = malloc(n * sizeof(int)), *out = malloc(n * sizeof(int));
        for (int i = 0; i < n; i++) in[i] = me + i;
#define CHECK_OUT(what)                                                                                 \
    for (int i = 0; i < n; i++)                                                                         \
        CHECK(out[i] == want + nprocs * i, "%s n=%d out[%d] = %d, want %d", what, n, i, out[i], want + nprocs * i)
        MPI_Allreduce(in, out, n, MPI_INT, sum, MPI_COMM_WORLD);
        CHECK_OUT("Allreduce");
        MPI_Request req;
        memset(out, 0, n * sizeof(int));
        MPI_Iallreduce(in, out, n, MPI_INT, sum, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK_OUT("Iallreduce+Wait");
        memset(out, 0, n * sizeof(int));
        MPI_Iallreduce(in, out, n, MPI_INT, sum, MPI_COMM_WORLD, &req);
        int done = 0;
        while (!done) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        CHECK_OUT("Iallreduce+Test");
        memset(out, 0, n * sizeof(int));
        MPI_Ireduce(in, out, n, MPI_INT, sum, nprocs - 1, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (me == nprocs - 1) CHECK_OUT("Ireduce");
        memset(out, 0, n * sizeof(int));
        MPI_Allreduce_init(in, out, n, MPI_INT, sum, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        for (int k = 0; k < 2; k++) {
            memset(out, 0, n * sizeof(int));
            MPI_Start(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            CHECK_OUT("Allreduce_init");
        }
        MPI_Request_free(&req);
        free(in);
        free(out);
    }
    /* Not commutative: results in rank order. */
    int m[4], prod[4];
    matrix_of(me, m);
    MPI_Allreduce(m, prod, 1, mat, matmul, MPI_COMM_WORLD);
    expect_product(prod, nprocs);
    MPI_Request req;
    MPI_Iallreduce(m, prod, 1, mat, matmul, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    expect_product(prod, nprocs);
    MPI_Iscan(m, prod, 1, mat, matmul, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    expect_product(prod, me + 1);
    int a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
    MPI_Reduce_local(a, b, 3, MPI_INT, sum);
    CHECK(b[0] == 11 && b[1] == 22 && b[2] == 33, "Reduce_local %d %d %d", b[0], b[1], b[2]);
    CHECK(op_calls > 0, "the user functions never ran");

    /* Attribute callbacks. */
    int key;
    MPI_Comm_create_keyval(copy_fn, delete_fn, &key, NULL);
    MPI_Comm dup, dup2;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_attr(dup, key, &key);
    MPI_Comm_dup(dup, &dup2);
    CHECK(copy_calls == 1, "copy callback ran %ld times", copy_calls);
    MPI_Comm_free(&dup2);
    MPI_Comm_free(&dup);
    CHECK(delete_calls == 2, "delete callback ran %ld times", delete_calls);
    MPI_Comm_free_keyval(&key);

    /* An error handler that calls MPI. */
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(handler, &eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
    int v = 0;
    int rc = MPI_Send(&v, 1, MPI_INT, nprocs + 5, 0, MPI_COMM_WORLD);
    CHECK(rc != MPI_SUCCESS && handler_calls == 1, "rc %d, handler ran %ld times", rc, handler_calls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);

    MPI_Op_free(&sum);
    MPI_Op_free(&matmul);
    MPI_Type_free(&mat);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) printf("user_calls_mpi OK\n");
    MPI_Finalize();
    return 0;
}
