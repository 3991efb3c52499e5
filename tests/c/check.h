/* Shared helpers of the C test programs: CHECK prints what failed where and
 * exits non-zero, so the harness sees the failure and the message. */
#ifndef TEST_CHECK_H
#define TEST_CHECK_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((unused)) static int test_rank(void) {
    int r = -1, init = 0;
    MPI_Initialized(&init);
    if (init) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "CHECK FAILED rank %d %s:%d: %s: ", test_rank(),   \
                    __FILE__, __LINE__, #cond);                                 \
            fprintf(stderr, __VA_ARGS__);                                       \
            fprintf(stderr, "\n");                                              \
            exit(3);                                                            \
        }                                                                       \
    } while (0)

#define CHECK_RC(call)                                                          \
    do {                                                                        \
        int rc_ = (call);                                                       \
        CHECK(rc_ == MPI_SUCCESS, "%s returned %d", #call, rc_);                \
    } while (0)

/* A memory figure of this process in kB (-1 if unknown) from
 * /proc/self/status: "VmRSS:" (resident now) or "VmHWM:" (peak). */
__attribute__((unused)) static long test_status_kb(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0 && sscanf(line + n, " %ld", &kb) == 1) break;
    if (f) fclose(f);
    return kb;
}

/* Resident memory of this process in kB (-1 if unknown), for leak checks. */
__attribute__((unused)) static long test_rss_kb(void) { return test_status_kb("VmRSS:"); }

/* A status for a call that may write it: every byte garbage and MPI_ERROR
 * STATUS_MARK, so that a test sees which fields the call wrote. */
#define STATUS_MARK 12345
__attribute__((unused)) static MPI_Status marked_status(void) {
    MPI_Status s;
    memset(&s, 0x5a, sizeof s);
    s.MPI_ERROR = STATUS_MARK;
    return s;
}

__attribute__((unused)) static int error_class(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}
#endif
