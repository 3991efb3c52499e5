/* Reduction operations: every predefined op on every type it is defined
 * for (Allreduce, Reduce, Scan, checked against a fold in rank order),
 * MINLOC/MAXLOC on the pair types, logical ops on C_BOOL/LOGICAL, complex
 * SUM/PROD, long double; invalid op/type pairs; bit-identical Allreduce of
 * doubles on every rank; user ops, commutative and not (2x2 matrix product,
 * checked for rank order), on contiguous and non-contiguous types;
 * Op_commutative, Op_free, Reduce_local, Op_create_c. */
#include "check.h"
#include <complex.h>
#include <stdbool.h>
#include <stdint.h>

static int rank, size;

enum { N = 7 };

#define OPS_ARITH {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN}
#define OPS_LOGIC {MPI_LAND, MPI_LOR, MPI_LXOR}
#define OPS_BIT {MPI_BAND, MPI_BOR, MPI_BXOR}

static const char *opname(MPI_Op op) {
    return op == MPI_SUM ? "SUM" : op == MPI_PROD ? "PROD" : op == MPI_MAX ? "MAX" : op == MPI_MIN ? "MIN"
         : op == MPI_LAND ? "LAND" : op == MPI_LOR ? "LOR" : op == MPI_LXOR ? "LXOR" : op == MPI_BAND ? "BAND"
         : op == MPI_BOR ? "BOR" : op == MPI_BXOR ? "BXOR" : "?";
}

/* Runs Allreduce, Reduce to the last rank, and Scan of N elements of type
 * T (MPI type MT) with op, inputs in(r, i), and compares with a fold. */
#define DEFINE_CHECK(NAME, T, COMBINE, EQ)                                                            \
    static void NAME(MPI_Datatype mt, const char *tname, MPI_Op op, T (*in)(int, int)) {          \
        T s[N], d[N], want[N], pre[N];                                                            \
        for (int i = 0; i < N; i++) {                                                             \
            s[i] = in(rank, i);                                                                   \
            want[i] = in(0, i);                                                                   \
            for (int k = 1; k < size; k++) want[i] = COMBINE(op, want[i], in(k, i));              \
            pre[i] = in(0, i);                                                                    \
            for (int k = 1; k <= rank; k++) pre[i] = COMBINE(op, pre[i], in(k, i));               \
        }                                                                                         \
        CHECK_RC(MPI_Allreduce(s, d, N, mt, op, MPI_COMM_WORLD));                                 \
        for (int i = 0; i < N; i++) CHECK(EQ(d[i], want[i]), "allreduce %s %s [%d]", opname(op), tname, i); \
        memset(d, 0, sizeof d);                                                                   \
        CHECK_RC(MPI_Reduce(s, d, N, mt, op, size - 1, MPI_COMM_WORLD));                          \
        if (rank == size - 1)                                                                     \
            for (int i = 0; i < N; i++) CHECK(EQ(d[i], want[i]), "reduce %s %s [%d]", opname(op), tname, i); \
        CHECK_RC(MPI_Scan(s, d, N, mt, op, MPI_COMM_WORLD));                                      \
        for (int i = 0; i < N; i++) CHECK(EQ(d[i], pre[i]), "scan %s %s [%d]", opname(op), tname, i); \
    }

#define ARITH(op, a, b) ((op) == MPI_SUM ? (a) + (b) : (op) == MPI_PROD ? (a) * (b) : (op) == MPI_MAX ? ((a) > (b) ? (a) : (b)) : ((a) < (b) ? (a) : (b)))
#define INTOP(op, a, b) ((op) == MPI_LAND ? ((a) && (b)) : (op) == MPI_LOR ? ((a) || (b)) : (op) == MPI_LXOR ? (!(a) != !(b)) \
    : (op) == MPI_BAND ? ((a) & (b)) : (op) == MPI_BOR ? ((a) | (b)) : (op) == MPI_BXOR ? ((a) ^ (b)) : ARITH(op, a, b))
