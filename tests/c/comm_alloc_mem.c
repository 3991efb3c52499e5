/* MPI_Alloc_mem / MPI_Free_mem (chapter 8.2): memory usable as a message
 * buffer on a ring, size 0, and the errors: negative size, a size no
 * allocator grants, a freed info object. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int n = 1 << 18;
    int *a = NULL, *b = NULL;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_minimum_memory_alignment", "64");
    CHECK_RC(MPI_Alloc_mem(n * sizeof(int), info, &a));
    CHECK_RC(MPI_Alloc_mem(n * sizeof(int), MPI_INFO_NULL, &b));
    CHECK(a && b && a != b, "Alloc_mem returned %p and %p", (void *)a, (void *)b);
    for (int i = 0; i < n; i++) a[i] = rank * 7 + i;
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    CHECK_RC(MPI_Sendrecv(a, n, MPI_INT, right, 0, b, n, MPI_INT, left, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < n; i += 4099) CHECK(b[i] == left * 7 + i, "b[%d] = %d", i, b[i]);
    CHECK_RC(MPI_Free_mem(a));
    CHECK_RC(MPI_Free_mem(b));
    void *z = NULL;
    CHECK_RC(MPI_Alloc_mem(0, MPI_INFO_NULL, &z));
    CHECK(z != NULL, "size 0 gave NULL");
    CHECK_RC(MPI_Free_mem(z));

    void *p = NULL;
    int rc = MPI_Alloc_mem(-1, MPI_INFO_NULL, &p);
    CHECK(error_class(rc) == MPI_ERR_SIZE, "negative size: class %d", error_class(rc));
    rc = MPI_Alloc_mem((MPI_Aint)1 << 62, MPI_INFO_NULL, &p);
    CHECK(error_class(rc) == MPI_ERR_NO_MEM, "2^62 bytes: class %d", error_class(rc));
    MPI_Info dead = info;
    MPI_Info_free(&info);
    rc = MPI_Alloc_mem(8, dead, &p);
    CHECK(error_class(rc) == MPI_ERR_INFO, "freed info: class %d", error_class(rc));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("comm_alloc_mem OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
