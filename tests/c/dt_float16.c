/* MPIX_C_FLOAT16 (C's _Float16, MPICH's extension type that mpi4py maps
 * numpy.float16 to): size, extent, name, envelope, dup; point-to-point,
 * pack/unpack, bcast; MAX/MIN/SUM/PROD reductions rounded to nearest even,
 * checked bit for bit against the C compiler's _Float16 arithmetic and
 * against hand-computed ties; the ops it has no meaning for are refused. */
#include "check.h"
#include <stdint.h>

static int rank, size;

static uint16_t bits(_Float16 h) {
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
}

/* One operation, rounded once to binary16 (the volatile store forbids
 * keeping excess precision between operations). */
static _Float16 f16op(MPI_Op op, _Float16 a, _Float16 b) {
    volatile _Float16 r;
    if (op == MPI_SUM) r = a + b;
    else if (op == MPI_PROD) r = a * b;
    else if (op == MPI_MAX) r = a > b ? a : b;
    else r = a < b ? a : b;
    return r;
}

enum { N = 9 };

/* Inputs with halves, thirds and large values so sums and products round. */
static _Float16 in(int r, int i) {
    float v = (float)((r * 7 + i * 5) % 11 - 5) / 3.0f;
    if (i == 7) v = 30000.0f + r;
    if (i == 8) v = 0.1f * (float)(r + 1);
    return (_Float16)v;
}

