/* Multi-host failure tests: every rank prints "rank R pid P ppid Q on HOST"
 * (Q is its proxy or launcher); rank argv[1], if given, then kills itself
 * with SIGKILL. The others wait for a message from that rank (or from the
 * last rank) that never comes; no connection to it is ever made, so only the
 * launcher can tell that it is gone. */
#include "check.h"
#include <signal.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, v = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    int victim = argc > 1 ? atoi(argv[1]) : -1;
    printf("rank %d pid %d ppid %d on %s\n", rank, (int)getpid(), (int)getppid(), host);
    fflush(stdout);
    if (rank == victim) {
        usleep(300000);
        kill(getpid(), SIGKILL);
    }
    MPI_Recv(&v, 1, MPI_INT, victim >= 0 ? victim : size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("UNREACHABLE\n");
    MPI_Finalize();
    return 0;
}
