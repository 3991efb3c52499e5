/* A program of the MPI-5 standard ABI (built with `mpicc -mpi-abi`, linked
 * with libmpi_abi.so.1): handles are pointers with the standard's values,
 * constants and error classes are the standard's, MPI_Status has the
 * standard's layout. It checks what it receives: point-to-point with
 * wildcards and statuses, collectives (predefined and user operations,
 * MPI_IN_PLACE, alltoallw), derived datatypes and their decoding,
 * communicators, groups and attributes (callbacks included), error classes
 * seen by an error handler, and MPI_Abi_get_version. */
#include "check.h"

#include <stdint.h>

/* The header is the standard ABI's. */
_Static_assert(sizeof(MPI_Comm) == sizeof(void *), "handles are pointers");
_Static_assert(sizeof(MPI_Status) == 8 * sizeof(int), "MPI_Status has 8 ints");
_Static_assert(sizeof(MPI_Aint) == 8 && sizeof(MPI_Count) == 8 && sizeof(MPI_Offset) == 8, "64-bit");
_Static_assert(MPI_ANY_SOURCE == -1 && MPI_ANY_TAG == -2 && MPI_PROC_NULL == -3, "wildcards");
_Static_assert(MPI_ERR_REQUEST == 7 && MPI_ERR_RANK == 6 && MPI_ERR_TAG == 4, "error classes");
_Static_assert(MPI_ABI_VERSION == 1 && MPI_ABI_SUBVERSION == 0, "ABI 1.0");

static int handler_calls = 0;
static int handler_class = -1;
static MPI_Comm handler_comm = MPI_COMM_NULL;

static void on_error(MPI_Comm *comm, int *code, ...) {
    handler_calls++;
    handler_comm = *comm;
    MPI_Error_class(*code, &handler_class);
}

/* Element-wise maximum of absolute values; checks it is given MPI_INT. */
static int op_saw_int = 0;
static void absmax(void *in, void *inout, int *len, MPI_Datatype *dt) {
    if (*dt == MPI_INT) op_saw_int = 1;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        int x = a[i] < 0 ? -a[i] : a[i], y = b[i] < 0 ? -b[i] : b[i];
        b[i] = x > y ? x : y;
    }
}

