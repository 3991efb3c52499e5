/* Conversions between C and Fortran statuses (MPI_Status_c2f, f2c, c2f08,
 * f082c, f082f, f2f08) of a status a real receive filled in, and the
 * MPI_F_STATUS_IGNORE family: round trips keep source, tag, count and the
 * cancelled flag; the Fortran fields sit at MPI_F_SOURCE/TAG/ERROR;
 * NULL and the ignore constants are refused with MPI_ERR_ARG. Needs 2
 * ranks or more. Prints "status_f OK". */
#include "check.h"
#include <stdio.h>
#include <string.h>



int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int data[6] = {1, 2, 3, 4, 5, 6}, got[6];
    MPI_Status st, back;
    if (rank == 0) {
        MPI_Send(data, 6, MPI_INT, 1, 77, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Recv(got, 6, MPI_INT, 0, 77, MPI_COMM_WORLD, &st);
        MPI_Fint f[MPI_F_STATUS_SIZE], f2[MPI_F_STATUS_SIZE];
        MPI_F08_status f08;
        int count = -1, cancelled = -1;
        CHECK(MPI_Status_c2f(&st, f) == MPI_SUCCESS, "c2f");
        CHECK(f[MPI_F_SOURCE] == 0 && f[MPI_F_TAG] == 77 && f[MPI_F_ERROR] == st.MPI_ERROR, "fortran fields %d %d %d", f[MPI_F_SOURCE], f[MPI_F_TAG], f[MPI_F_ERROR]);
        memset(&back, 0xff, sizeof back);
        CHECK(MPI_Status_f2c(f, &back) == MPI_SUCCESS, "f2c");
        MPI_Get_count(&back, MPI_INT, &count);
        CHECK(back.MPI_SOURCE == 0 && back.MPI_TAG == 77 && count == 6, "round trip source %d tag %d count %d", back.MPI_SOURCE, back.MPI_TAG, count);
        MPI_Status_set_cancelled(&st, 1);
        CHECK(MPI_Status_c2f08(&st, &f08) == MPI_SUCCESS, "c2f08");
        CHECK(f08.MPI_SOURCE == 0 && f08.MPI_TAG == 77, "f08 fields %d %d", f08.MPI_SOURCE, f08.MPI_TAG);
        CHECK(MPI_Status_f082f(&f08, f2) == MPI_SUCCESS && memcmp(f2, &f08, sizeof f2) == 0, "f082f");
        memset(&f08, 0, sizeof f08);
        CHECK(MPI_Status_f2f08(f2, &f08) == MPI_SUCCESS && f08.MPI_TAG == 77, "f2f08");
        memset(&back, 0, sizeof back);
        CHECK(MPI_Status_f082c(&f08, &back) == MPI_SUCCESS, "f082c");
        MPI_Get_count(&back, MPI_INT, &count);
        MPI_Test_cancelled(&back, &cancelled);
        CHECK(count == 6 && cancelled == 1 && back.MPI_TAG == 77, "f08 round trip count %d cancelled %d", count, cancelled);
        CHECK(error_class(MPI_Status_c2f(MPI_STATUS_IGNORE, f)) == MPI_ERR_ARG, "c2f of MPI_STATUS_IGNORE");
        CHECK(error_class(MPI_Status_f2c(MPI_F_STATUS_IGNORE, &back)) == MPI_ERR_ARG, "f2c of MPI_F_STATUS_IGNORE");
        CHECK(error_class(MPI_Status_f2c(f, NULL)) == MPI_ERR_ARG, "f2c to NULL");
        CHECK(error_class(MPI_Status_f082c(MPI_F08_STATUS_IGNORE, &back)) == MPI_ERR_ARG, "f082c of MPI_F08_STATUS_IGNORE");
        CHECK(MPI_F_STATUS_IGNORE != NULL && (void *)MPI_F_STATUS_IGNORE != (void *)MPI_F_STATUSES_IGNORE, "distinct constants");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("status_f OK\n");
    MPI_Finalize();
    return 0;
}
