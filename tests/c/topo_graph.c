/* Graph and distributed-graph topologies: Graph_create and its queries,
 * Dist_graph_create_adjacent and Dist_graph_create (weighted and
 * MPI_UNWEIGHTED), neighbor queries, and neighborhood collectives on them
 * (allgather, allgatherv, alltoall, alltoallw, nonblocking) with value
 * checks; bad input. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, n, t, rc;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Graph: a ring where node i is linked to i-1 and i+1 (as a list that
     * may repeat a neighbor on 1 or 2 nodes). */
    int *index = malloc(sizeof(int) * (size + 1)), *edges = malloc(sizeof(int) * 2 * size);
    for (int i = 0; i < size; i++) {
        index[i] = 2 * (i + 1);
        edges[2 * i] = (i + size - 1) % size;
        edges[2 * i + 1] = (i + 1) % size;
    }
    index[size] = 2 * size; /* an extra node without edges, for a bad call */
    MPI_Comm g;
    CHECK_RC(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &g));
    MPI_Topo_test(g, &t);
    CHECK(t == MPI_GRAPH, "topo_test %d", t);
    int nn, ne;
    MPI_Graphdims_get(g, &nn, &ne);
    CHECK(nn == size && ne == 2 * size, "graphdims %d %d", nn, ne);
    int *gi = malloc(sizeof(int) * size), *ge = malloc(sizeof(int) * 2 * size);
    MPI_Graph_get(g, size, 2 * size, gi, ge);
    CHECK(memcmp(gi, index, sizeof(int) * size) == 0 && memcmp(ge, edges, sizeof(int) * 2 * size) == 0, "graph_get");
    MPI_Graph_neighbors_count(g, rank, &n);
    CHECK(n == 2, "neighbors count %d", n);
    int nb[2];
    MPI_Graph_neighbors(g, rank, 2, nb);
    CHECK(nb[0] == (rank + size - 1) % size && nb[1] == (rank + 1) % size, "graph neighbors %d %d", nb[0], nb[1]);
    MPI_Graph_map(MPI_COMM_WORLD, size, index, edges, &n);
    CHECK(n == rank, "graph_map %d", n);
    /* Allgather over the graph neighbors. */
    int ag[2] = {-1, -1};
    CHECK_RC(MPI_Neighbor_allgather(&rank, 1, MPI_INT, ag, 1, MPI_INT, g));
    CHECK(ag[0] == nb[0] && ag[1] == nb[1], "graph allgather %d %d", ag[0], ag[1]);
    MPI_Comm_free(&g);

    /* Distributed graph, adjacent form: i -> i+1 (weight i+1) and
     * i -> i+2 (weight 100+i); in-edges from i-1 and i-2. */
    int dst[2] = {(rank + 1) % size, (rank + 2) % size}, dw[2] = {rank + 1, 100 + rank};
    int srcs[2] = {(rank + size - 1) % size, (rank + size - 2) % size};
    int sw[2] = {(rank + size - 1) % size + 1, 100 + (rank + size - 2) % size};
    MPI_Comm dg;
    CHECK_RC(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, sw, 2, dst, dw, MPI_INFO_NULL, 0, &dg));
    MPI_Topo_test(dg, &t);
    CHECK(t == MPI_DIST_GRAPH, "topo_test dist %d", t);
    int indeg, outdeg, weighted;
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    CHECK(indeg == 2 && outdeg == 2 && weighted, "counts %d %d %d", indeg, outdeg, weighted);
    int qs[2], qsw[2], qd[2], qdw[2];
    MPI_Dist_graph_neighbors(dg, 2, qs, qsw, 2, qd, qdw);
    CHECK(qs[0] == srcs[0] && qs[1] == srcs[1] && qsw[0] == sw[0] && qsw[1] == sw[1], "sources");
    CHECK(qd[0] == dst[0] && qd[1] == dst[1] && qdw[0] == dw[0] && qdw[1] == dw[1], "destinations");
    /* alltoall: block k goes to destination k. */
    int sb[2] = {rank * 10 + 0, rank * 10 + 1}, rb[2] = {-1, -1};
    CHECK_RC(MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, dg));
    CHECK(rb[0] == srcs[0] * 10 + 0 && rb[1] == srcs[1] * 10 + 1, "dist alltoall %d %d", rb[0], rb[1]);
    /* allgatherv: 1 int from the first source, 2 (the same) from the second,
     * placed in reverse. */
    int two[2] = {rank, rank}, rv[3] = {-1, -1, -1}, rc2[2] = {1, 2}, dis[2] = {2, 0};
    /* Every process sends 2 ints and expects 1 from source 0: mismatched,
     * so send 1 int to everyone instead and receive 1 and 1. */
    int rc1[2] = {1, 1};
    (void)rc2;
    CHECK_RC(MPI_Neighbor_allgatherv(two, 1, MPI_INT, rv, rc1, dis, MPI_INT, dg));
    CHECK(rv[2] == srcs[0] && rv[0] == srcs[1] && rv[1] == -1, "allgatherv %d %d %d", rv[0], rv[1], rv[2]);
    /* alltoallw: a double to the first destination, an int to the second. */
    struct { double d; int i; } wsend = {rank + 0.5, -rank}, wrecv = {-1, -1};
    int wsc[2] = {1, 1}, wrc[2] = {1, 1};
    MPI_Aint wsd[2] = {0, sizeof(double)}, wrd[2] = {0, sizeof(double)};
    MPI_Datatype wst[2] = {MPI_DOUBLE, MPI_INT}, wrt[2] = {MPI_DOUBLE, MPI_INT};
    CHECK_RC(MPI_Neighbor_alltoallw(&wsend, wsc, wsd, wst, &wrecv, wrc, wrd, wrt, dg));
    CHECK(wrecv.d == srcs[0] + 0.5 && wrecv.i == -srcs[1], "alltoallw %g %d", wrecv.d, wrecv.i);
    /* Nonblocking allgather and alltoallw together. */
    MPI_Request q[2];
    MPI_Status sts[2];
    int ag2[2] = {-1, -1};
    CHECK_RC(MPI_Ineighbor_allgather(&rank, 1, MPI_INT, ag2, 1, MPI_INT, dg, &q[0]));
    wrecv.d = -1;
    wrecv.i = -1;
    CHECK_RC(MPI_Ineighbor_alltoallw(&wsend, wsc, wsd, wst, &wrecv, wrc, wrd, wrt, dg, &q[1]));
    CHECK_RC(MPI_Waitall(2, q, sts));
    CHECK(ag2[0] == srcs[0] && ag2[1] == srcs[1], "ineighbor_allgather %d %d", ag2[0], ag2[1]);
    CHECK(wrecv.d == srcs[0] + 0.5 && wrecv.i == -srcs[1], "ineighbor_alltoallw");
    MPI_Comm_free(&dg);

    /* Distributed graph, general form, unweighted: rank 0 declares every
     * edge i -> (i+1)%size; the others declare none. */
    int nsrc = rank == 0 ? size : 0;
    int *s = malloc(sizeof(int) * size), *deg = malloc(sizeof(int) * size), *d = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++) {
        s[i] = i;
        deg[i] = 1;
        d[i] = (i + 1) % size;
    }
    CHECK_RC(MPI_Dist_graph_create(MPI_COMM_WORLD, nsrc, s, deg, d, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg));
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    CHECK(indeg == 1 && outdeg == 1 && !weighted, "general counts %d %d %d", indeg, outdeg, weighted);
    MPI_Dist_graph_neighbors(dg, 1, qs, MPI_UNWEIGHTED, 1, qd, MPI_UNWEIGHTED);
    CHECK(qs[0] == (rank + size - 1) % size && qd[0] == (rank + 1) % size, "general neighbors %d %d", qs[0], qd[0]);
    int x = -1;
    CHECK_RC(MPI_Neighbor_allgather(&rank, 1, MPI_INT, &x, 1, MPI_INT, dg));
    CHECK(x == (rank + size - 1) % size, "general allgather %d", x);
    MPI_Comm_free(&dg);

    /* General form, weighted, each rank declares its own out-edge to rank 0
     * (so rank 0 has `size` in-edges) with weight = rank. */
    int me = rank, zero = 0, one = 1, w = rank;
    CHECK_RC(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &me, &one, &zero, &w, MPI_INFO_NULL, 0, &dg));
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    CHECK(indeg == (rank == 0 ? size : 0) && outdeg == 1 && weighted, "star counts %d %d", indeg, outdeg);
    if (rank == 0) {
        int *ss = malloc(sizeof(int) * size), *ww = malloc(sizeof(int) * size), *got = malloc(sizeof(int) * size);
        MPI_Dist_graph_neighbors(dg, size, ss, ww, 1, qd, qdw);
        for (int i = 0; i < size; i++) CHECK(ss[i] == i && ww[i] == i, "star source %d: %d w %d", i, ss[i], ww[i]);
        int v = 0;
        CHECK_RC(MPI_Neighbor_allgather(&v, 1, MPI_INT, got, 1, MPI_INT, dg));
        for (int i = 0; i < size; i++) CHECK(got[i] == i * i, "star gather %d: %d", i, got[i]);
        free(ss);
        free(ww);
        free(got);
    } else {
        int v = rank * rank;
        CHECK_RC(MPI_Neighbor_allgather(&v, 1, MPI_INT, NULL, 0, MPI_INT, dg));
    }
    MPI_Comm_free(&dg);

    /* Empty adjacency with MPI_WEIGHTS_EMPTY. */
    CHECK_RC(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, MPI_WEIGHTS_EMPTY, 0, NULL, MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &dg));
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    CHECK(indeg == 0 && outdeg == 0 && weighted, "empty dist graph");
    CHECK_RC(MPI_Neighbor_alltoall(NULL, 0, MPI_INT, NULL, 0, MPI_INT, dg));
    MPI_Comm_free(&dg);

    /* Bad input. */
    int badedge = size;
    int idx1[1] = {1};
    rc = MPI_Graph_create(MPI_COMM_WORLD, 1, idx1, &badedge, 0, &g);
    CHECK(error_class(rc) == MPI_ERR_TOPOLOGY, "edge to node %d: class %d", size, error_class(rc));
    rc = MPI_Graph_create(MPI_COMM_WORLD, size + 1, index, edges, 0, &g);
    CHECK(rc != MPI_SUCCESS, "graph with more nodes than processes accepted");
    rc = MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &badedge, MPI_UNWEIGHTED, 0, NULL, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg);
    CHECK(error_class(rc) == MPI_ERR_RANK, "dist graph source %d: class %d", size, error_class(rc));
    rc = MPI_Graph_neighbors_count(MPI_COMM_WORLD, 0, &n);
    CHECK(error_class(rc) == MPI_ERR_TOPOLOGY, "graph query without topology: class %d", error_class(rc));

    free(index);
    free(edges);
    free(gi);
    free(ge);
    free(s);
    free(deg);
    free(d);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("topo_graph OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
