/* Error classes in MPICH's numbering: every predefined class up to
 * MPI_ERR_ERRHANDLER (80) and MPICH's MPIX classes (101-105) is its own
 * class and has a string; classes and codes the program adds lie above
 * MPI_ERR_LASTCODE, MPI_LASTUSEDCODE starts at MPI_ERR_LASTCODE and follows
 * them, and Error_class/Error_string/Remove_* agree on the new values. */
#include "check.h"

static void expect_class(int code, int cls) {
    int c = -1;
    CHECK_RC(MPI_Error_class(code, &c));
    CHECK(c == cls, "class of %d is %d, want %d", code, c, cls);
}

static int lastused(void) {
    int *v = NULL, flag = 0;
    CHECK_RC(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &v, &flag));
    CHECK(flag && v, "MPI_LASTUSEDCODE is set");
    return *v;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char s[MPI_MAX_ERROR_STRING];
    int len;

    CHECK(MPI_T_ERR_NOT_ACCESSIBLE == 79 && MPI_ERR_ERRHANDLER == 80, "MPICH's numbers");
    CHECK(MPIX_ERR_PROC_FAILED == 101 && MPIX_ERR_REVOKED == 103 && MPIX_ERR_NOREQ == 105, "MPIX numbers");
    CHECK(MPI_ERR_LASTCODE == 0x3fffffff, "MPI_ERR_LASTCODE 0x%x", MPI_ERR_LASTCODE);
    for (int c = 0; c <= MPI_ERR_ERRHANDLER; c++) {
        expect_class(c, c);
        CHECK_RC(MPI_Error_string(c, s, &len));
        CHECK(len > 0 && len == (int)strlen(s), "string of class %d", c);
    }
    for (int c = MPIX_ERR_PROC_FAILED; c <= MPIX_ERR_NOREQ; c++) expect_class(c, c);
    CHECK_RC(MPI_Error_string(MPI_ERR_ERRHANDLER, s, &len));
    CHECK(strstr(s, "errhandler") != NULL, "MPI_ERR_ERRHANDLER string '%s'", s);
    CHECK_RC(MPI_Error_string(MPI_T_ERR_NOT_ACCESSIBLE, s, &len));
    CHECK(strstr(s, "not accessible") != NULL, "MPI_T_ERR_NOT_ACCESSIBLE string '%s'", s);
    CHECK_RC(MPI_Error_string(MPIX_ERR_REVOKED, s, &len));
    CHECK(strstr(s, "revoked") != NULL, "MPIX_ERR_REVOKED string '%s'", s);

    /* Added values: above MPI_ERR_LASTCODE, tracked by MPI_LASTUSEDCODE. */
    CHECK(lastused() == MPI_ERR_LASTCODE, "initial MPI_LASTUSEDCODE %d", lastused());
    int cls, code1, code2, cls2, onpre;
    CHECK_RC(MPI_Add_error_class(&cls));
    CHECK(cls > MPI_ERR_LASTCODE, "added class %d", cls);
    CHECK(lastused() == cls, "MPI_LASTUSEDCODE %d after class %d", lastused(), cls);
    expect_class(cls, cls);
    CHECK_RC(MPI_Error_string(cls, s, &len));
    CHECK(len == 0 && s[0] == 0, "a new class has an empty string: '%s'", s);
    CHECK_RC(MPI_Add_error_code(cls, &code1));
    CHECK_RC(MPI_Add_error_code(cls, &code2));
    CHECK(code1 > MPI_ERR_LASTCODE && code2 > MPI_ERR_LASTCODE && code1 != code2 && code1 != cls, "codes %d %d", code1, code2);
    CHECK(lastused() >= code1 && lastused() >= code2, "MPI_LASTUSEDCODE %d after codes", lastused());
    expect_class(code1, cls);
    expect_class(code2, cls);
    /* A code of a predefined class, the new ones included. */
    CHECK_RC(MPI_Add_error_code(MPI_ERR_ERRHANDLER, &onpre));
    CHECK(onpre > MPI_ERR_LASTCODE, "code of a predefined class %d", onpre);
    expect_class(onpre, MPI_ERR_ERRHANDLER);
    CHECK_RC(MPI_Add_error_string(code1, "code one"));
    CHECK_RC(MPI_Add_error_string(cls, "my class"));
    CHECK_RC(MPI_Error_string(code1, s, &len));
    CHECK(strcmp(s, "code one") == 0 && len == 8, "string of code1 '%s'", s);
    CHECK_RC(MPI_Error_string(cls, s, &len));
    CHECK(strcmp(s, "my class") == 0, "string of the class '%s'", s);
    CHECK_RC(MPI_Add_error_class(&cls2));
    CHECK(cls2 > cls && cls2 > code2 && lastused() == cls2, "second class %d (last used %d)", cls2, lastused());

    /* An error raised with an added code reaches the program as that code. */
    int rc = MPI_Comm_call_errhandler(MPI_COMM_WORLD, code2);
    CHECK(rc == MPI_SUCCESS, "call_errhandler %d", rc);

    /* Values never handed out are not codes; removal in order. */
    int c = -1;
    CHECK(error_class(MPI_Error_class(cls2 + 1000, &c)) == MPI_ERR_ARG, "unknown value above the added ones");
    rc = MPI_Remove_error_class(cls);
    CHECK(error_class(rc) == MPI_ERR_ARG, "class with codes removed: %d", rc);
    CHECK_RC(MPI_Remove_error_string(code1));
    CHECK_RC(MPI_Remove_error_code(code1));
    CHECK_RC(MPI_Remove_error_code(code2));
    CHECK_RC(MPI_Remove_error_code(onpre));
    CHECK(error_class(MPI_Error_class(code1, &c)) == MPI_ERR_ARG, "removed code still has a class");
    CHECK_RC(MPI_Remove_error_string(cls));
    CHECK_RC(MPI_Remove_error_class(cls));
    CHECK_RC(MPI_Remove_error_class(cls2));
    CHECK(error_class(MPI_Error_class(cls, &c)) == MPI_ERR_ARG, "removed class still a class");
    rc = MPI_Remove_error_class(MPI_ERR_ERRHANDLER);
    CHECK(error_class(rc) == MPI_ERR_ARG, "a predefined class cannot be removed: %d", rc);
    /* Values are not handed out twice. */
    int again;
    CHECK_RC(MPI_Add_error_class(&again));
    CHECK(again > cls2 && lastused() == again, "class after removals %d", again);

    MPI_Finalize();
    if (rank == 0) printf("errh_classes OK\n");
    return 0;
}
