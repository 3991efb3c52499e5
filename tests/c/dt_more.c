/* More derived types in point-to-point: packed messages (MPI_PACKED),
 * probe then Get_count/Get_elements, buffered and persistent sends of
 * derived types, a subarray of a 3-D array, every large-count constructor,
 * and external32 of more predefined types. Two or more ranks. */
#include "check.h"
#include <stdint.h>
#include <wchar.h>
#include <complex.h>

static int rank, size;

static void packed_message(void) {
    char buf[256];
    int pos = 0;
    if (rank == 0) {
        int n = 3;
        double col[3][4];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) col[i][j] = i * 4 + j;
        MPI_Datatype c;
        MPI_Type_vector(3, 1, 4, MPI_DOUBLE, &c);
        MPI_Type_commit(&c);
        CHECK_RC(MPI_Pack(&n, 1, MPI_INT, buf, sizeof buf, &pos, MPI_COMM_WORLD));
        CHECK_RC(MPI_Pack(&col[0][2], 1, c, buf, sizeof buf, &pos, MPI_COMM_WORLD));
        CHECK_RC(MPI_Pack("hi", 3, MPI_CHAR, buf, sizeof buf, &pos, MPI_COMM_WORLD));
        CHECK_RC(MPI_Send(buf, pos, MPI_PACKED, 1, 1, MPI_COMM_WORLD));
        MPI_Type_free(&c);
    } else if (rank == 1) {
        MPI_Status st;
        CHECK_RC(MPI_Recv(buf, sizeof buf, MPI_PACKED, 0, 1, MPI_COMM_WORLD, &st));
        int len, n;
        MPI_Get_count(&st, MPI_PACKED, &len);
        double v[3];
        char s[3];
        CHECK_RC(MPI_Unpack(buf, len, &pos, &n, 1, MPI_INT, MPI_COMM_WORLD));
        CHECK_RC(MPI_Unpack(buf, len, &pos, v, n, MPI_DOUBLE, MPI_COMM_WORLD));
        CHECK_RC(MPI_Unpack(buf, len, &pos, s, 3, MPI_CHAR, MPI_COMM_WORLD));
        CHECK(n == 3 && v[0] == 2 && v[1] == 6 && v[2] == 10 && strcmp(s, "hi") == 0 && pos == len, "packed message");
    }
}

static void probe_then_receive(void) {
    MPI_Datatype s;
    int bl[] = {1, 2};
    MPI_Aint d[] = {0, 8};
    MPI_Datatype t[] = {MPI_INT, MPI_FLOAT};
    MPI_Type_create_struct(2, bl, d, t, &s);
    MPI_Type_commit(&s);
    if (rank == 0) {
        float f[10];
        for (int i = 0; i < 10; i++) f[i] = i;
        /* 7 basic elements of s's signature: int,float,float,int,float,float,int. */
        int x[] = {5, 0, 0, 6, 0, 0, 7};
        memcpy(&x[1], &f[1], 4), memcpy(&x[2], &f[2], 4), memcpy(&x[4], &f[4], 4), memcpy(&x[5], &f[5], 4);
        CHECK_RC(MPI_Send(x, 7, MPI_INT, 1, 2, MPI_COMM_WORLD));
    } else if (rank == 1) {
        MPI_Status st;
        CHECK_RC(MPI_Probe(0, 2, MPI_COMM_WORLD, &st));
        int n, e;
        MPI_Get_count(&st, s, &n);
        MPI_Get_elements(&st, s, &e);
        CHECK(n == MPI_UNDEFINED && e == 7, "probe: count %d elements %d", n, e);
        struct { int i; int gap; float f[2]; } r[3];
        memset(r, 0, sizeof r);
        MPI_Aint lb, ext;
        MPI_Type_get_extent(s, &lb, &ext);
        CHECK(ext == 16, "extent %ld", (long)ext);
        CHECK_RC(MPI_Recv(r, 3, s, 0, 2, MPI_COMM_WORLD, &st));
        CHECK(r[0].i == 5 && r[0].f[1] == 2 && r[1].i == 6 && r[1].f[0] == 4 && r[2].i == 7 && r[2].f[0] == 0, "values");
    }
    MPI_Type_free(&s);
}

