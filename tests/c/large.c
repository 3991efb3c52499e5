/* Large messages: 64 MiB with MPI_Send, and (argument "huge") one message of
 * more than 2 GiB with the MPI_Count (_c) calls. */
#include "check.h"
#include <stdint.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int huge = argc > 1 && strcmp(argv[1], "huge") == 0;
    MPI_Count n = huge ? (MPI_Count)2200000000LL : (MPI_Count)(64 << 20);
    MPI_Status st;
    if (rank < 2) {
        unsigned char *b = malloc(n);
        CHECK(b != NULL, "malloc %ld", (long)n);
        if (rank == 0) {
            for (MPI_Count i = 0; i < n; i += 4096) b[i] = (unsigned char)(i / 4096 * 13);
            b[n - 1] = 0xab;
            if (huge) CHECK_RC(MPI_Send_c(b, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
            else CHECK_RC(MPI_Send(b, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
        } else {
            memset(b, 0, n);
            if (huge) CHECK_RC(MPI_Recv_c(b, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st));
            else CHECK_RC(MPI_Recv(b, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st));
            for (MPI_Count i = 0; i < n - 1; i += 4096) CHECK(b[i] == (unsigned char)(i / 4096 * 13), "byte %ld", (long)i);
            CHECK(b[n - 1] == 0xab, "last byte");
            MPI_Count c;
            CHECK_RC(MPI_Get_count_c(&st, MPI_BYTE, &c));
            CHECK(c == n, "count %ld", (long)c);
            int ci;
            MPI_Get_count(&st, MPI_BYTE, &ci);
            CHECK(huge ? ci == MPI_UNDEFINED : ci == n, "int count %d", ci);
        }
        free(b);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("large OK (%ld bytes)\n", (long)n);
    MPI_Finalize();
    return 0;
}