static void check_reduce(MPI_Op op, const char *name) {
    _Float16 s[N], d[N], want[N], pre[N];
    for (int i = 0; i < N; i++) {
        s[i] = in(rank, i);
        want[i] = in(0, i);
        for (int k = 1; k < size; k++) want[i] = f16op(op, want[i], in(k, i));
        pre[i] = in(0, i);
        for (int k = 1; k <= rank; k++) pre[i] = f16op(op, pre[i], in(k, i));
    }
    CHECK_RC(MPI_Allreduce(s, d, N, MPIX_C_FLOAT16, op, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++)
        CHECK(bits(d[i]) == bits(want[i]), "allreduce %s [%d]: 0x%04x want 0x%04x", name, i, bits(d[i]), bits(want[i]));
    memset(d, 0, sizeof d);
    CHECK_RC(MPI_Reduce(s, d, N, MPIX_C_FLOAT16, op, 0, MPI_COMM_WORLD));
    if (rank == 0)
        for (int i = 0; i < N; i++)
            CHECK(bits(d[i]) == bits(want[i]), "reduce %s [%d]: 0x%04x want 0x%04x", name, i, bits(d[i]), bits(want[i]));
    CHECK_RC(MPI_Scan(s, d, N, MPIX_C_FLOAT16, op, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++)
        CHECK(bits(d[i]) == bits(pre[i]), "scan %s [%d]: 0x%04x want 0x%04x", name, i, bits(d[i]), bits(pre[i]));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* The handle encodes the size (0x4c00SSII). */
    CHECK(MPIX_C_FLOAT16 == (MPI_Datatype)0x4c000246, "handle 0x%x", (unsigned)MPIX_C_FLOAT16);
    int sz, len, ni, na, nd, comb;
    MPI_Aint lb, ext, tlb, text;
    char name[MPI_MAX_OBJECT_NAME];
    CHECK_RC(MPI_Type_size(MPIX_C_FLOAT16, &sz));
    CHECK(sz == 2, "size %d", sz);
    CHECK_RC(MPI_Type_get_extent(MPIX_C_FLOAT16, &lb, &ext));
    CHECK(lb == 0 && ext == 2, "lb %ld extent %ld", (long)lb, (long)ext);
    CHECK_RC(MPI_Type_get_true_extent(MPIX_C_FLOAT16, &tlb, &text));
    CHECK(tlb == 0 && text == 2, "true lb %ld extent %ld", (long)tlb, (long)text);
    CHECK_RC(MPI_Type_get_name(MPIX_C_FLOAT16, name, &len));
    CHECK(strcmp(name, "MPIX_C_FLOAT16") == 0 && len == 14, "name '%s'", name);
    CHECK_RC(MPI_Type_get_envelope(MPIX_C_FLOAT16, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_NAMED && ni == 0 && na == 0 && nd == 0, "envelope %d %d %d %d", ni, na, nd, comb);

    MPI_Datatype dup, vec;
    CHECK_RC(MPI_Type_dup(MPIX_C_FLOAT16, &dup));
    CHECK_RC(MPI_Type_size(dup, &sz));
    CHECK(sz == 2, "dup size %d", sz);
    CHECK_RC(MPI_Type_get_envelope(dup, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_DUP && nd == 1, "dup envelope %d", comb);
    MPI_Datatype inner;
    CHECK_RC(MPI_Type_get_contents(dup, 0, 0, 1, NULL, NULL, &inner));
    CHECK(inner == MPIX_C_FLOAT16, "dup of 0x%x", (unsigned)inner);
    CHECK_RC(MPI_Type_vector(3, 1, 2, MPIX_C_FLOAT16, &vec));
    CHECK_RC(MPI_Type_commit(&vec));
    CHECK_RC(MPI_Type_get_extent(vec, &lb, &ext));
    CHECK(ext == 10, "vector extent %ld", (long)ext);

    /* Point to point around a ring: plain and through the vector type. */
    _Float16 out[6], got[6];
    for (int i = 0; i < 6; i++) out[i] = (_Float16)(rank * 10 + i + 0.5f);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    MPI_Status st;
    CHECK_RC(MPI_Sendrecv(out, 6, MPIX_C_FLOAT16, to, 1, got, 6, MPIX_C_FLOAT16, from, 1, MPI_COMM_WORLD, &st));
    int cnt;
    CHECK_RC(MPI_Get_count(&st, MPIX_C_FLOAT16, &cnt));
    CHECK(cnt == 6, "count %d", cnt);
    for (int i = 0; i < 6; i++)
        CHECK(bits(got[i]) == bits((_Float16)(from * 10 + i + 0.5f)), "recv [%d] 0x%04x", i, bits(got[i]));
    memset(got, 0, sizeof got);
    CHECK_RC(MPI_Sendrecv(out, 1, vec, to, 2, got, 3, dup, from, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < 3; i++)
        CHECK(bits(got[i]) == bits((_Float16)(from * 10 + 2 * i + 0.5f)), "vector recv [%d]", i);

    /* Pack and unpack. */
    char pk[64];
    int pos = 0, psize;
    CHECK_RC(MPI_Pack_size(5, MPIX_C_FLOAT16, MPI_COMM_WORLD, &psize));
    CHECK(psize >= 10, "pack size %d", psize);
    CHECK_RC(MPI_Pack(out, 5, MPIX_C_FLOAT16, pk, sizeof pk, &pos, MPI_COMM_WORLD));
    CHECK(pos == 10, "packed %d bytes", pos);
    memset(got, 0, sizeof got);
    pos = 0;
    CHECK_RC(MPI_Unpack(pk, sizeof pk, &pos, got, 5, MPIX_C_FLOAT16, MPI_COMM_WORLD));
    CHECK(memcmp(got, out, 10) == 0, "unpacked differs");

    /* Bcast from the last rank. */
    memcpy(got, out, sizeof got);
    CHECK_RC(MPI_Bcast(got, 6, MPIX_C_FLOAT16, size - 1, MPI_COMM_WORLD));
    CHECK(bits(got[5]) == bits((_Float16)((size - 1) * 10 + 5.5f)), "bcast");

    /* Reductions against the compiler's _Float16 arithmetic. */
    check_reduce(MPI_SUM, "SUM");
    check_reduce(MPI_PROD, "PROD");
    check_reduce(MPI_MAX, "MAX");
    check_reduce(MPI_MIN, "MIN");

    /* Hand-computed roundings (Reduce_local: b = a op b). */
    uint16_t a[] = {0x2e66, 0x1000, 0x7bff, 0x3c00, 0x0001, 0x3c01};
    uint16_t b[] = {0x3266, 0x3c00, 0x7bff, 0xc000, 0x0001, 0x3c00};
    /* 0.1 + 0.2 is a tie, to even 0x34cc; 1 + 2^-11 is a tie, to 1.0;
     * 65504 + 65504 overflows to inf; 1 - 2 = -1; two smallest
     * subnormals; 1.0009765625 + 1 = 2.0009765625 rounds to even 2.0. */
    uint16_t want[] = {0x34cc, 0x3c00, 0x7c00, 0xbc00, 0x0002, 0x4000};
    CHECK_RC(MPI_Reduce_local(a, b, 6, MPIX_C_FLOAT16, MPI_SUM));
    for (int i = 0; i < 6; i++) CHECK(b[i] == want[i], "sum [%d]: 0x%04x want 0x%04x", i, b[i], want[i]);
    uint16_t pa[] = {0x4200, 0x3e00, 0x5bff, 0x5c00, 0x0200};
    uint16_t pb[] = {0x4000, 0x3e00, 0x5bff, 0x5c00, 0x3800};
    /* 3 * 2 = 6, 1.5 * 1.5 = 2.25, 255.875^2 = 65472.02 rounds to 65472,
     * 256^2 overflows, 2^-15 * 0.5 = 2^-16 (subnormal) */
    uint16_t pwant[] = {0x4600, 0x4080, 0x7bfe, 0x7c00, 0x0100};
    CHECK_RC(MPI_Reduce_local(pa, pb, 5, MPIX_C_FLOAT16, MPI_PROD));
    for (int i = 0; i < 5; i++) CHECK(pb[i] == pwant[i], "prod [%d]: 0x%04x want 0x%04x", i, pb[i], pwant[i]);

    /* Operations without a meaning on floating point. */
    int rc = MPI_Allreduce(a, b, 1, MPIX_C_FLOAT16, MPI_BXOR, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_OP, "BXOR on float16: %d", rc);
    rc = MPI_Allreduce(a, b, 1, MPIX_C_FLOAT16, MPI_MAXLOC, MPI_COMM_WORLD);
    CHECK(error_class(rc) == MPI_ERR_OP, "MAXLOC on float16: %d", rc);

    MPI_Type_free(&vec);
    MPI_Type_free(&dup);
    MPI_Finalize();
    if (rank == 0) printf("dt_float16 OK\n");
    return 0;
}