static int deletes = 0;
static MPI_Comm deleted_from = MPI_COMM_NULL;
static int del_fn(MPI_Comm comm, int keyval, void *val, void *extra) {
    (void)keyval;
    (void)val;
    deletes += *(int *)extra;
    deleted_from = comm;
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    int provided = -1;
    CHECK_RC(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    int rank, size;
    CHECK_RC(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_RC(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK((uintptr_t)MPI_COMM_WORLD == 0x101, "MPI_COMM_WORLD is %p", (void *)MPI_COMM_WORLD);

    /* The ABI version and information. */
    int major = -7, minor = -7;
    CHECK_RC(MPI_Abi_get_version(&major, &minor));
    CHECK(major == 1 && minor == 0, "ABI %d.%d", major, minor);
    MPI_Info abi_info;
    CHECK_RC(MPI_Abi_get_info(&abi_info));
    char val[64];
    int flag = 0;
    CHECK_RC(MPI_Info_get_string(abi_info, "mpi_aint_size", &(int){sizeof val}, val, &flag));
    CHECK(flag && strcmp(val, "8") == 0, "mpi_aint_size %s", val);
    CHECK_RC(MPI_Info_free(&abi_info));
    CHECK(abi_info == MPI_INFO_NULL, "freed info is not MPI_INFO_NULL");
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    CHECK_RC(MPI_Get_library_version(lib, &len));
    CHECK(strstr(lib, "mpi-core") != NULL, "library %s", lib);

    /* Point-to-point: a ring, received with wildcards. */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out[3] = {rank, rank * 10, rank * 100}, in[3] = {-1, -1, -1};
    MPI_Status st;
    memset(&st, 0x55, sizeof st);
    CHECK_RC(MPI_Sendrecv(out, 3, MPI_INT, right, 100 + rank, in, 3, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG,
                          MPI_COMM_WORLD, &st));
    CHECK(in[0] == left && in[2] == left * 100, "got %d %d", in[0], in[2]);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 100 + left, "status source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
    int count = -1;
    CHECK_RC(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 3, "count %d", count);
    MPI_Fint fst[MPI_F_STATUS_SIZE];
    MPI_Status back;
    CHECK_RC(MPI_Status_c2f(&st, fst));
    CHECK(fst[MPI_F_SOURCE] == left && fst[MPI_F_TAG] == 100 + left, "Fortran status %d %d", fst[0], fst[1]);
    CHECK_RC(MPI_Status_f2c(fst, &back));
    CHECK_RC(MPI_Get_count(&back, MPI_INT, &count));
    CHECK(count == 3 && back.MPI_SOURCE == left, "status round trip: count %d", count);
    CHECK_RC(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK(count == 12, "byte count %d", count);

    /* Nonblocking, completed with MPI_Waitall and its statuses. */
    MPI_Request reqs[2];
    double dout = rank + 0.5, din = -1;
    CHECK_RC(MPI_Irecv(&din, 1, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &reqs[0]));
    CHECK_RC(MPI_Isend(&dout, 1, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &reqs[1]));
    MPI_Status sts[2];
    CHECK_RC(MPI_Waitall(2, reqs, sts));
    CHECK(reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL, "requests not freed");
    CHECK(din == left + 0.5, "din %g", din);
    CHECK(sts[0].MPI_SOURCE == left && sts[0].MPI_TAG == 7, "waitall status %d %d", sts[0].MPI_SOURCE, sts[0].MPI_TAG);

    /* MPI_PROC_NULL: an empty status. */
    CHECK_RC(MPI_Recv(in, 3, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "proc null status %d %d", st.MPI_SOURCE,
          st.MPI_TAG);
    CHECK_RC(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 0, "proc null count %d", count);
    /* MPI 4.1's status accessors, on the standard's status layout. */
    int field = 0;
    CHECK_RC(MPI_Status_get_source(&st, &field));
    CHECK(field == MPI_PROC_NULL, "MPI_Status_get_source %d", field);
    CHECK_RC(MPI_Status_get_tag(&st, &field));
    CHECK(field == MPI_ANY_TAG, "MPI_Status_get_tag %d", field);
    CHECK_RC(MPI_Status_set_tag(&st, 123));
    CHECK_RC(MPI_Status_set_source(&st, MPI_ANY_SOURCE));
    CHECK_RC(MPI_Status_set_error(&st, MPI_ERR_PENDING));
    CHECK(st.MPI_TAG == 123 && st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_ERROR == MPI_ERR_PENDING,
          "set fields %d %d %d", st.MPI_TAG, st.MPI_SOURCE, st.MPI_ERROR);
    CHECK_RC(MPI_Status_get_error(&st, &field));
    CHECK(field == MPI_ERR_PENDING, "MPI_Status_get_error %d", field);
    CHECK_RC(MPI_Send(out, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    CHECK_RC(MPI_Recv(in, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));

    /* Collectives. */
    int sum = -1, root_val = rank == 0 ? 42 : -1;
    CHECK_RC(MPI_Bcast(&root_val, 1, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK(root_val == 42, "bcast %d", root_val);
    CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size * (size - 1) / 2, "allreduce sum %d", sum);
    double dmax = rank;
    CHECK_RC(MPI_Allreduce(MPI_IN_PLACE, &dmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    CHECK(dmax == size - 1, "in-place max %g", dmax);
    struct {
        int v, r;
    } pair = {size - 1 - rank, rank}, best;
    CHECK_RC(MPI_Allreduce(&pair, &best, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD));
    CHECK(best.v == size - 1 && best.r == 0, "maxloc %d at %d", best.v, best.r);
    MPI_Op op;
    CHECK_RC(MPI_Op_create(absmax, 1, &op));
    int mine = rank % 2 ? -rank : rank, am = 0;
    CHECK_RC(MPI_Allreduce(&mine, &am, 1, MPI_INT, op, MPI_COMM_WORLD));
    CHECK(am == size - 1, "user op %d", am);
    CHECK(op_saw_int || size == 1, "user op was not given MPI_INT");
    CHECK_RC(MPI_Op_free(&op));
    CHECK(op == MPI_OP_NULL, "freed op is not MPI_OP_NULL");
    int *all = malloc(sizeof(int) * size);
    CHECK_RC(MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) CHECK(all[i] == i, "allgather[%d] %d", i, all[i]);
    /* Alltoallw: one int to each rank, the datatypes an array of handles. */
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * size);
    int *sendw = malloc(sizeof(int) * size), *recvw = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++) {
        sc[i] = 1;
        sd[i] = i * (int)sizeof(int);
        types[i] = MPI_INT;
        sendw[i] = rank * 1000 + i;
        recvw[i] = -1;
    }
    CHECK_RC(MPI_Alltoallw(sendw, sc, sd, types, recvw, sc, sd, types, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) CHECK(recvw[i] == i * 1000 + rank, "alltoallw[%d] %d", i, recvw[i]);

    /* Neighbourhood alltoallw on a one-process periodic ring: two
     * neighbours (itself), so two datatypes per array, blocking and not. */
    MPI_Comm ring;
    int one[1] = {1}, per[1] = {1};
    CHECK_RC(MPI_Cart_create(MPI_COMM_SELF, 1, one, per, 0, &ring));
    int nsb[2] = {rank, rank + 1}, nrb[2] = {-1, -1}, ncnt[2] = {1, 1};
    MPI_Aint ndsp[2] = {0, sizeof(int)};
    MPI_Datatype nty[2] = {MPI_INT, MPI_INT};
    CHECK_RC(MPI_Neighbor_alltoallw(nsb, ncnt, ndsp, nty, nrb, ncnt, ndsp, nty, ring));
    CHECK(nrb[0] == rank + 1 && nrb[1] == rank, "neighbor_alltoallw %d %d", nrb[0], nrb[1]);
    MPI_Request nreq;
    nrb[0] = nrb[1] = -1;
    CHECK_RC(MPI_Ineighbor_alltoallw(nsb, ncnt, ndsp, nty, nrb, ncnt, ndsp, nty, ring, &nreq));
    CHECK_RC(MPI_Wait(&nreq, MPI_STATUS_IGNORE));
    CHECK(nrb[0] == rank + 1 && nrb[1] == rank, "ineighbor_alltoallw %d %d", nrb[0], nrb[1]);
    CHECK_RC(MPI_Comm_free(&ring));

    /* Derived datatypes: a vector, decoded. */
    MPI_Datatype vec;
    CHECK_RC(MPI_Type_vector(3, 1, 2, MPI_INT, &vec));
    CHECK_RC(MPI_Type_commit(&vec));
    int tsize = 0;
    CHECK_RC(MPI_Type_size(vec, &tsize));
    CHECK(tsize == 12, "vector size %d", tsize);
    int ni, na, nd, combiner;
    CHECK_RC(MPI_Type_get_envelope(vec, &ni, &na, &nd, &combiner));
    CHECK(combiner == MPI_COMBINER_VECTOR && ni == 3 && nd == 1, "envelope %d %d %d", combiner, ni, nd);
    int ints[3];
    MPI_Aint addrs[1];
    MPI_Datatype olds[1];
    CHECK_RC(MPI_Type_get_contents(vec, 3, 0, 1, ints, addrs, olds));
    CHECK(olds[0] == MPI_INT && ints[0] == 3 && ints[2] == 2, "contents %p %d", (void *)olds[0], ints[0]);
    CHECK_RC(MPI_Type_get_envelope(MPI_INT, &ni, &na, &nd, &combiner));
    CHECK(combiner == MPI_COMBINER_NAMED, "named combiner %d", combiner);
    char tname[MPI_MAX_OBJECT_NAME];
    CHECK_RC(MPI_Type_get_name(MPI_DOUBLE, tname, &len));
    CHECK(strcmp(tname, "MPI_DOUBLE") == 0, "name %s", tname);
    CHECK_RC(MPI_Type_get_name(MPI_DATATYPE_NULL, tname, &len));
    CHECK(strcmp(tname, "MPI_DATATYPE_NULL") == 0, "null name %s", tname);
    CHECK_RC(MPI_Comm_get_name(MPI_COMM_NULL, tname, &len));
    CHECK(strcmp(tname, "MPI_COMM_NULL") == 0, "null name %s", tname);
    int strided[6] = {rank, -1, rank + 1, -1, rank + 2, -1}, packed[3] = {-1, -1, -1};
    CHECK_RC(MPI_Sendrecv(strided, 1, vec, right, 3, packed, 3, MPI_INT, left, 3, MPI_COMM_WORLD, &st));
    CHECK(packed[0] == left && packed[2] == left + 2, "vector data %d %d", packed[0], packed[2]);
    CHECK_RC(MPI_Get_elements(&st, MPI_INT, &count));
    CHECK(count == 3, "elements %d", count);
    /* A struct of an int and a double. */
    struct rec {
        int i;
        double d;
    } r = {rank, rank * 2.0}, rr = {-1, -1};
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {offsetof(struct rec, i), offsetof(struct rec, d)};
    MPI_Datatype tt[2] = {MPI_INT, MPI_DOUBLE}, st_type;
    CHECK_RC(MPI_Type_create_struct(2, bl, disp, tt, &st_type));
    CHECK_RC(MPI_Type_commit(&st_type));
    CHECK_RC(MPI_Sendrecv(&r, 1, st_type, right, 4, &rr, 1, st_type, left, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(rr.i == left && rr.d == left * 2.0, "struct %d %g", rr.i, rr.d);
    CHECK_RC(MPI_Type_free(&st_type));
    CHECK_RC(MPI_Type_free(&vec));
    CHECK(vec == MPI_DATATYPE_NULL, "freed type is not MPI_DATATYPE_NULL");

    /* Communicators and groups. */
    MPI_Comm dup, half;
    CHECK_RC(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int cmp = -1;
    CHECK_RC(MPI_Comm_compare(MPI_COMM_WORLD, dup, &cmp));
    CHECK(cmp == MPI_CONGRUENT, "compare dup %d", cmp);
    CHECK_RC(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &cmp));
    CHECK(cmp == MPI_IDENT, "compare self %d", cmp);
    CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
    int hsize;
    CHECK_RC(MPI_Comm_size(half, &hsize));
    CHECK(hsize == (size + 1 - rank % 2) / 2, "half size %d", hsize);
    MPI_Comm none;
    CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, rank, &none));
    CHECK(none == MPI_COMM_NULL, "MPI_UNDEFINED color gave a communicator");
    MPI_Group wg, hg;
    CHECK_RC(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    CHECK_RC(MPI_Comm_group(half, &hg));
    int from[2] = {0, MPI_PROC_NULL}, to[2] = {-9, -9};
    CHECK_RC(MPI_Group_translate_ranks(hg, 2 <= hsize ? 2 : 1, from, wg, to));
    CHECK(to[0] == rank % 2, "translated %d", to[0]);
    CHECK(hsize < 2 || to[1] == MPI_PROC_NULL, "translated MPI_PROC_NULL to %d", to[1]);
    CHECK_RC(MPI_Group_free(&hg));
    CHECK_RC(MPI_Group_free(&wg));
    CHECK(MPI_Comm_fromint(MPI_Comm_toint(dup)) == dup, "toint/fromint");
    CHECK(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_WORLD)) == MPI_COMM_WORLD, "c2f/f2c");
    int topo = -1;
    CHECK_RC(MPI_Topo_test(dup, &topo));
    CHECK(topo == MPI_UNDEFINED, "topo %d", topo);

    /* Attributes: a predefined one, and a keyval with callbacks. */
    int *tag_ub = NULL;
    CHECK_RC(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag));
    CHECK(flag && *tag_ub >= 32767, "tag ub");
    int *host = NULL;
    CHECK_RC(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &host, &flag));
    CHECK(flag && *host == MPI_PROC_NULL, "MPI_HOST is %d", flag ? *host : 0);
    int keyval, weight = 5;
    CHECK_RC(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, del_fn, &keyval, &weight));
    CHECK(keyval != MPI_KEYVAL_INVALID, "keyval invalid");
    CHECK_RC(MPI_Comm_set_attr(dup, keyval, (void *)(intptr_t)77));
    MPI_Comm dup2;
    CHECK_RC(MPI_Comm_dup(dup, &dup2));
    void *got = NULL;
    CHECK_RC(MPI_Comm_get_attr(dup2, keyval, &got, &flag));
    CHECK(flag && (intptr_t)got == 77, "attribute not copied");
    MPI_Comm saved = dup2;
    CHECK_RC(MPI_Comm_free(&dup2));
    CHECK(dup2 == MPI_COMM_NULL, "freed comm is not MPI_COMM_NULL");
    CHECK(deletes == 5 && deleted_from == saved, "delete callback %d", deletes);
    CHECK_RC(MPI_Comm_free_keyval(&keyval));

    /* Error classes through an error handler. */
    MPI_Errhandler eh, cur;
    CHECK_RC(MPI_Comm_create_errhandler(on_error, &eh));
    CHECK_RC(MPI_Comm_set_errhandler(dup, eh));
    int rc = MPI_Send(out, 1, MPI_INT, size, 0, dup);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RANK, "bad rank gave class %d", cls);
    CHECK(handler_calls == 1 && handler_class == MPI_ERR_RANK && handler_comm == dup, "handler %d class %d",
          handler_calls, handler_class);
    rc = MPI_Send(out, 1, MPI_INT, 0, -5, dup);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TAG && handler_class == MPI_ERR_TAG, "bad tag gave class %d", cls);
    int myclass;
    CHECK_RC(MPI_Add_error_class(&myclass));
    CHECK(myclass > MPI_ERR_LASTCODE, "added class %d", myclass);
    CHECK_RC(MPI_Comm_call_errhandler(dup, myclass));
    CHECK(handler_class == myclass, "handler saw class %d, added %d", handler_class, myclass);
    CHECK_RC(MPI_Error_class(MPI_ERR_ABI, &cls));
    CHECK(cls == MPI_ERR_ABI, "MPI_Error_class(MPI_ERR_ABI) = %d", cls);
    char msg[MPI_MAX_ERROR_STRING];
    CHECK_RC(MPI_Error_string(MPI_ERR_TRUNCATE, msg, &len));
    CHECK(len > 0 && strstr(msg, "truncat") != NULL, "error string '%s'", msg);
    CHECK_RC(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    CHECK_RC(MPI_Comm_get_errhandler(dup, &cur));
    CHECK(cur == MPI_ERRORS_RETURN, "errhandler %p", (void *)cur);
    CHECK_RC(MPI_Errhandler_free(&eh));
    /* A truncated message reports MPI_ERR_TRUNCATE. */
    int big[4] = {1, 2, 3, 4}, small[1];
    rc = MPI_Sendrecv(big, 4, MPI_INT, rank, 9, small, 1, MPI_INT, rank, 9, dup, &st);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "truncation gave class %d", cls);

    CHECK_RC(MPI_Comm_free(&half));
    CHECK_RC(MPI_Comm_free(&dup));
    CHECK_RC(MPI_Barrier(MPI_COMM_WORLD));
    double t = MPI_Wtime();
    CHECK(t > 0, "wtime %g", t);
    if (rank == 0) printf("stdabi OK on %d ranks\n", size);
    free(all);
    free(sc);
    free(sd);
    free(types);
    free(sendw);
    free(recvw);
    CHECK_RC(MPI_Finalize());
    return 0;
}
