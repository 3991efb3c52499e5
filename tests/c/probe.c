/* Probe, Iprobe and the matched probes (Mprobe/Improbe/Mrecv/Imrecv). */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Status st;
    if (rank != 0) {
        /* Each sender: one small and one large message, tags 1 and 2. */
        int n = 10 * rank;
        int *small = malloc(n * sizeof(int));
        for (int i = 0; i < n; i++) small[i] = rank + i;
        MPI_Send(small, n, MPI_INT, 0, 1, MPI_COMM_WORLD);
        int big = 50000 + rank;
        double *d = malloc(big * sizeof(double));
        for (int i = 0; i < big; i++) d[i] = rank * 0.5 + i;
        MPI_Send(d, big, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD);
        free(small); free(d);
    } else {
        /* Probe sizes the buffer; then receive exactly that message. */
        for (int k = 1; k < size; k++) {
            CHECK_RC(MPI_Probe(MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &st));
            int n, src = st.MPI_SOURCE;
            MPI_Get_count(&st, MPI_INT, &n);
            CHECK(n == 10 * src, "probe count %d from %d", n, src);
            int *buf = malloc(n * sizeof(int));
            CHECK_RC(MPI_Recv(buf, n, MPI_INT, src, 1, MPI_COMM_WORLD, &st));
            for (int i = 0; i < n; i++) CHECK(buf[i] == src + i, "value");
            free(buf);
        }
        /* Matched probe: the message is ours even if another receive
         * with wildcards is posted afterwards. */
        for (int k = 1; k < size; k++) {
            MPI_Message m;
            int flag = 0;
            while (!flag) CHECK_RC(MPI_Improbe(MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &flag, &m, &st));
            int n, src = st.MPI_SOURCE;
            MPI_Get_count(&st, MPI_DOUBLE, &n);
            CHECK(n == 50000 + src, "mprobe count %d", n);
            double *d = malloc(n * sizeof(double));
            if (k % 2) {
                CHECK_RC(MPI_Mrecv(d, n, MPI_DOUBLE, &m, &st));
            } else {
                MPI_Request q;
                CHECK_RC(MPI_Imrecv(d, n, MPI_DOUBLE, &m, &q));
                CHECK_RC(MPI_Wait(&q, &st));
            }
            CHECK(m == MPI_MESSAGE_NULL, "message handle not reset");
            CHECK(st.MPI_SOURCE == src && st.MPI_TAG == 2, "mrecv status");
            for (int i = 0; i < n; i++) CHECK(d[i] == src * 0.5 + i, "mrecv value %d", i);
            free(d);
        }
        /* Iprobe with nothing there. */
        int flag = 1;
        CHECK_RC(MPI_Iprobe(MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &flag, &st));
        CHECK(!flag, "iprobe found a message that was never sent");
        /* Probes of PROC_NULL. */
        MPI_Message m;
        CHECK_RC(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &m, &st));
        CHECK(m == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL, "mprobe proc null");
        int x = 9;
        CHECK_RC(MPI_Mrecv(&x, 1, MPI_INT, &m, &st));
        CHECK(x == 9 && st.MPI_SOURCE == MPI_PROC_NULL, "mrecv no proc");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("probe OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
