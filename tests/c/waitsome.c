/* Waitany/Waitsome/Testany/Testsome/Testall: rank 0 posts receives from
 * every other rank; senders send in a staggered order; every message must
 * be reported exactly once, with the right status, and arrays must end up
 * all MPI_REQUEST_NULL. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int PER = 4;
    if (rank == 0) {
        int total = (size - 1) * PER;
        for (int variant = 0; variant < 3; variant++) {
            int *vals = malloc(total * sizeof(int));
            MPI_Request *q = malloc(total * sizeof(MPI_Request));
            MPI_Status *st = malloc(total * sizeof(MPI_Status));
            int *idx = malloc(total * sizeof(int));
            int *seen = calloc(total, sizeof(int));
            for (int s = 1; s < size; s++)
                for (int k = 0; k < PER; k++)
                    CHECK_RC(MPI_Irecv(&vals[(s - 1) * PER + k], 1, MPI_INT, s, 10 * variant + k, MPI_COMM_WORLD, &q[(s - 1) * PER + k]));
            int done = 0;
            MPI_Barrier(MPI_COMM_WORLD); /* senders start now */
            while (done < total) {
                int out = 0;
                if (variant == 0) {
                    CHECK_RC(MPI_Waitsome(total, q, &out, idx, st));
                } else if (variant == 1) {
                    int i;
                    CHECK_RC(MPI_Waitany(total, q, &i, &st[0]));
                    idx[0] = i;
                    out = 1;
                } else {
                    int flag = 0;
                    CHECK_RC(MPI_Testsome(total, q, &out, idx, st));
                    if (out == 0) {
                        int i;
                        CHECK_RC(MPI_Testany(total, q, &i, &flag, &st[0]));
                        if (flag && i != MPI_UNDEFINED) { idx[0] = i; out = 1; }
                    }
                }
                CHECK(out != MPI_UNDEFINED, "undefined while %d pending", total - done);
                for (int j = 0; j < out; j++) {
                    int i = idx[j];
                    CHECK(!seen[i], "request %d reported twice", i);
                    seen[i] = 1;
                    int s = i / PER + 1, k = i % PER;
                    CHECK(q[i] == MPI_REQUEST_NULL, "completed request not nulled");
                    CHECK(vals[i] == s * 100 + k, "value %d for request %d", vals[i], i);
                    CHECK(st[variant == 1 ? 0 : j].MPI_SOURCE == s, "status source");
                }
                done += out;
            }
            /* All null now: Waitany says UNDEFINED, Testall says done. */
            int i, flag;
            CHECK_RC(MPI_Waitany(total, q, &i, MPI_STATUS_IGNORE));
            CHECK(i == MPI_UNDEFINED, "waitany on null requests gave %d", i);
            CHECK_RC(MPI_Testall(total, q, &flag, MPI_STATUSES_IGNORE));
            CHECK(flag, "testall on null requests");
            int out;
            CHECK_RC(MPI_Waitsome(total, q, &out, idx, MPI_STATUSES_IGNORE));
            CHECK(out == MPI_UNDEFINED, "waitsome on null requests gave %d", out);
            free(vals); free(q); free(st); free(idx); free(seen);
        }
    } else {
        for (int variant = 0; variant < 3; variant++) {
            MPI_Barrier(MPI_COMM_WORLD);
            for (int k = PER - 1; k >= 0; k--) {
                int v = rank * 100 + k;
                CHECK_RC(MPI_Send(&v, 1, MPI_INT, 0, 10 * variant + k, MPI_COMM_WORLD));
            }
        }
    }
    /* Testall completing everything at once. */
    MPI_Request q[2];
    int a = rank, b = -1, flag = 0;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Irecv(&b, 1, MPI_INT, prev, 900, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(&a, 1, MPI_INT, next, 900, MPI_COMM_WORLD, &q[1]);
    while (!flag) CHECK_RC(MPI_Testall(2, q, &flag, MPI_STATUSES_IGNORE));
    CHECK(b == prev && q[0] == MPI_REQUEST_NULL && q[1] == MPI_REQUEST_NULL, "testall");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("waitsome OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