#define CPLXOP(op, a, b) ((op) == MPI_SUM ? (a) + (b) : (a) * (b))
#define EQ(a, b) ((a) == (b))

/* Integers: small values so products stay exact; some zeros for logic. */
#define INT_TYPE(T, NAME)                                                              \
    static T in_##NAME(int r, int i) { return (T)((r * 5 + i * 3) % 4 + (i == 2 ? -1 : 0) * ((T)-1 < 0)); } \
    static T intop_##NAME(MPI_Op op, T a, T b) { return (T)(INTOP(op, a, b)); }          \
    DEFINE_CHECK(check_##NAME, T, intop_##NAME, EQ)

INT_TYPE(signed char, schar)
INT_TYPE(unsigned char, uchar)
INT_TYPE(short, short)
INT_TYPE(unsigned short, ushort)
INT_TYPE(int, int)
INT_TYPE(unsigned, uint)
INT_TYPE(long, long)
INT_TYPE(unsigned long, ulong)
INT_TYPE(long long, llong)
INT_TYPE(unsigned long long, ullong)
INT_TYPE(int8_t, i8)
INT_TYPE(int16_t, i16)
INT_TYPE(int32_t, i32)
INT_TYPE(int64_t, i64)
INT_TYPE(uint8_t, u8)
INT_TYPE(uint16_t, u16)
INT_TYPE(uint32_t, u32)
INT_TYPE(uint64_t, u64)

#define FLOAT_TYPE(T, NAME)                                                             \
    static T in_##NAME(int r, int i) { return (T)(((r * 3 + i) % 5) * 0.5 - 1.0); }      \
    static T op_##NAME(MPI_Op op, T a, T b) { return ARITH(op, a, b); }                 \
    DEFINE_CHECK(check_##NAME, T, op_##NAME, EQ)

FLOAT_TYPE(float, float)
FLOAT_TYPE(double, double)
FLOAT_TYPE(long double, ldouble)

#define CPLX_TYPE(T, NAME)                                                                         \
    static T in_##NAME(int r, int i) { return (T)((r + i) % 3 - 1) + (T)((r * i) % 2 + 1) * I; }   \
    static T op_##NAME(MPI_Op op, T a, T b) { return CPLXOP(op, a, b); }                           \
    DEFINE_CHECK(check_##NAME, T, op_##NAME, EQ)

CPLX_TYPE(float _Complex, fcplx)
CPLX_TYPE(double _Complex, dcplx)
CPLX_TYPE(long double _Complex, ldcplx)

static bool in_bool(int r, int i) { return ((r + i) % 3) != 0 || i == 0; }
static bool op_bool(MPI_Op op, bool a, bool b) { return INTOP(op, a, b); }
DEFINE_CHECK(check_bool, bool, op_bool, EQ)

static unsigned char in_byte(int r, int i) { return (unsigned char)(r * 37 + i * 11); }
static unsigned char op_byte(MPI_Op op, unsigned char a, unsigned char b) { return (unsigned char)INTOP(op, a, b); }
DEFINE_CHECK(check_byte, unsigned char, op_byte, EQ)

/* MINLOC / MAXLOC: values with ties, the index is the rank. */
#define LOC_TYPE(V, IDX, NAME)                                                                  \
    typedef struct { V v; IDX k; } pair_##NAME;                                                 \
    static pair_##NAME in_##NAME(int r, int i) { pair_##NAME p = {(V)((r * (i + 1)) % 3), (IDX)r}; return p; } \
    static pair_##NAME op_##NAME(MPI_Op op, pair_##NAME a, pair_##NAME b) {                     \
        int better = op == MPI_MAXLOC ? a.v > b.v : a.v < b.v;                                  \
        if (better || (a.v == b.v && a.k < b.k)) return a;                                      \
        return b;                                                                               \
    }                                                                                           \
    static int eq_##NAME(pair_##NAME a, pair_##NAME b) { return a.v == b.v && a.k == b.k; }     \
    DEFINE_CHECK(check_##NAME, pair_##NAME, op_##NAME, eq_##NAME)

LOC_TYPE(float, int, float_int)
LOC_TYPE(double, int, double_int)
LOC_TYPE(long, int, long_int)
LOC_TYPE(int, int, two_int)
LOC_TYPE(short, int, short_int)
LOC_TYPE(long double, int, ldouble_int)
LOC_TYPE(float, float, two_real)
LOC_TYPE(double, double, two_dp)

static void all_predefined(void) {
    MPI_Op arith[] = OPS_ARITH, logic[] = OPS_LOGIC, bit[] = OPS_BIT;
#define RUN_INT(NAME, MT)                                                   \
    for (int k = 0; k < 4; k++) check_##NAME(MT, #MT, arith[k], in_##NAME); \
    for (int k = 0; k < 3; k++) check_##NAME(MT, #MT, logic[k], in_##NAME); \
    for (int k = 0; k < 3; k++) check_##NAME(MT, #MT, bit[k], in_##NAME);
    RUN_INT(schar, MPI_SIGNED_CHAR)
    RUN_INT(uchar, MPI_UNSIGNED_CHAR)
    RUN_INT(short, MPI_SHORT)
    RUN_INT(ushort, MPI_UNSIGNED_SHORT)
    RUN_INT(int, MPI_INT)
    RUN_INT(uint, MPI_UNSIGNED)
    RUN_INT(long, MPI_LONG)
    RUN_INT(ulong, MPI_UNSIGNED_LONG)
    RUN_INT(llong, MPI_LONG_LONG)
    RUN_INT(ullong, MPI_UNSIGNED_LONG_LONG)
    RUN_INT(i8, MPI_INT8_T)
    RUN_INT(i16, MPI_INT16_T)
    RUN_INT(i32, MPI_INT32_T)
    RUN_INT(i64, MPI_INT64_T)
    RUN_INT(u8, MPI_UINT8_T)
    RUN_INT(u16, MPI_UINT16_T)
    RUN_INT(u32, MPI_UINT32_T)
    RUN_INT(u64, MPI_UINT64_T)
    /* Fortran integers: arithmetic and bitwise, not logical. */
    for (int k = 0; k < 4; k++) check_int(MPI_INTEGER, "MPI_INTEGER", arith[k], in_int);
    for (int k = 0; k < 3; k++) check_int(MPI_INTEGER, "MPI_INTEGER", bit[k], in_int);
    /* MPI_AINT, MPI_OFFSET, MPI_COUNT: every integer operation, logical
     * ones included (as MPICH allows; programs written for it use them). */
    {
        MPI_Datatype multi[] = {MPI_AINT, MPI_OFFSET, MPI_COUNT};
        const char *mname[] = {"MPI_AINT", "MPI_OFFSET", "MPI_COUNT"};
        for (int t = 0; t < 3; t++) {
            for (int k = 0; k < 4; k++) check_i64(multi[t], mname[t], arith[k], in_i64);
            for (int k = 0; k < 3; k++) check_i64(multi[t], mname[t], logic[k], in_i64);
            for (int k = 0; k < 3; k++) check_i64(multi[t], mname[t], bit[k], in_i64);
        }
    }
    for (int k = 0; k < 4; k++) {
        check_float(MPI_FLOAT, "MPI_FLOAT", arith[k], in_float);
        check_double(MPI_DOUBLE, "MPI_DOUBLE", arith[k], in_double);
        check_ldouble(MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", arith[k], in_ldouble);
        check_float(MPI_REAL, "MPI_REAL", arith[k], in_float);
        check_double(MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", arith[k], in_double);
    }
    for (int k = 0; k < 2; k++) {
        check_fcplx(MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", arith[k], in_fcplx);
        check_dcplx(MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", arith[k], in_dcplx);
        check_ldcplx(MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", arith[k], in_ldcplx);
        check_fcplx(MPI_COMPLEX, "MPI_COMPLEX", arith[k], in_fcplx);
        check_dcplx(MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", arith[k], in_dcplx);
    }
    for (int k = 0; k < 3; k++) {
        check_bool(MPI_C_BOOL, "MPI_C_BOOL", logic[k], in_bool);
        check_int(MPI_LOGICAL, "MPI_LOGICAL", logic[k], in_int);
        check_byte(MPI_BYTE, "MPI_BYTE", bit[k], in_byte);
    }
    MPI_Op locs[] = {MPI_MINLOC, MPI_MAXLOC};
    for (int k = 0; k < 2; k++) {
        check_float_int(MPI_FLOAT_INT, "MPI_FLOAT_INT", locs[k], in_float_int);
        check_double_int(MPI_DOUBLE_INT, "MPI_DOUBLE_INT", locs[k], in_double_int);
        check_long_int(MPI_LONG_INT, "MPI_LONG_INT", locs[k], in_long_int);
        check_two_int(MPI_2INT, "MPI_2INT", locs[k], in_two_int);
        check_short_int(MPI_SHORT_INT, "MPI_SHORT_INT", locs[k], in_short_int);
        check_ldouble_int(MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT", locs[k], in_ldouble_int);
        check_two_real(MPI_2REAL, "MPI_2REAL", locs[k], in_two_real);
        check_two_dp(MPI_2DOUBLE_PRECISION, "MPI_2DOUBLE_PRECISION", locs[k], in_two_dp);
    }
}

/* Pairs an op is not defined for give MPI_ERR_OP. */
static void invalid_pairs(void) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    struct { MPI_Op op; MPI_Datatype t; } bad[] = {
        {MPI_SUM, MPI_C_BOOL}, {MPI_BAND, MPI_DOUBLE}, {MPI_MAXLOC, MPI_INT}, {MPI_LAND, MPI_DOUBLE},
        {MPI_SUM, MPI_BYTE}, {MPI_MAX, MPI_C_DOUBLE_COMPLEX}, {MPI_LOR, MPI_INTEGER}, {MPI_SUM, MPI_2INT},
        {MPI_REPLACE, MPI_INT}, {MPI_NO_OP, MPI_INT}, {MPI_OP_NULL, MPI_INT},
    };
    char buf[64] = {0}, out[64];
    for (unsigned k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        int rc = MPI_Allreduce(buf, out, 1, bad[k].t, bad[k].op, MPI_COMM_WORLD);
        CHECK(error_class(rc) == MPI_ERR_OP, "pair %u gave %d", k, rc);
        rc = MPI_Reduce_local(buf, out, 1, bad[k].t, bad[k].op);
        CHECK(error_class(rc) == MPI_ERR_OP, "local pair %u gave %d", k, rc);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* Allreduce of doubles of mixed magnitudes: every rank gets the same bits,
 * for sizes that take every algorithm. */
static void bit_identical(void) {
    int counts[] = {1, 3, 100, 1000, 20000, 300000};
    for (int c = 0; c < 6; c++) {
        int n = counts[c];
        double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
        unsigned long long seed = 88172645463325252ULL ^ (rank * 2654435761ULL);
        for (int i = 0; i < n; i++) {
            seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
            double m = (double)(seed % 1000000) / 1000.0;
            int e = (int)((seed >> 20) % 40) - 20;
            x[i] = (seed & 1 ? -m : m) * __builtin_powi(10.0, e);
        }
        MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX};
        for (int o = 0; o < 3; o++) {
            if (o == 2) x[0] = rank % 2 ? 0.0 : -0.0;
            CHECK_RC(MPI_Allreduce(x, y, n, MPI_DOUBLE, ops[o], MPI_COMM_WORLD));
            /* Compare with rank 0's bits. */
            double *z = malloc(n * sizeof(double));
            memcpy(z, y, n * sizeof(double));
            CHECK_RC(MPI_Bcast(z, n * 8, MPI_BYTE, 0, MPI_COMM_WORLD));
            CHECK(memcmp(z, y, n * sizeof(double)) == 0, "allreduce of %d doubles (op %d) differs from rank 0's bits", n, o);
            free(z);
        }
        free(x);
        free(y);
    }
}

/* 2x2 matrices of unsigned ints: the product does not commute. */
typedef struct { unsigned a, b, c, d; } mat;
static mat mul(mat x, mat y) {
    mat z = {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
    return z;
}
static mat mat_of(int r, int i) {
    mat m = {(unsigned)(r + 1), (unsigned)(i % 5 + 1), 1u, (unsigned)(r * i % 3)};
    return m;
}
static int mat_eq(mat x, mat y) { return x.a == y.a && x.b == y.b && x.c == y.c && x.d == y.d; }

/* inout[i] = in[i] * inout[i]: in holds the lower ranks. */
static void mat_mul_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    mat *x = in, *y = inout;
    for (int i = 0; i < *len; i++) y[i] = mul(x[i], y[i]);
}
/* The same on a padded layout (20-byte stride, see padded type below). */
typedef struct { mat m; unsigned pad; } pmat;
static void pmat_mul_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    pmat *x = in, *y = inout;
    for (int i = 0; i < *len; i++) y[i].m = mul(x[i].m, y[i].m);
}
static void mat_mul_fn_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt) {
    (void)dt;
    mat *x = in, *y = inout;
    for (MPI_Count i = 0; i < *len; i++) y[i] = mul(x[i], y[i]);
}
static void int_sum_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
    CHECK(*dt == MPI_INT, "user function got datatype %x", *dt);
    int *x = in, *y = inout;
    for (int i = 0; i < *len; i++) y[i] += x[i];
}

static void user_ops(void) {
    MPI_Op matop, matop_c, pmatop, sumop;
    CHECK_RC(MPI_Op_create(mat_mul_fn, 0, &matop));
    CHECK_RC(MPI_Op_create_c(mat_mul_fn_c, 0, &matop_c));
    CHECK_RC(MPI_Op_create(pmat_mul_fn, 0, &pmatop));
    CHECK_RC(MPI_Op_create(int_sum_fn, 1, &sumop));
    int comm;
    MPI_Op_commutative(matop, &comm);
    CHECK(comm == 0, "matop commutative");
    MPI_Op_commutative(sumop, &comm);
    CHECK(comm == 1, "sumop not commutative");
    MPI_Op_commutative(MPI_SUM, &comm);
    CHECK(comm == 1, "MPI_SUM not commutative");

    MPI_Datatype mt, pmt, tmp;
    MPI_Type_contiguous(4, MPI_UNSIGNED, &mt);
    MPI_Type_commit(&mt);
    MPI_Type_contiguous(4, MPI_UNSIGNED, &tmp);
    MPI_Type_create_resized(tmp, 0, sizeof(pmat), &pmt);
    MPI_Type_commit(&pmt);
    MPI_Type_free(&tmp);

    int counts[] = {1, 7, 1000, 5000};
    for (int c = 0; c < 4; c++) {
        int n = counts[c];
        mat *s = malloc(n * sizeof(mat)), *d = malloc(n * sizeof(mat)), *want = malloc(n * sizeof(mat)), *pre = malloc(n * sizeof(mat));
        pmat *ps = malloc(n * sizeof(pmat)), *pd = malloc(n * sizeof(pmat));
        for (int i = 0; i < n; i++) {
            s[i] = mat_of(rank, i);
            ps[i].m = s[i];
            ps[i].pad = 0xdeadbeef;
            pd[i].pad = 0xfeedface;
            want[i] = mat_of(0, i);
            for (int k = 1; k < size; k++) want[i] = mul(want[i], mat_of(k, i));
            pre[i] = mat_of(0, i);
            for (int k = 1; k <= rank; k++) pre[i] = mul(pre[i], mat_of(k, i));
        }
        MPI_Op ops[] = {matop, matop_c};
        for (int o = 0; o < 2; o++) {
            CHECK_RC(MPI_Allreduce(s, d, n, mt, ops[o], MPI_COMM_WORLD));
            for (int i = 0; i < n; i++) CHECK(mat_eq(d[i], want[i]), "user allreduce n=%d op %d [%d]", n, o, i);
            for (int root = 0; root < size; root++) {
                memset(d, 0, n * sizeof(mat));
                CHECK_RC(MPI_Reduce(s, d, n, mt, ops[o], root, MPI_COMM_WORLD));
                if (rank == root)
                    for (int i = 0; i < n; i++) CHECK(mat_eq(d[i], want[i]), "user reduce n=%d root %d [%d]", n, root, i);
            }
            CHECK_RC(MPI_Scan(s, d, n, mt, ops[o], MPI_COMM_WORLD));
            for (int i = 0; i < n; i++) CHECK(mat_eq(d[i], pre[i]), "user scan n=%d [%d]", n, i);
            CHECK_RC(MPI_Exscan(s, d, n, mt, ops[o], MPI_COMM_WORLD));
            if (rank > 0)
                for (int i = 0; i < n; i++) {
                    mat e = mat_of(0, i);
                    for (int k = 1; k < rank; k++) e = mul(e, mat_of(k, i));
                    CHECK(mat_eq(d[i], e), "user exscan n=%d [%d]", n, i);
                }
        }
        /* Non-contiguous layout: the function sees the 20-byte stride. */
        CHECK_RC(MPI_Allreduce(ps, pd, n, pmt, pmatop, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++) {
            CHECK(mat_eq(pd[i].m, want[i]), "padded user allreduce n=%d [%d]", n, i);
            CHECK(pd[i].pad == 0xfeedface, "padding written");
        }
        /* Reduce_scatter_block: n matrices per rank. */
        mat *big = malloc((size_t)n * size * sizeof(mat));
        for (int k = 0; k < size; k++)
            for (int i = 0; i < n; i++) big[(size_t)k * n + i] = mat_of(rank, i + k);
        CHECK_RC(MPI_Reduce_scatter_block(big, d, n, mt, matop, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++) {
            mat e = mat_of(0, i + rank);
            for (int k = 1; k < size; k++) e = mul(e, mat_of(k, i + rank));
            CHECK(mat_eq(d[i], e), "user reduce_scatter_block n=%d [%d]", n, i);
        }
        free(big);
        free(s); free(d); free(want); free(pre); free(ps); free(pd);
    }

    /* Commutative user op equals MPI_SUM. */
    int xs[100], ys[100], zs[100];
    for (int i = 0; i < 100; i++) xs[i] = rank * 100 + i;
    CHECK_RC(MPI_Allreduce(xs, ys, 100, MPI_INT, sumop, MPI_COMM_WORLD));
    CHECK_RC(MPI_Allreduce(xs, zs, 100, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(memcmp(ys, zs, sizeof ys) == 0, "user sum differs from MPI_SUM");

    /* Reduce_local: predefined and user. */
    int a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
    CHECK_RC(MPI_Reduce_local(a, b, 3, MPI_INT, MPI_SUM));
    CHECK(b[0] == 11 && b[1] == 22 && b[2] == 33, "reduce_local sum");
    mat m1 = mat_of(1, 1), m2 = mat_of(2, 3);
    mat m3 = m2;
    CHECK_RC(MPI_Reduce_local(&m1, &m3, 1, mt, matop));
    CHECK(mat_eq(m3, mul(m1, m2)), "reduce_local user order");

    MPI_Op_free(&matop);
    MPI_Op_free(&matop_c);
    MPI_Op_free(&pmatop);
    MPI_Op_free(&sumop);
    CHECK(matop == MPI_OP_NULL, "Op_free did not reset the handle");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Op sum = MPI_SUM;
    CHECK(error_class(MPI_Op_free(&sum)) == MPI_ERR_OP, "freeing MPI_SUM");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Type_free(&mt);
    MPI_Type_free(&pmt);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    all_predefined();
    invalid_pairs();
    bit_identical();
    user_ops();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("coll_ops OK\n");
    MPI_Finalize();
    return 0;
}