static void bsend_and_persistent(void) {
    enum { N = 64 };
    int a[2 * N], b[N];
    for (int i = 0; i < 2 * N; i++) a[i] = rank * 1000 + i;
    MPI_Datatype ev;
    MPI_Type_vector(N, 1, 2, MPI_INT, &ev);
    MPI_Type_commit(&ev);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int bsz;
    MPI_Pack_size(1, ev, MPI_COMM_WORLD, &bsz);
    bsz += MPI_BSEND_OVERHEAD;
    char *bb = malloc(bsz);
    MPI_Buffer_attach(bb, bsz);
    CHECK_RC(MPI_Bsend(a, 1, ev, to, 3, MPI_COMM_WORLD));
    CHECK_RC(MPI_Recv(b, N, MPI_INT, from, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < N; i++) CHECK(b[i] == from * 1000 + 2 * i, "bsend %d", i);
    MPI_Buffer_detach(&bb, &bsz);
    free(bb);
    /* Persistent requests with the strided type, restarted. */
    MPI_Request rq[2];
    CHECK_RC(MPI_Send_init(a + 1, 1, ev, to, 4, MPI_COMM_WORLD, &rq[0]));
    CHECK_RC(MPI_Recv_init(b, N, MPI_INT, from, 4, MPI_COMM_WORLD, &rq[1]));
    MPI_Type_free(&ev); /* the requests keep the type */
    for (int k = 0; k < 3; k++) {
        a[1] = rank * 1000 + 1 + k;
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_RC(MPI_Startall(2, rq));
        CHECK_RC(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
        CHECK(b[0] == from * 1000 + 1 + k && b[N - 1] == from * 1000 + 2 * N - 1, "persistent round %d", k);
    }
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);
}

static void subarray_3d(void) {
    enum { X = 6, Y = 5, Z = 7 };
    static int cube[X][Y][Z], out[2 * 3 * 4];
    for (int i = 0; i < X; i++)
        for (int j = 0; j < Y; j++)
            for (int k = 0; k < Z; k++) cube[i][j][k] = i * 100 + j * 10 + k;
    int sz[] = {X, Y, Z}, sub[] = {2, 3, 4}, st[] = {3, 1, 2};
    MPI_Datatype t;
    CHECK_RC(MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_C, MPI_INT, &t));
    CHECK_RC(MPI_Type_commit(&t));
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    CHECK_RC(MPI_Sendrecv(cube, 1, t, to, 5, out, 24, MPI_INT, from, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    int n = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++, n++) CHECK(out[n] == (3 + i) * 100 + (1 + j) * 10 + 2 + k, "3-D subarray %d: %d", n, out[n]);
    MPI_Type_free(&t);
}

static void large_count_constructors(void) {
    /* Each _c constructor against its int twin: same layout (pack bytes). */
    MPI_Datatype a[8], b[8];
    MPI_Count cbl[] = {2, 1}, cd[] = {3, 0};
    int ibl[] = {2, 1}, id[] = {3, 0};
    MPI_Aint ad[] = {12, 0};
    MPI_Count cad[] = {12, 0};
    MPI_Datatype ts[] = {MPI_INT, MPI_SHORT};
    MPI_Count csz[] = {4, 5}, csub[] = {2, 2}, cst[] = {1, 1};
    int isz[] = {4, 5}, isub[] = {2, 2}, ist[] = {1, 1};
    MPI_Count cgs[] = {9};
    int igs[] = {9}, dist[] = {MPI_DISTRIBUTE_CYCLIC}, darg[] = {2}, ps[] = {2};
    CHECK_RC(MPI_Type_contiguous_c(3, MPI_INT, &a[0]));
    CHECK_RC(MPI_Type_contiguous(3, MPI_INT, &b[0]));
    CHECK_RC(MPI_Type_create_hvector_c(2, 2, 12, MPI_INT, &a[1]));
    CHECK_RC(MPI_Type_create_hvector(2, 2, 12, MPI_INT, &b[1]));
    CHECK_RC(MPI_Type_indexed_c(2, cbl, cd, MPI_INT, &a[2]));
    CHECK_RC(MPI_Type_indexed(2, ibl, id, MPI_INT, &b[2]));
    CHECK_RC(MPI_Type_create_hindexed_c(2, cbl, cad, MPI_INT, &a[3]));
    CHECK_RC(MPI_Type_create_hindexed(2, ibl, ad, MPI_INT, &b[3]));
    CHECK_RC(MPI_Type_create_indexed_block_c(2, 2, cd, MPI_INT, &a[4]));
    CHECK_RC(MPI_Type_create_indexed_block(2, 2, id, MPI_INT, &b[4]));
    CHECK_RC(MPI_Type_create_struct_c(2, cbl, cad, ts, &a[5]));
    CHECK_RC(MPI_Type_create_struct(2, ibl, ad, ts, &b[5]));
    CHECK_RC(MPI_Type_create_subarray_c(2, csz, csub, cst, MPI_ORDER_FORTRAN, MPI_INT, &a[6]));
    CHECK_RC(MPI_Type_create_subarray(2, isz, isub, ist, MPI_ORDER_FORTRAN, MPI_INT, &b[6]));
    CHECK_RC(MPI_Type_create_darray_c(2, 1, 1, cgs, dist, darg, ps, MPI_ORDER_C, MPI_INT, &a[7]));
    CHECK_RC(MPI_Type_create_darray(2, 1, 1, igs, dist, darg, ps, MPI_ORDER_C, MPI_INT, &b[7]));
    int src[64];
    for (int i = 0; i < 64; i++) src[i] = i * 7;
    for (int k = 0; k < 8; k++) {
        MPI_Type_commit(&a[k]);
        MPI_Type_commit(&b[k]);
        char pa[256], pb[256];
        int qa = 0, qb = 0;
        MPI_Aint la, ea, lb2, eb;
        CHECK_RC(MPI_Pack(src, 1, a[k], pa, sizeof pa, &qa, MPI_COMM_WORLD));
        CHECK_RC(MPI_Pack(src, 1, b[k], pb, sizeof pb, &qb, MPI_COMM_WORLD));
        MPI_Type_get_extent(a[k], &la, &ea);
        MPI_Type_get_extent(b[k], &lb2, &eb);
        CHECK(qa == qb && memcmp(pa, pb, qa) == 0 && la == lb2 && ea == eb, "_c constructor %d differs", k);
        MPI_Count ni, na, nl, nd;
        int comb, comb2, i2, a2, d2;
        CHECK_RC(MPI_Type_get_envelope_c(a[k], &ni, &na, &nl, &nd, &comb));
        CHECK_RC(MPI_Type_get_envelope(b[k], &i2, &a2, &d2, &comb2));
        CHECK(comb == comb2 && nl > 0 && na == 0 && nd == d2, "_c envelope %d: combiner %d/%d large %ld", k, comb, comb2, (long)nl);
        MPI_Type_free(&a[k]);
        MPI_Type_free(&b[k]);
    }
}

static void external32_more(void) {
    struct { wchar_t w; unsigned long ul; long double ld; float _Complex fc; uint16_t u16; } v = {0x263a, 0xfffffffeUL, 1.0L, 2.0f + 3.0f * I, 0x1234};
    MPI_Datatype t;
    int bl[] = {1, 1, 1, 1, 1};
    MPI_Aint d[5], base;
    MPI_Datatype ty[] = {MPI_WCHAR, MPI_UNSIGNED_LONG, MPI_LONG_DOUBLE, MPI_C_FLOAT_COMPLEX, MPI_UINT16_T};
    MPI_Get_address(&v, &base);
    MPI_Get_address(&v.w, &d[0]);
    MPI_Get_address(&v.ul, &d[1]);
    MPI_Get_address(&v.ld, &d[2]);
    MPI_Get_address(&v.fc, &d[3]);
    MPI_Get_address(&v.u16, &d[4]);
    for (int i = 0; i < 5; i++) d[i] -= base;
    CHECK_RC(MPI_Type_create_struct(5, bl, d, ty, &t));
    CHECK_RC(MPI_Type_commit(&t));
    MPI_Aint sz, pos = 0;
    CHECK_RC(MPI_Pack_external_size("external32", 1, t, &sz));
    CHECK(sz == 2 + 4 + 16 + 8 + 2, "external32 size %ld", (long)sz);
    unsigned char out[64];
    CHECK_RC(MPI_Pack_external("external32", &v, 1, t, out, sizeof out, &pos));
    unsigned char want[] = {0x26, 0x3a, 0xff, 0xff, 0xff, 0xfe, 0x3f, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                            0x40, 0x00, 0x00, 0x00, 0x40, 0x40, 0x00, 0x00, 0x12, 0x34};
    for (unsigned i = 0; i < sizeof want; i++) CHECK(out[i] == want[i], "external32 byte %u: %02x want %02x", i, out[i], want[i]);
    typeof(v) back;
    memset(&back, 0, sizeof back);
    MPI_Aint ip = 0;
    CHECK_RC(MPI_Unpack_external("external32", out, pos, &ip, &back, 1, t));
    CHECK(back.w == v.w && back.ul == v.ul && back.ld == 1.0L && back.fc == v.fc && back.u16 == v.u16, "external32 round trip");
    MPI_Type_free(&t);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    packed_message();
    probe_then_receive();
    bsend_and_persistent();
    subarray_3d();
    large_count_constructors();
    external32_more();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("dt_more OK\n");
    MPI_Finalize();
    return 0;
}
