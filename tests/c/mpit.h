/* Helpers of the tool-interface tests (mpit_*.c): MPI_T calls return
 * their error codes directly. */
#ifndef TEST_MPIT_H
#define TEST_MPIT_H
#include "check.h"

/* The call succeeds. */
#define T_OK(call) CHECK_RC(call)
/* The call fails with exactly `err`. */
#define T_ERR(call, err)                                                        \
    do {                                                                        \
        int rc_ = (call);                                                       \
        CHECK(rc_ == (err), "%s returned %d, expected %s", #call, rc_, #err);   \
    } while (0)

#endif
