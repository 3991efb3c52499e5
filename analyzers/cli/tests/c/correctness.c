/* Programs for `mpitrace check --correctness` (tests/correctness.rs): each
 * mode (argv[1]) breaks one rule and runs to the end anyway; `ok` breaks
 * none. The test finds call sites by the markers in the comments. Run on
 * 4 ranks. */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size, a[4] = {1, 2, 3, 4}, b[4] = {0, 0, 0, 0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "";
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    if (!strcmp(mode, "sendcycle")) {
        /* Every rank sends to the next before it receives: a ring of
         * blocking sends that completes only because they are buffered. */
        MPI_Send(a, 1, MPI_INT, next, 5, MPI_COMM_WORLD); /* @sendcycle */
        MPI_Recv(b, 1, MPI_INT, prev, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(mode, "count")) {
        /* The last rank reduces fewer elements. */
        int n = rank == size - 1 ? 2 : 4;
        MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* @count */
    } else if (!strcmp(mode, "anysource")) {
        /* Every other rank sends at once; rank 0 takes the messages from
         * any source after they all arrived: the first match is a race. */
        if (rank == 0) {
            usleep(300000);
            for (int i = 1; i < size; i++)
                MPI_Recv(b, 1, MPI_INT, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @anysource */
        } else {
            MPI_Send(a, 1, MPI_INT, 0, 4, MPI_COMM_WORLD);
        }
    } else if (!strcmp(mode, "types")) {
        /* Rank 0 sends a double, rank 1 receives it as two ints. */
        double x = 1.5;
        if (rank == 0)
            MPI_Send(&x, 1, MPI_DOUBLE, 1, 8, MPI_COMM_WORLD); /* @types-send */
        else if (rank == 1)
            MPI_Recv(b, 2, MPI_INT, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @types-recv */
    } else if (!strcmp(mode, "leak")) {
        /* A request never waited for, and a communicator never freed. */
        MPI_Request req;
        MPI_Comm dup;
        MPI_Isend(a, 1, MPI_INT, next, 9, MPI_COMM_WORLD, &req); /* @leak-request */
        MPI_Recv(b, 1, MPI_INT, prev, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Comm_dup(MPI_COMM_WORLD, &dup); /* @leak-comm */
        MPI_Barrier(dup);
    } else if (!strcmp(mode, "derived")) {
        /* Rank 0 sends a vector of 3 doubles, rank 1 receives 6 ints: the
         * sizes agree, the type signatures do not. */
        MPI_Datatype vec;
        double x[6] = {1, 2, 3, 4, 5, 6};
        int n[6];
        MPI_Type_vector(3, 1, 2, MPI_DOUBLE, &vec);
        MPI_Type_commit(&vec); /* @derived-commit */
        if (rank == 0)
            MPI_Send(x, 1, vec, 1, 11, MPI_COMM_WORLD); /* @derived-send */
        else if (rank == 1)
            MPI_Recv(n, 6, MPI_INT, 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @derived-recv */
        MPI_Type_free(&vec);
    } else if (!strcmp(mode, "collsig")) {
        /* The last rank receives the broadcast of 4 ints as 2 doubles:
         * as many bytes, another type signature. */
        double d[2];
        if (rank == size - 1)
            MPI_Bcast(d, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD); /* @collsig-odd */
        else
            MPI_Bcast(a, 4, MPI_INT, 0, MPI_COMM_WORLD); /* @collsig-rest */
    } else if (!strcmp(mode, "truncate")) {
        /* Rank 1 receives one int of a two-int message; errors return. */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        if (rank == 0)
            MPI_Send(a, 2, MPI_INT, 1, 10, MPI_COMM_WORLD); /* @truncate-send */
        else if (rank == 1)
            MPI_Recv(b, 1, MPI_INT, 0, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @truncate-recv */
    } else if (!strcmp(mode, "truncate-nb")) {
        /* The same with a nonblocking receive: MPI_Wait reports it. */
        MPI_Request req;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        if (rank == 0) {
            MPI_Send(a, 3, MPI_INT, 1, 14, MPI_COMM_WORLD); /* @truncnb-send */
        } else if (rank == 1) {
            MPI_Irecv(b, 2, MPI_INT, 0, 14, MPI_COMM_WORLD, &req); /* @truncnb-irecv */
            MPI_Wait(&req, MPI_STATUS_IGNORE); /* @truncnb-wait */
        }
    } else if (!strcmp(mode, "objects")) {
        /* A group, a datatype, a window, a file and an info object, none
         * freed. */
        MPI_Group g;
        MPI_Datatype t;
        MPI_Win w;
        MPI_File f;
        MPI_Info info;
        char path[64];
        int pid = (int)getpid();
        MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
        snprintf(path, sizeof path, "/tmp/mpitrace-correctness-%d", pid);
        MPI_Comm_group(MPI_COMM_WORLD, &g); /* @leak-group */
        MPI_Type_contiguous(2, MPI_INT, &t); /* @leak-type */
        MPI_Type_commit(&t);
        MPI_Win_create(b, sizeof b, sizeof b[0], MPI_INFO_NULL, MPI_COMM_WORLD, &w); /* @leak-win */
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &f); /* @leak-file */
        MPI_Info_create(&info); /* @leak-info */
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            unlink(path);
    } else if (!strcmp(mode, "overwrite")) {
        /* The variable of a pending receive is given to another receive:
         * the first request is lost (never completed). */
        MPI_Request req;
        MPI_Irecv(b, 1, MPI_INT, prev, 12, MPI_COMM_WORLD, &req); /* @overwrite-first */
        MPI_Irecv(b + 1, 1, MPI_INT, prev, 12, MPI_COMM_WORLD, &req); /* @overwrite-second */
        MPI_Request s[2];
        MPI_Isend(a, 1, MPI_INT, next, 12, MPI_COMM_WORLD, &s[0]);
        MPI_Isend(a + 1, 1, MPI_INT, next, 12, MPI_COMM_WORLD, &s[1]);
        MPI_Waitall(2, s, MPI_STATUSES_IGNORE);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else if (!strcmp(mode, "buffer")) {
        /* The buffer of a pending send is changed (record --check-buffers). */
        MPI_Request req;
        int c[4] = {1, 2, 3, 4};
        MPI_Isend(c, 4, MPI_INT, next, 13, MPI_COMM_WORLD, &req); /* @buffer-isend */
        c[2] = 99;
        MPI_Recv(b, 4, MPI_INT, prev, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&req, MPI_STATUS_IGNORE); /* @buffer-wait */
    } else if (!strcmp(mode, "truncate-multi")) {
        /* Truncations completed by the calls that complete several
         * requests: in each pair the first receive is too small for its
         * 3 ints, the second fits its one int. */
        MPI_Request r[2];
        MPI_Status st[2];
        int c[2], one, out, idx[2], flag = 0;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        if (rank == 0) {
            for (int t = 15; t <= 18; t++) {
                MPI_Send(a, 3, MPI_INT, 1, t, MPI_COMM_WORLD); /* @multi-send */
                MPI_Send(a, 1, MPI_INT, 1, t + 10, MPI_COMM_WORLD);
            }
        } else if (rank == 1) {
            MPI_Irecv(c, 2, MPI_INT, 0, 15, MPI_COMM_WORLD, &r[0]); /* @multi-irecv-all */
            MPI_Irecv(&one, 1, MPI_INT, 0, 25, MPI_COMM_WORLD, &r[1]);
            MPI_Waitall(2, r, st); /* @multi-waitall */
            /* MPICH leaves the requests after the failed one pending. */
            if (r[1] != MPI_REQUEST_NULL)
                MPI_Wait(&r[1], MPI_STATUS_IGNORE);
            MPI_Irecv(c, 2, MPI_INT, 0, 16, MPI_COMM_WORLD, &r[0]); /* @multi-irecv-any */
            MPI_Irecv(&one, 1, MPI_INT, 0, 26, MPI_COMM_WORLD, &r[1]);
            while (r[0] != MPI_REQUEST_NULL || r[1] != MPI_REQUEST_NULL)
                MPI_Waitany(2, r, idx, MPI_STATUS_IGNORE); /* @multi-waitany */
            MPI_Irecv(c, 2, MPI_INT, 0, 17, MPI_COMM_WORLD, &r[0]); /* @multi-irecv-some */
            MPI_Irecv(&one, 1, MPI_INT, 0, 27, MPI_COMM_WORLD, &r[1]);
            while (r[0] != MPI_REQUEST_NULL || r[1] != MPI_REQUEST_NULL)
                MPI_Waitsome(2, r, &out, idx, st); /* @multi-waitsome */
            MPI_Irecv(c, 2, MPI_INT, 0, 18, MPI_COMM_WORLD, &r[0]); /* @multi-irecv-test */
            MPI_Irecv(&one, 1, MPI_INT, 0, 28, MPI_COMM_WORLD, &r[1]);
            usleep(100000);
            while (!flag && (r[0] != MPI_REQUEST_NULL || r[1] != MPI_REQUEST_NULL))
                MPI_Testall(2, r, &flag, st); /* @multi-testall */
        }
    } else if (!strcmp(mode, "buffer-coll")) {
        /* The send buffers of pending nonblocking collectives are changed
         * (record --check-buffers): the root's of a broadcast, every
         * rank's of an allreduce. */
        MPI_Request req;
        int c[4] = {1, 2, 3, 4}, d[4];
        MPI_Ibcast(c, 4, MPI_INT, 0, MPI_COMM_WORLD, &req); /* @bufcoll-ibcast */
        if (rank == 0)
            c[1] = 99;
        MPI_Wait(&req, MPI_STATUS_IGNORE); /* @bufcoll-wait-bcast */
        MPI_Iallreduce(c, d, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req); /* @bufcoll-iallreduce */
        c[3] = rank;
        MPI_Wait(&req, MPI_STATUS_IGNORE); /* @bufcoll-wait-allreduce */
    } else if (!strcmp(mode, "collpairs")) {
        /* Gathers, all-to-alls, scatters and reduce-scatters whose byte
         * counts agree but whose type signatures do not. */
        int all[16] = {0}, all2[16], ones[4] = {1, 1, 1, 1}, displs[4] = {0, 1, 2, 3};
        double dd[8] = {0}, dd2[8];
        float f[4] = {0};
        /* The last rank sends 2 doubles where the root takes 4 ints. */
        if (rank == size - 1)
            MPI_Gather(dd, 2, MPI_DOUBLE, all, 4, MPI_INT, 0, MPI_COMM_WORLD); /* @pairs-gather-odd */
        else
            MPI_Gather(a, 4, MPI_INT, all, 4, MPI_INT, 0, MPI_COMM_WORLD); /* @pairs-gather */
        /* The last rank exchanges blocks of 2 doubles, the others of 4 ints. */
        if (rank == size - 1)
            MPI_Alltoall(dd, 2, MPI_DOUBLE, dd2, 2, MPI_DOUBLE, MPI_COMM_WORLD); /* @pairs-alltoall-odd */
        else
            MPI_Alltoall(all, 4, MPI_INT, all2, 4, MPI_INT, MPI_COMM_WORLD); /* @pairs-alltoall */
        /* Rank 2 receives its int as a float. */
        if (rank == 2)
            MPI_Scatterv(a, ones, displs, MPI_INT, f, 1, MPI_FLOAT, 0, MPI_COMM_WORLD); /* @pairs-scatterv-odd */
        else
            MPI_Scatterv(a, ones, displs, MPI_INT, b, 1, MPI_INT, 0, MPI_COMM_WORLD); /* @pairs-scatterv */
        /* Rank 1 reduces floats, the others ints. */
        if (rank == 1)
            MPI_Reduce_scatter_block(f, f + 1, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); /* @pairs-rsb-odd */
        else
            MPI_Reduce_scatter_block(a, b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* @pairs-rsb */
    } else {
        /* Correct: the ring by nonblocking calls and by send-receive, even
         * ranks sending first, collectives alike everywhere, every request
         * completed and the communicator freed. */
        MPI_Request r[2];
        MPI_Comm dup;
        MPI_Irecv(b, 1, MPI_INT, prev, 1, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(a, 1, MPI_INT, next, 1, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        MPI_Sendrecv(a, 1, MPI_INT, next, 2, b, 1, MPI_INT, prev, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rank % 2 == 0) {
            MPI_Send(a, 1, MPI_INT, next, 3, MPI_COMM_WORLD);
            MPI_Recv(b, 1, MPI_INT, prev, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(b, 1, MPI_INT, prev, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(a, 1, MPI_INT, next, 3, MPI_COMM_WORLD);
        }
        /* A wildcard receive with one sender only: deterministic. */
        if (rank == 0) {
            usleep(100000);
            MPI_Recv(b, 1, MPI_INT, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Send(a, 1, MPI_INT, 0, 6, MPI_COMM_WORLD);
        }
        /* Nonblocking collectives whose send buffers stay as they were
         * (--check-buffers checksums them), in place too. */
        {
            MPI_Request rq[6];
            int all[16], got[16], mine[4] = {rank, rank, rank, rank}, one[4];
            for (int i = 0; i < 16; i++)
                all[i] = i;
            MPI_Ibcast(a, 4, MPI_INT, 0, MPI_COMM_WORLD, &rq[0]);
            MPI_Iallreduce(mine, one, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[1]);
            MPI_Igather(mine, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq[2]);
            MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
            MPI_Iscatter(all, 2, MPI_INT, one, 2, MPI_INT, 1, MPI_COMM_WORLD, &rq[0]);
            MPI_Waitall(1, rq, MPI_STATUSES_IGNORE);
            for (int i = 0; i < 16; i++)
                all[i] = i;
            MPI_Ialltoall(all, 2, MPI_INT, got, 2, MPI_INT, MPI_COMM_WORLD, &rq[0]);
            MPI_Ireduce_scatter_block(all, one, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[1]);
            MPI_Iallreduce(MPI_IN_PLACE, mine, 4, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rq[2]);
            MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
        }
        /* Gathers, scatters, all-to-alls and reduce-scatters whose type
         * signatures match pairwise: a contiguous(4, int) sent once and 4
         * ints received, v-forms, in place. */
        {
            MPI_Datatype four;
            int all[16], all2[16], counts[4], displs[4], mine[4] = {rank, rank, rank, rank}, one[4];
            for (int i = 0; i < size; i++) {
                counts[i] = i % 2 + 1;
                displs[i] = 2 * i;
            }
            for (int i = 0; i < 16; i++)
                all[i] = i;
            MPI_Type_contiguous(4, MPI_INT, &four);
            MPI_Type_commit(&four);
            MPI_Gather(mine, 1, four, all2, 4, MPI_INT, 0, MPI_COMM_WORLD);
            MPI_Allgatherv(mine, counts[rank], MPI_INT, all2, counts, displs, MPI_INT, MPI_COMM_WORLD);
            MPI_Scatterv(all, counts, displs, MPI_INT, one, counts[rank], MPI_INT, 1, MPI_COMM_WORLD);
            if (rank == 0)
                MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all2, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
            else
                MPI_Gatherv(mine, counts[rank], MPI_INT, all2, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
            MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 4, MPI_INT, MPI_COMM_WORLD);
            MPI_Alltoall(all2, 1, four, all, 4, MPI_INT, MPI_COMM_WORLD);
            MPI_Reduce_scatter(all, one, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            MPI_Reduce_scatter_block(all, one, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            MPI_Type_free(&four);
        }
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Bcast(a, 4, MPI_INT, 0, dup);
        MPI_Allreduce(a, b, 4, MPI_INT, MPI_SUM, dup);
        MPI_Comm_free(&dup);
        /* Derived datatypes whose signatures match the other side's: a
         * contiguous(3, double) received as 3 doubles, 3 doubles received
         * as a vector of 3 doubles, and a struct {int, double} x 2 received
         * as 2 of the same struct built otherwise (an indexed pair of ints
         * is not involved). Sent nonblocking and persistent, so that
         * --check-buffers packs them. */
        {
            MPI_Datatype three, vec, st, st2, pair;
            MPI_Request rq[2];
            double x[6] = {1, 2, 3, 4, 5, 6}, y[6];
            struct { int i; double d; } s[2] = {{1, 1.0}, {2, 2.0}}, s2[2];
            int bl[2] = {1, 1};
            MPI_Aint disp[2] = {0, offsetof(struct { int i; double d; }, d)};
            MPI_Datatype tys[2] = {MPI_INT, MPI_DOUBLE};
            MPI_Type_contiguous(3, MPI_DOUBLE, &three);
            MPI_Type_commit(&three);
            MPI_Type_vector(3, 1, 2, MPI_DOUBLE, &vec);
            MPI_Type_commit(&vec);
            MPI_Type_create_struct(2, bl, disp, tys, &pair);
            MPI_Type_create_resized(pair, 0, sizeof s[0], &st);
            MPI_Type_commit(&st);
            MPI_Type_dup(st, &st2);
            MPI_Irecv(y, 3, MPI_DOUBLE, prev, 20, MPI_COMM_WORLD, &rq[0]);
            MPI_Isend(x, 1, three, next, 20, MPI_COMM_WORLD, &rq[1]);
            MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
            MPI_Irecv(y, 1, vec, prev, 21, MPI_COMM_WORLD, &rq[0]);
            MPI_Send_init(x, 3, MPI_DOUBLE, next, 21, MPI_COMM_WORLD, &rq[1]);
            MPI_Start(&rq[1]);
            MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
            MPI_Request_free(&rq[1]);
            MPI_Irecv(s2, 2, st2, prev, 22, MPI_COMM_WORLD, &rq[0]);
            MPI_Isend(s, 2, st, next, 22, MPI_COMM_WORLD, &rq[1]);
            MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
            MPI_Type_free(&three);
            MPI_Type_free(&vec);
            MPI_Type_free(&pair);
            MPI_Type_free(&st);
            MPI_Type_free(&st2);
        }
        /* Objects made and freed. */
        {
            MPI_Group g, g2;
            MPI_Info info;
            MPI_Win w;
            int r0 = 0;
            MPI_Comm_group(MPI_COMM_WORLD, &g);
            MPI_Group_incl(g, 1, &r0, &g2);
            MPI_Group_free(&g2);
            MPI_Group_free(&g);
            MPI_Info_create(&info);
            MPI_Info_set(info, "no_locks", "true");
            MPI_Win_create(b, sizeof b, sizeof b[0], info, MPI_COMM_WORLD, &w);
            MPI_Info_free(&info);
            MPI_Win_fence(0, w);
            MPI_Win_fence(0, w);
            MPI_Win_free(&w);
        }
    }
    MPI_Finalize();
    return 0;
}
