/* Error handling: user error handlers invoked with the right class on bad
 * input, inherited by dup, Comm_call_errhandler, Errhandler_free while in
 * use, Add_error_class/code/string with Error_class/Error_string and
 * MPI_LASTUSEDCODE, error strings of every class, the default file error
 * handler (MPI_FILE_NULL). */
#include "check.h"

static int calls, last_code;
static MPI_Comm last_comm;

static void handler(MPI_Comm *comm, int *code, ...) {
    calls++;
    last_code = *code;
    last_comm = *comm;
}

static int file_calls;
static void fhandler(MPI_File *f, int *code, ...) {
    (void)f;
    file_calls++;
    last_code = *code;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, rc, cls;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Errhandler eh, got;
    CHECK_RC(MPI_Comm_create_errhandler(handler, &eh));
    MPI_Comm a, b;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_get_errhandler(a, &got);
    CHECK(got == MPI_ERRORS_ARE_FATAL, "default handler of a dup of world: %x", got);
    CHECK_RC(MPI_Comm_set_errhandler(a, eh));
    MPI_Comm_get_errhandler(a, &got);
    CHECK(got == eh, "get_errhandler");
    /* Freeing the handler object does not detach it. */
    MPI_Errhandler copy = eh;
    CHECK_RC(MPI_Errhandler_free(&copy));
    CHECK(copy == MPI_ERRHANDLER_NULL, "Errhandler_free resets the handle");

    /* Bad input goes to the handler with the right class. */
    int x = 0;
    rc = MPI_Send(&x, 1, MPI_INT, size, 0, a);
    CHECK(calls == 1 && last_comm == a, "handler called %d times", calls);
    CHECK(error_class(last_code) == MPI_ERR_RANK && error_class(rc) == MPI_ERR_RANK, "class %d / rc %d", error_class(last_code), rc);
    rc = MPI_Send(&x, -1, MPI_INT, 0, 0, a);
    CHECK(calls == 2 && error_class(last_code) == MPI_ERR_COUNT, "count error class %d", error_class(last_code));
    rc = MPI_Send(&x, 1, MPI_INT, 0, -5, a);
    CHECK(calls == 3 && error_class(last_code) == MPI_ERR_TAG, "tag error class %d", error_class(last_code));
    MPI_Comm sub;
    rc = MPI_Comm_split(a, -3, 0, &sub);
    CHECK(calls == 4 && error_class(last_code) == MPI_ERR_ARG, "split error class %d", error_class(last_code));

    /* Inherited by dup. */
    CHECK_RC(MPI_Comm_dup(a, &b));
    MPI_Comm_get_errhandler(b, &got);
    CHECK(got == eh, "dup inherits the handler");
    rc = MPI_Recv(&x, 1, MPI_INT, size + 3, 0, b, MPI_STATUS_IGNORE);
    CHECK(calls == 5 && last_comm == b && error_class(last_code) == MPI_ERR_RANK, "handler on the dup");

    /* Calling it directly. */
    CHECK_RC(MPI_Comm_call_errhandler(b, MPI_ERR_OTHER));
    CHECK(calls == 6 && last_code == MPI_ERR_OTHER, "call_errhandler");

    /* User classes, codes and strings. */
    int myclass, mycode, mycode2, len;
    char s[MPI_MAX_ERROR_STRING];
    CHECK_RC(MPI_Add_error_class(&myclass));
    CHECK_RC(MPI_Add_error_code(myclass, &mycode));
    CHECK_RC(MPI_Add_error_code(MPI_ERR_ARG, &mycode2));
    CHECK(myclass > MPI_ERR_LASTCODE || (myclass != mycode && mycode != mycode2), "distinct values");
    CHECK_RC(MPI_Add_error_string(mycode, "my own error"));
    CHECK_RC(MPI_Add_error_string(myclass, "my own class"));
    CHECK_RC(MPI_Error_class(mycode, &cls));
    CHECK(cls == myclass, "class of my code %d", cls);
    CHECK_RC(MPI_Error_class(mycode2, &cls));
    CHECK(cls == MPI_ERR_ARG, "class of a code of ERR_ARG: %d", cls);
    CHECK_RC(MPI_Error_class(myclass, &cls));
    CHECK(cls == myclass, "a class is its own class");
    MPI_Error_string(mycode, s, &len);
    CHECK(strcmp(s, "my own error") == 0 && len == 12, "string %s", s);
    MPI_Error_string(myclass, s, &len);
    CHECK(strcmp(s, "my own class") == 0, "class string %s", s);
    CHECK_RC(MPI_Add_error_string(mycode, "replaced"));
    MPI_Error_string(mycode, s, &len);
    CHECK(strcmp(s, "replaced") == 0, "replaced string %s", s);
    int *last, flag;
    CHECK_RC(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(flag && *last >= mycode && *last >= myclass && *last >= mycode2, "LASTUSEDCODE %d", *last);
    CHECK_RC(MPI_Comm_call_errhandler(a, mycode));
    CHECK(calls == 7 && last_code == mycode, "user code through the handler: %d", last_code);

    MPI_Comm_set_errhandler(a, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Add_error_string(MPI_ERR_ARG, "no");
    CHECK(rc != MPI_SUCCESS, "changing a predefined string succeeded");
    rc = MPI_Add_error_code(mycode, &x);
    CHECK(rc != MPI_SUCCESS, "a code used as a class");
    rc = MPI_Comm_set_errhandler(a, (MPI_Errhandler)0x12345);
    CHECK(error_class(rc) == MPI_ERR_ARG, "bad errhandler handle: class %d", error_class(rc));
    CHECK(calls == 7, "no handler call under MPI_ERRORS_RETURN");

    /* Every predefined class has its own string. */
    char prev[MPI_MAX_ERROR_STRING] = "";
    for (int c = 0; c <= 78; c++) {
        if (c == 54) continue; /* unassigned in MPICH */
        CHECK_RC(MPI_Error_string(c, s, &len));
        CHECK(len > 0 && (int)strlen(s) == len, "string of class %d", c);
        CHECK(strcmp(s, prev) != 0 || c >= 59, "class %d has the string of the one before: %s", c, s);
        CHECK_RC(MPI_Error_class(c, &cls));
        CHECK(cls == c, "Error_class(%d) = %d", c, cls);
        strcpy(prev, s);
    }

    /* Default error handler of files. */
    MPI_Errhandler feh;
    CHECK_RC(MPI_File_get_errhandler(MPI_FILE_NULL, &got));
    CHECK(got == MPI_ERRORS_RETURN, "default file handler");
    CHECK_RC(MPI_File_create_errhandler(fhandler, &feh));
    CHECK_RC(MPI_File_set_errhandler(MPI_FILE_NULL, feh));
    CHECK_RC(MPI_File_call_errhandler(MPI_FILE_NULL, MPI_ERR_IO));
    CHECK(file_calls == 1 && last_code == MPI_ERR_IO, "file handler");
    rc = MPI_Comm_set_errhandler(a, feh);
    CHECK(error_class(rc) == MPI_ERR_ARG, "a file handler on a communicator: class %d", error_class(rc));
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&feh);

    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("errh_user OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
