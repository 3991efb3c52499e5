/* Simultaneous connects (run with MPICORE_FAKE_HOSTS): every rank starts by
 * sending a burst of numbered messages of changing sizes to every rank on
 * another host, before anyone receives, so both ranks of a pair open a
 * connection at once and the higher one moves its records to the lower
 * one's connection in the middle of its burst. Every burst must arrive
 * complete and in order; afterwards each rank prints how many sockets it
 * holds, which the test bounds (one connection per remote peer, plus the
 * listener and the launcher's and wake-up sockets). */
#include "check.h"
#include <dirent.h>
#include <unistd.h>

static int count_sockets(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    char path[300], target[64];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(path, target, sizeof target - 1);
        if (k > 0) {
            target[k] = 0;
            if (strncmp(target, "socket:", 7) == 0) n++;
        }
    }
    closedir(d);
    return n;
}

enum { N = 2000, MAXN = 600 };

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, len;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char me[MPI_MAX_PROCESSOR_NAME], *hosts = malloc((size_t)size * MPI_MAX_PROCESSOR_NAME);
    MPI_Get_processor_name(me, &len);
    /* (The host names travel through shared memory and TCP alike; the
     * bursts below are the first TCP traffic of every pair.) */
    int *remote = calloc(size, sizeof(int)), nremote = 0, buf[MAXN];
    for (int i = 0; i < N; i++) {
        int n = 3 + (i * 131) % (MAXN - 3);
        buf[0] = rank;
        buf[1] = i;
        buf[n - 1] = -i;
        for (int p = 0; p < size; p++)
            if (p != rank) CHECK_RC(MPI_Send(buf, n, MPI_INT, p, 7, MPI_COMM_WORLD));
    }
    for (int p = 0; p < size; p++) {
        if (p == rank) continue;
        for (int i = 0; i < N; i++) {
            int n = 3 + (i * 131) % (MAXN - 3), got;
            MPI_Status st;
            CHECK_RC(MPI_Recv(buf, MAXN, MPI_INT, p, 7, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_INT, &got);
            CHECK(got == n && buf[0] == p && buf[1] == i && buf[n - 1] == -i, "from %d message %d: count %d (want %d), %d %d .. %d",
                  p, i, got, n, buf[0], buf[1], buf[n - 1]);
        }
    }
    MPI_Allgather(me, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
    for (int p = 0; p < size; p++) remote[p] = strcmp(hosts + (size_t)p * MPI_MAX_PROCESSOR_NAME, me) != 0, nremote += remote[p];
    /* Let the last records of given-up connections go out (and be read). */
    for (int round = 0; round < 3; round++) MPI_Barrier(MPI_COMM_WORLD);
    int mine[2] = {count_sockets() - nremote, -(count_sockets() - nremote)}, ext[2];
    CHECK_RC(MPI_Reduce(mine, ext, 2, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD));
    if (rank == 0) printf("tcp_switch OK on %d ranks: sockets beyond one per remote peer: %d to %d\n", size, -ext[1], ext[0]);
    free(hosts);
    free(remote);
    MPI_Finalize();
    return 0;
}
