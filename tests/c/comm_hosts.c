/* MPI_Comm_split_type over several hosts: run with MPICORE_FAKE_HOSTS=k,
 * which gives the ranks of this machine k host names (blocks of
 * consecutive ranks: rank * k / size) joined by TCP. The shared-memory
 * split must give exactly the ranks of this rank's host, ordered by key,
 * MPI_COMM_TYPE_HW_GUIDED with "mpi_shared_memory" the same (and the hint
 * is the new communicator's); the node
 * communicators' leaders form a communicator across hosts; processor
 * names agree with the split. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, n, r;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *k_env = getenv("MPICORE_FAKE_HOSTS");
    CHECK(k_env != NULL, "run with MPICORE_FAKE_HOSTS set");
    int k = atoi(k_env);
    int host = rank * k / size;
    int first = -1, count = 0;
    for (int q = 0; q < size; q++)
        if (q * k / size == host) {
            if (first < 0) first = q;
            count++;
        }

    MPI_Comm node;
    CHECK_RC(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, -rank, MPI_INFO_NULL, &node));
    MPI_Comm_size(node, &n);
    MPI_Comm_rank(node, &r);
    CHECK(n == count, "host %d: node communicator of %d ranks, expected %d", host, n, count);
    CHECK(r == first + count - 1 - rank, "host %d: rank %d in the node communicator (keys reverse)", host, r);
    int sum = 0;
    CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, node));
    CHECK(sum == count * first + count * (count - 1) / 2, "sum of the world ranks on host %d: %d", host, sum);

    /* Same host name for every member. */
    char name[MPI_MAX_PROCESSOR_NAME], other[MPI_MAX_PROCESSOR_NAME];
    int len;
    MPI_Get_processor_name(name, &len);
    memcpy(other, name, sizeof name);
    CHECK_RC(MPI_Bcast(other, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, node));
    CHECK(strcmp(name, other) == 0, "processor names differ within a node: %s / %s", name, other);

    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory");
    MPI_Comm guided;
    CHECK_RC(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, info, &guided));
    MPI_Info_free(&info);
    /* The hints given to the split are the new communicator's. */
    MPI_Info used;
    CHECK_RC(MPI_Comm_get_info(guided, &used));
    char v[MPI_MAX_INFO_VAL];
    int vlen = MPI_MAX_INFO_VAL, found = 0;
    MPI_Info_get_string(used, "mpi_hw_resource_type", &vlen, v, &found);
    CHECK(found && strcmp(v, "mpi_shared_memory") == 0, "hint of split_type on the new communicator: found %d", found);
    MPI_Info_free(&used);
    int res;
    MPI_Comm_compare(node, guided, &res);
    CHECK(res == (count > 1 ? MPI_SIMILAR : MPI_CONGRUENT), "HW_GUIDED shared memory against SHARED: %d (expected the same ranks in the other order)", res);
    MPI_Comm_free(&guided);

    /* Leaders of the nodes (node rank 0 is the last world rank of each
     * host here) talk across hosts. */
    MPI_Comm leaders;
    CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, r == 0 ? 0 : MPI_UNDEFINED, rank, &leaders));
    CHECK((r == 0) == (leaders != MPI_COMM_NULL), "leaders communicator");
    if (leaders != MPI_COMM_NULL) {
        MPI_Comm_size(leaders, &n);
        CHECK(n == k, "%d leaders, expected %d hosts", n, k);
        int hsum = 0;
        CHECK_RC(MPI_Allreduce(&host, &hsum, 1, MPI_INT, MPI_SUM, leaders));
        CHECK(hsum == k * (k - 1) / 2, "sum of host numbers %d", hsum);
        MPI_Comm_free(&leaders);
    }
    MPI_Comm_free(&node);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("comm_hosts OK on %d ranks, %d hosts\n", size, k);
    MPI_Finalize();
    return 0;
}
