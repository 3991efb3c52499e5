/* Publishes a port under the name argv[1] and leaves it published, so the
 * test can look at the name service's file (it holds the port's secret). */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    CHECK(argc >= 2, "usage: dpm_publish <service>");
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        char port[MPI_MAX_PORT_NAME];
        CHECK_RC(MPI_Open_port(MPI_INFO_NULL, port));
        CHECK_RC(MPI_Publish_name(argv[1], MPI_INFO_NULL, port));
        CHECK_RC(MPI_Close_port(port));
        printf("dpm_publish OK\n");
    }
    MPI_Finalize();
    return 0;
}
