/* MPI_Comm_spawn: two parents spawn two copies of this program ("child"),
 * parent 0 sends each child an int, both sides disconnect. The spawned job
 * must trace itself apart from its parents (a directory of its own). */
#include <mpi.h>
#include <stddef.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm parent, inter;
    int rank, v = 7;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_get_parent(&parent);
    if (parent == MPI_COMM_NULL) {
        char *args[] = {"child", NULL};
        MPI_Comm_spawn(argv[0], args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE);
        if (rank == 0) {
            MPI_Send(&v, 1, MPI_INT, 0, 5, inter);
            MPI_Send(&v, 1, MPI_INT, 1, 5, inter);
        }
        MPI_Comm_disconnect(&inter);
    } else {
        MPI_Recv(&v, 1, MPI_INT, 0, 5, parent, MPI_STATUS_IGNORE);
        MPI_Comm_disconnect(&parent);
    }
    MPI_Finalize();
    return v == 7 ? 0 : 1;
}
