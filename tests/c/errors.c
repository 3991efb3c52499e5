/* Bad input with MPI_ERRORS_RETURN: every error comes back with the right
 * class, nothing crashes, and the library still works afterwards. */
#include "check.h"

static int handler_calls = 0, handler_code = 0;
static void my_handler(MPI_Comm *c, int *code, ...) { (void)c; handler_calls++; handler_code = *code; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK_RC(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    CHECK(eh == MPI_ERRORS_RETURN, "get_errhandler");
    int v = 1, rc;
    MPI_Status st;
    MPI_Request q;

    rc = MPI_Send(&v, 1, MPI_INT, size, 0, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_RANK, "rank=size gave %d", rc);
    rc = MPI_Send(&v, 1, MPI_INT, -5, 0, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_RANK, "rank=-5 gave %d", rc);
    rc = MPI_Send(&v, 1, MPI_INT, 0, -1, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_TAG, "tag=-1 gave %d", rc);
    rc = MPI_Recv(&v, 1, MPI_INT, 0, -7, MPI_COMM_WORLD, &st);
    CHECK(error_class(rc) == MPI_ERR_TAG, "recv tag=-7 gave %d", rc);
    rc = MPI_Send(&v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_COUNT, "count=-1 gave %d", rc);
    rc = MPI_Send(&v, 1, (MPI_Datatype)0x12345678, 0, 0, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_TYPE, "bad datatype gave %d", rc);
    rc = MPI_Send(&v, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_TYPE, "null datatype gave %d", rc);
    rc = MPI_Send(&v, 1, MPI_INT, 0, 0, (MPI_Comm)0x7abc);
    CHECK(error_class(rc) == MPI_ERR_COMM, "bad comm gave %d", rc);
    rc = MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_NULL);
    CHECK(error_class(rc) == MPI_ERR_COMM, "null comm gave %d", rc);
    q = (MPI_Request)0x2c00beef;
    rc = MPI_Wait(&q, &st);
    CHECK(error_class(rc) == MPI_ERR_REQUEST, "bad request gave %d", rc);
    rc = MPI_Send(NULL, 5, MPI_INT, 0, 0, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_BUFFER, "NULL buffer gave %d", rc);
    int root = 0;
    rc = MPI_Bcast(&v, 1, MPI_INT, size + 3, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_ROOT, "bad root gave %d", rc);
    (void)root;

    /* Truncation: 10 ints into room for 4. */
    int peer = rank ^ 1;
    if (peer < size) {
        int big[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, small[4] = {0};
        if (rank < peer) {
            CHECK_RC(MPI_Send(big, 10, MPI_INT, peer, 3, MPI_COMM_WORLD));
            /* and a large one for the rendezvous path */
            int *lb = calloc(100000, sizeof(int));
            CHECK_RC(MPI_Send(lb, 100000, MPI_INT, peer, 4, MPI_COMM_WORLD));
            free(lb);
        } else {
            rc = MPI_Recv(small, 4, MPI_INT, peer, 3, MPI_COMM_WORLD, &st);
            CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "truncation gave %d", rc);
            CHECK(small[3] == 3, "truncated data %d", small[3]);
            int *lb = malloc(1000 * sizeof(int));
            MPI_Irecv(lb, 1000, MPI_INT, peer, 4, MPI_COMM_WORLD, &q);
            rc = MPI_Wait(&q, &st);
            CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "large truncation gave %d", rc);
            free(lb);
        }
    }

    /* Error strings exist for every class. */
    char msg[MPI_MAX_ERROR_STRING];
    int len;
    CHECK_RC(MPI_Error_string(MPI_ERR_TRUNCATE, msg, &len));
    CHECK(len > 0 && strstr(msg, "truncat") != NULL, "error string '%s'", msg);

    /* A user error handler is called with the error code. */
    MPI_Errhandler mine;
    CHECK_RC(MPI_Comm_create_errhandler(my_handler, &mine));
    CHECK_RC(MPI_Comm_set_errhandler(MPI_COMM_WORLD, mine));
    rc = MPI_Send(&v, 1, MPI_INT, size + 1, 0, MPI_COMM_WORLD);
    CHECK(handler_calls == 1 && error_class(handler_code) == MPI_ERR_RANK, "user handler calls=%d code=%d", handler_calls, handler_code);
    CHECK_RC(MPI_Errhandler_free(&mine));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Still working. */
    int sum = 0, one = 1;
    CHECK_RC(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size, "allreduce after errors %d", sum);
    if (rank == 0) printf("errors OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
