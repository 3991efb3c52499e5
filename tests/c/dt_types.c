/* Datatype constructors from the standard's examples (chapter 4): size,
 * extent, true extent, envelope and contents, the bytes Pack produces,
 * names, match_size, addresses, the MPI-1 legacy calls, external32. */
#include "check.h"
#include <stdint.h>

static void check_ext(MPI_Datatype t, MPI_Aint lb, MPI_Aint ext, MPI_Aint tlb, MPI_Aint text, int size, const char *what) {
    MPI_Aint l, e, tl, te;
    int s;
    CHECK_RC(MPI_Type_get_extent(t, &l, &e));
    CHECK_RC(MPI_Type_get_true_extent(t, &tl, &te));
    CHECK_RC(MPI_Type_size(t, &s));
    CHECK(l == lb && e == ext, "%s: lb %ld extent %ld, want %ld %ld", what, (long)l, (long)e, (long)lb, (long)ext);
    CHECK(tl == tlb && te == text, "%s: true lb %ld extent %ld, want %ld %ld", what, (long)tl, (long)te, (long)tlb, (long)text);
    CHECK(s == size, "%s: size %d want %d", what, s, size);
    MPI_Count cs, cl, ce;
    CHECK_RC(MPI_Type_size_x(t, &cs));
    CHECK_RC(MPI_Type_get_extent_x(t, &cl, &ce));
    CHECK(cs == size && cl == lb && ce == ext, "%s: _x queries", what);
}

/* Decodes `t` and checks combiner and arguments. */
static void check_contents(MPI_Datatype t, int combiner, int ni, const int *iv, int na, const MPI_Aint *av, int nd, const MPI_Datatype *dv) {
    int i_, a_, d_, c_;
    CHECK_RC(MPI_Type_get_envelope(t, &i_, &a_, &d_, &c_));
    CHECK(c_ == combiner && i_ == ni && a_ == na && d_ == nd, "envelope %d %d %d %d, want %d %d %d %d", c_, i_, a_, d_, combiner, ni, na, nd);
    int ints[64];
    MPI_Aint addrs[64];
    MPI_Datatype types[16];
    CHECK_RC(MPI_Type_get_contents(t, 64, 64, 16, ints, addrs, types));
    for (int k = 0; k < ni; k++) CHECK(ints[k] == iv[k], "combiner %d int %d: %d want %d", combiner, k, ints[k], iv[k]);
    for (int k = 0; k < na; k++) CHECK(addrs[k] == av[k], "combiner %d addr %d: %ld want %ld", combiner, k, (long)addrs[k], (long)av[k]);
    for (int k = 0; k < nd; k++) {
        int pi, pa, pd, pc;
        MPI_Type_get_envelope(types[k], &pi, &pa, &pd, &pc);
        if (pc == MPI_COMBINER_NAMED) {
            CHECK(types[k] == dv[k], "combiner %d type %d: predefined handle %x want %x", combiner, k, types[k], dv[k]);
        } else {
            /* A derived child comes back as a new handle of an equal type. */
            MPI_Aint l1, e1, l2, e2;
            int s1, s2;
            MPI_Type_get_extent(types[k], &l1, &e1);
            MPI_Type_get_extent(dv[k], &l2, &e2);
            MPI_Type_size(types[k], &s1);
            MPI_Type_size(dv[k], &s2);
            CHECK(l1 == l2 && e1 == e2 && s1 == s2, "combiner %d child %d differs", combiner, k);
            CHECK_RC(MPI_Type_free(&types[k]));
        }
    }
}

/* Packs one element of `t` from a buffer whose byte i is i (origin at
 * buf + origin) and compares with the expected source offsets. */
static void check_pack(MPI_Datatype t, int count, int origin, const int *offs, int n, const char *what) {
    unsigned char buf[512], out[512];
    for (int i = 0; i < 512; i++) buf[i] = (unsigned char)i;
    int pos = 0, psize;
    CHECK_RC(MPI_Pack_size(count, t, MPI_COMM_WORLD, &psize));
    CHECK(psize == n, "%s: pack size %d want %d", what, psize, n);
    CHECK_RC(MPI_Pack(buf + origin, count, t, out, sizeof out, &pos, MPI_COMM_WORLD));
    CHECK(pos == n, "%s: position %d want %d", what, pos, n);
    for (int i = 0; i < n; i++) CHECK(out[i] == (unsigned char)(origin + offs[i]), "%s: packed byte %d is %d want %d", what, i, out[i], origin + offs[i]);
    /* And back: unpack into a zeroed buffer puts exactly those bytes back. */
    unsigned char back[512];
    memset(back, 0, sizeof back);
    pos = 0;
    CHECK_RC(MPI_Unpack(out, n, &pos, back + origin, count, t, MPI_COMM_WORLD));
    CHECK(pos == n, "%s: unpack position %d", what, pos);
    for (int i = 0; i < n; i++) CHECK(back[origin + offs[i]] == (unsigned char)(origin + offs[i]), "%s: unpacked byte %d", what, i);
}

static int seq(int *o, int from, int len, int k) {
    for (int i = 0; i < len; i++) o[k++] = from + i;
    return k;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int offs[512], k;

    /* Predefined: sizes from the handle, names, envelope. */
    struct { MPI_Datatype t; int size; const char *name; } pre[] = {
        {MPI_CHAR, 1, "MPI_CHAR"}, {MPI_SHORT, 2, "MPI_SHORT"}, {MPI_INT, 4, "MPI_INT"},
        {MPI_LONG, 8, "MPI_LONG"}, {MPI_FLOAT, 4, "MPI_FLOAT"}, {MPI_DOUBLE, 8, "MPI_DOUBLE"},
        {MPI_LONG_DOUBLE, 16, "MPI_LONG_DOUBLE"}, {MPI_INT64_T, 8, "MPI_INT64_T"}, {MPI_UINT16_T, 2, "MPI_UINT16_T"},
        {MPI_C_DOUBLE_COMPLEX, 16, "MPI_C_DOUBLE_COMPLEX"}, {MPI_AINT, 8, "MPI_AINT"}, {MPI_COUNT, 8, "MPI_COUNT"},
        {MPI_OFFSET, 8, "MPI_OFFSET"}, {MPI_DOUBLE_PRECISION, 8, "MPI_DOUBLE_PRECISION"}, {MPI_INTEGER, 4, "MPI_INTEGER"},
        {MPI_2INT, 8, "MPI_2INT"}, {MPI_DOUBLE_INT, 12, "MPI_DOUBLE_INT"}, {MPI_SHORT_INT, 6, "MPI_SHORT_INT"},
        {MPI_LONG_DOUBLE_INT, 20, "MPI_LONG_DOUBLE_INT"}, {MPI_C_BOOL, 1, "MPI_C_BOOL"}, {MPI_WCHAR, 4, "MPI_WCHAR"},
        {MPI_BYTE, 1, "MPI_BYTE"}, {MPI_PACKED, 1, "MPI_PACKED"}, {MPI_UB, 0, "MPI_UB"},
    };
    for (unsigned i = 0; i < sizeof pre / sizeof pre[0]; i++) {
        int s, len, ni, na, nd, c;
        char name[MPI_MAX_OBJECT_NAME];
        CHECK_RC(MPI_Type_size(pre[i].t, &s));
        CHECK(s == pre[i].size, "%s size %d", pre[i].name, s);
        CHECK_RC(MPI_Type_get_name(pre[i].t, name, &len));
        CHECK(strcmp(name, pre[i].name) == 0 && len == (int)strlen(name), "name %s want %s", name, pre[i].name);
        CHECK_RC(MPI_Type_get_envelope(pre[i].t, &ni, &na, &nd, &c));
        CHECK(c == MPI_COMBINER_NAMED && ni == 0 && na == 0 && nd == 0, "%s envelope", pre[i].name);
    }
    check_ext(MPI_DOUBLE_INT, 0, 16, 0, 12, 12, "DOUBLE_INT");
    check_ext(MPI_SHORT_INT, 0, 8, 0, 8, 6, "SHORT_INT");
    MPI_Datatype m;
    CHECK_RC(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &m));
    CHECK(m == MPI_REAL8, "match real 8");
    CHECK_RC(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &m));
    CHECK(m == MPI_INTEGER4, "match integer 4");
    CHECK_RC(MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &m));
    CHECK(m == MPI_COMPLEX16, "match complex 16");
    CHECK(error_class(MPI_Type_match_size(MPI_TYPECLASS_REAL, 3, &m)) == MPI_ERR_ARG, "match size 3");

    /* Contiguous. */
    MPI_Datatype c3;
    CHECK_RC(MPI_Type_contiguous(3, MPI_INT, &c3));
    check_ext(c3, 0, 12, 0, 12, 12, "contiguous");
    { int iv[] = {3}; MPI_Datatype dv[] = {MPI_INT}; check_contents(c3, MPI_COMBINER_CONTIGUOUS, 1, iv, 0, NULL, 1, dv); }

    /* Example 4.6 (vector of the (double, char) type): build the old type
     * as a struct: {(double,0),(char,8)}, extent 16. */
    MPI_Datatype dc, vec;
    int bl2[] = {1, 1};
    MPI_Aint d2[] = {0, 8};
    MPI_Datatype t2[] = {MPI_DOUBLE, MPI_CHAR};
    CHECK_RC(MPI_Type_create_struct(2, bl2, d2, t2, &dc));
    check_ext(dc, 0, 16, 0, 9, 9, "struct {double,char}");
    { int iv[] = {2, 1, 1}; check_contents(dc, MPI_COMBINER_STRUCT, 3, iv, 2, d2, 2, t2); }
    CHECK_RC(MPI_Type_vector(2, 3, 4, dc, &vec));
    check_ext(vec, 0, 112, 0, 105, 54, "vector(2,3,4)");
    { int iv[] = {2, 3, 4}; MPI_Datatype dv[] = {dc}; check_contents(vec, MPI_COMBINER_VECTOR, 3, iv, 0, NULL, 1, dv); }
    CHECK_RC(MPI_Type_commit(&vec));
    k = 0;
    for (int b = 0; b < 2; b++)
        for (int j = 0; j < 3; j++) k = seq(offs, b * 64 + j * 16, 9, k);
    check_pack(vec, 1, 0, offs, k, "vector");

    /* Vector with a negative stride: vector(3, 1, -2) of int. */
    MPI_Datatype nv;
    CHECK_RC(MPI_Type_vector(3, 1, -2, MPI_INT, &nv));
    check_ext(nv, -16, 20, -16, 20, 12, "vector negative stride");
    CHECK_RC(MPI_Type_commit(&nv));
    k = 0;
    k = seq(offs, 0, 4, k);
    k = seq(offs, -8, 4, k);
    k = seq(offs, -16, 4, k);
    check_pack(nv, 1, 32, offs, k, "negative stride");

    /* Hvector. */
    MPI_Datatype hv;
    CHECK_RC(MPI_Type_create_hvector(3, 2, 20, MPI_SHORT, &hv));
    check_ext(hv, 0, 44, 0, 44, 12, "hvector");
    { int iv[] = {3, 2}; MPI_Aint av[] = {20}; MPI_Datatype dv[] = {MPI_SHORT}; check_contents(hv, MPI_COMBINER_HVECTOR, 2, iv, 1, av, 1, dv); }

    /* Example 4.7: indexed(2, {3,1}, {4,0}) of the (double, char) type. */
    MPI_Datatype ix;
    int bl[] = {3, 1}, di[] = {4, 0};
    CHECK_RC(MPI_Type_indexed(2, bl, di, dc, &ix));
    check_ext(ix, 0, 112, 0, 105, 36, "indexed");
    { int iv[] = {2, 3, 1, 4, 0}; MPI_Datatype dv[] = {dc}; check_contents(ix, MPI_COMBINER_INDEXED, 5, iv, 0, NULL, 1, dv); }
    CHECK_RC(MPI_Type_commit(&ix));
    k = 0;
    for (int j = 0; j < 3; j++) k = seq(offs, 64 + j * 16, 9, k);
    k = seq(offs, 0, 9, k);
    check_pack(ix, 1, 0, offs, k, "indexed");

    /* Hindexed, indexed_block, hindexed_block. */
    MPI_Datatype hx, ib, hb;
    MPI_Aint hd[] = {24, 0};
    CHECK_RC(MPI_Type_create_hindexed(2, bl, hd, MPI_INT, &hx));
    check_ext(hx, 0, 36, 0, 36, 16, "hindexed");
    { int iv[] = {2, 3, 1}; MPI_Datatype dv[] = {MPI_INT}; check_contents(hx, MPI_COMBINER_HINDEXED, 3, iv, 2, hd, 1, dv); }
    int bd[] = {5, 1, 9};
    CHECK_RC(MPI_Type_create_indexed_block(3, 2, bd, MPI_INT, &ib));
    check_ext(ib, 4, 40, 4, 40, 24, "indexed_block");
    { int iv[] = {3, 2, 5, 1, 9}; MPI_Datatype dv[] = {MPI_INT}; check_contents(ib, MPI_COMBINER_INDEXED_BLOCK, 5, iv, 0, NULL, 1, dv); }
    CHECK_RC(MPI_Type_commit(&ib));
    k = 0;
    k = seq(offs, 20, 8, k);
    k = seq(offs, 4, 8, k);
    k = seq(offs, 36, 8, k);
    check_pack(ib, 1, 0, offs, k, "indexed_block");
    MPI_Aint hbd[] = {16, 2};
    CHECK_RC(MPI_Type_create_hindexed_block(2, 3, hbd, MPI_CHAR, &hb));
    check_ext(hb, 2, 17, 2, 17, 6, "hindexed_block");
    { int iv[] = {2, 3}; MPI_Datatype dv[] = {MPI_CHAR}; check_contents(hb, MPI_COMBINER_HINDEXED_BLOCK, 2, iv, 2, hbd, 1, dv); }

    /* Example 4.8-like struct with alignment padding: {float[2], double, char[3]}. */
    MPI_Datatype st;
    int sbl[] = {2, 1, 3};
    MPI_Aint sd[] = {0, 8, 16};
    MPI_Datatype stt[] = {MPI_FLOAT, MPI_DOUBLE, MPI_CHAR};
    CHECK_RC(MPI_Type_create_struct(3, sbl, sd, stt, &st));
    check_ext(st, 0, 24, 0, 19, 19, "struct padded");
    /* A struct with a hole: {char at 0, int at 4}: extent 8, packs 5 bytes. */
    MPI_Datatype holes;
    int hbl[] = {1, 1};
    MPI_Aint hdd[] = {0, 4};
    MPI_Datatype htt[] = {MPI_CHAR, MPI_INT};
    CHECK_RC(MPI_Type_create_struct(2, hbl, hdd, htt, &holes));
    check_ext(holes, 0, 8, 0, 8, 5, "struct with hole");
    CHECK_RC(MPI_Type_commit(&holes));
    k = 0;
    for (int e = 0; e < 3; e++) {
        offs[k++] = e * 8;
        k = seq(offs, e * 8 + 4, 4, k);
    }
    check_pack(holes, 3, 0, offs, k, "struct with hole x3");

    /* Resized and markers of the old interface. */
    MPI_Datatype rs, lbub, c2;
    CHECK_RC(MPI_Type_create_resized(MPI_INT, -4, 16, &rs));
    check_ext(rs, -4, 16, 0, 4, 4, "resized");
    { MPI_Aint av[] = {-4, 16}; MPI_Datatype dv[] = {MPI_INT}; check_contents(rs, MPI_COMBINER_RESIZED, 0, NULL, 2, av, 1, dv); }
    int mbl[] = {1, 1, 1};
    MPI_Aint md[] = {-8, 0, 32};
    MPI_Datatype mt[] = {MPI_LB, MPI_INT, MPI_UB};
    CHECK_RC(MPI_Type_struct(3, mbl, md, mt, &lbub));
    check_ext(lbub, -8, 40, 0, 4, 4, "LB/UB markers");
    MPI_Aint e1, l1, u1;
    CHECK_RC(MPI_Type_extent(lbub, &e1));
    CHECK_RC(MPI_Type_lb(lbub, &l1));
    CHECK_RC(MPI_Type_ub(lbub, &u1));
    CHECK(e1 == 40 && l1 == -8 && u1 == 32, "legacy extent %ld lb %ld ub %ld", (long)e1, (long)l1, (long)u1);
    CHECK_RC(MPI_Type_contiguous(2, lbub, &c2));
    check_ext(c2, -8, 80, 0, 44, 8, "contiguous of markers");

    /* Subarray: 4x5 ints, 2x3 block at (1,2), C and Fortran order. */
    MPI_Datatype sa, sf;
    int sz[] = {4, 5}, ssz[] = {2, 3}, sst[] = {1, 2};
    CHECK_RC(MPI_Type_create_subarray(2, sz, ssz, sst, MPI_ORDER_C, MPI_INT, &sa));
    check_ext(sa, 0, 80, 28, 32, 24, "subarray C");
    { int iv[] = {2, 4, 5, 2, 3, 1, 2, MPI_ORDER_C}; MPI_Datatype dv[] = {MPI_INT}; check_contents(sa, MPI_COMBINER_SUBARRAY, 8, iv, 0, NULL, 1, dv); }
    CHECK_RC(MPI_Type_commit(&sa));
    k = 0;
    k = seq(offs, 28, 12, k);
    k = seq(offs, 48, 12, k);
    check_pack(sa, 1, 0, offs, k, "subarray C");
    CHECK_RC(MPI_Type_create_subarray(2, sz, ssz, sst, MPI_ORDER_FORTRAN, MPI_INT, &sf));
    CHECK_RC(MPI_Type_commit(&sf));
    k = 0;
    for (int j = 0; j < 3; j++) k = seq(offs, ((2 + j) * 4 + 1) * 4, 8, k);
    check_pack(sf, 1, 0, offs, k, "subarray Fortran");

    /* Darray contents. */
    MPI_Datatype da;
    int gs[] = {8, 6}, dist[] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC}, darg[] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[] = {2, 3};
    CHECK_RC(MPI_Type_create_darray(6, 4, 2, gs, dist, darg, ps, MPI_ORDER_C, MPI_INT, &da));
    check_ext(da, 0, 192, (4 * 6 + 2) * 4, ((7 * 6 + 3) - (4 * 6 + 2) + 1) * 4, 4 * 2 * 4, "darray");
    { int iv[] = {6, 4, 2, 8, 6, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_DFLT_DARG, 2, 2, 3, MPI_ORDER_C};
      MPI_Datatype dv[] = {MPI_INT}; check_contents(da, MPI_COMBINER_DARRAY, 12, iv, 0, NULL, 1, dv); }

    /* Dup keeps everything and decodes as DUP; names. */
    MPI_Datatype dp;
    CHECK_RC(MPI_Type_dup(vec, &dp));
    check_ext(dp, 0, 112, 0, 105, 54, "dup");
    { MPI_Datatype dv[] = {vec}; check_contents(dp, MPI_COMBINER_DUP, 0, NULL, 0, NULL, 1, dv); }
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    CHECK_RC(MPI_Type_get_name(dp, name, &len));
    CHECK(len == 0 && name[0] == 0, "derived types have an empty name");
    CHECK_RC(MPI_Type_set_name(dp, "halo column"));
    CHECK_RC(MPI_Type_get_name(dp, name, &len));
    CHECK(strcmp(name, "halo column") == 0 && len == 11, "name %s", name);
    /* The dup is committed since vec was: usable at once. */
    k = 0;
    for (int b = 0; b < 2; b++)
        for (int j = 0; j < 3; j++) k = seq(offs, b * 64 + j * 16, 9, k);
    check_pack(dp, 1, 0, offs, k, "dup");

    /* Large-count constructors decode with large counts. */
    MPI_Datatype lc;
    CHECK_RC(MPI_Type_vector_c(4, 2, 3, MPI_DOUBLE, &lc));
    MPI_Count ci, ca, cl, cd;
    int comb;
    CHECK_RC(MPI_Type_get_envelope_c(lc, &ci, &ca, &cl, &cd, &comb));
    CHECK(comb == MPI_COMBINER_VECTOR && ci == 0 && ca == 0 && cl == 3 && cd == 1, "vector_c envelope %ld %ld %ld %ld", (long)ci, (long)ca, (long)cl, (long)cd);
    MPI_Count lcv[3];
    MPI_Datatype lct;
    CHECK_RC(MPI_Type_get_contents_c(lc, 0, 0, 3, 1, NULL, NULL, lcv, &lct));
    CHECK(lcv[0] == 4 && lcv[1] == 2 && lcv[2] == 3 && lct == MPI_DOUBLE, "vector_c contents");
    check_ext(lc, 0, (3 * 3 + 2) * 8, 0, 88, 64, "vector_c");

    /* Fortran 90 parameterized types: one predefined handle per (p, r). */
    {
        MPI_Datatype f1, f2, fc, fi;
        CHECK_RC(MPI_Type_create_f90_real(10, MPI_UNDEFINED, &f1));
        CHECK_RC(MPI_Type_create_f90_real(10, MPI_UNDEFINED, &f2));
        CHECK(f1 == f2, "same (p, r), same handle");
        int s, ni, na, nd, c, iv[2];
        CHECK_RC(MPI_Type_size(f1, &s));
        CHECK(s == 8, "f90 real size %d", s);
        CHECK_RC(MPI_Type_get_envelope(f1, &ni, &na, &nd, &c));
        CHECK(c == MPI_COMBINER_F90_REAL && ni == 2 && na == 0 && nd == 0, "f90 real envelope");
        CHECK_RC(MPI_Type_get_contents(f1, 2, 0, 0, iv, NULL, NULL));
        CHECK(iv[0] == 10 && iv[1] == MPI_UNDEFINED, "f90 real contents");
        CHECK_RC(MPI_Type_create_f90_complex(MPI_UNDEFINED, 30, &fc));
        CHECK_RC(MPI_Type_size(fc, &s));
        CHECK(s == 8, "f90 complex size %d", s);
        CHECK_RC(MPI_Type_create_f90_integer(9, &fi));
        CHECK_RC(MPI_Type_size(fi, &s));
        CHECK(s == 4, "f90 integer size %d", s);
        CHECK(error_class(MPI_Type_free(&fi)) == MPI_ERR_TYPE, "f90 types cannot be freed");
        CHECK(error_class(MPI_Type_create_f90_real(40, 5000, &f1)) == MPI_ERR_ARG, "no such real kind");
        CHECK(error_class(MPI_Type_create_f90_integer(40, &fi)) == MPI_ERR_ARG, "no such integer kind");
    }

    /* Addresses. */
    double arr[10];
    MPI_Aint a0, a5, a5b;
    CHECK_RC(MPI_Get_address(&arr[0], &a0));
    CHECK_RC(MPI_Get_address(&arr[5], &a5));
    CHECK(MPI_Aint_diff(a5, a0) == 40, "Aint_diff");
    CHECK(MPI_Aint_add(a0, 40) == a5, "Aint_add");
    CHECK_RC(MPI_Address(&arr[5], &a5b));
    CHECK(a5b == a5, "MPI_Address");

    /* Pack several items one after the other, then unpack. */
    {
        int iv[3] = {1, 2, 3}, io[3];
        double dv = 2.5, dvo;
        char buf[64];
        int pos = 0, n1, n2;
        MPI_Pack_size(3, MPI_INT, MPI_COMM_WORLD, &n1);
        MPI_Pack_size(1, MPI_DOUBLE, MPI_COMM_WORLD, &n2);
        CHECK(n1 + n2 <= 64, "pack sizes %d %d", n1, n2);
        CHECK_RC(MPI_Pack(iv, 3, MPI_INT, buf, 64, &pos, MPI_COMM_WORLD));
        CHECK_RC(MPI_Pack(&dv, 1, MPI_DOUBLE, buf, 64, &pos, MPI_COMM_WORLD));
        CHECK(pos == 20, "position %d", pos);
        int ip = 0;
        CHECK_RC(MPI_Unpack(buf, pos, &ip, io, 3, MPI_INT, MPI_COMM_WORLD));
        CHECK_RC(MPI_Unpack(buf, pos, &ip, &dvo, 1, MPI_DOUBLE, MPI_COMM_WORLD));
        CHECK(io[0] == 1 && io[2] == 3 && dvo == 2.5 && ip == 20, "unpacked");
        /* Too small a buffer, reading past the end. */
        pos = 60;
        CHECK(error_class(MPI_Pack(iv, 3, MPI_INT, buf, 64, &pos, MPI_COMM_WORLD)) == MPI_ERR_ARG, "pack overflow");
        ip = 16;
        CHECK(error_class(MPI_Unpack(buf, 20, &ip, io, 3, MPI_INT, MPI_COMM_WORLD)) == MPI_ERR_TRUNCATE, "unpack past end");
    }

    /* external32: big-endian, standard sizes (MPI_LONG is 4 bytes). */
    {
        struct { int i; long l; double d; short s; } v = {0x01020304, -2, 1.5, 0x0a0b};
        MPI_Datatype et;
        int ebl[] = {1, 1, 1, 1};
        MPI_Aint ed[4];
        MPI_Datatype ett[] = {MPI_INT, MPI_LONG, MPI_DOUBLE, MPI_SHORT};
        MPI_Aint base;
        MPI_Get_address(&v, &base);
        MPI_Get_address(&v.i, &ed[0]);
        MPI_Get_address(&v.l, &ed[1]);
        MPI_Get_address(&v.d, &ed[2]);
        MPI_Get_address(&v.s, &ed[3]);
        for (int i = 0; i < 4; i++) ed[i] = MPI_Aint_diff(ed[i], base);
        CHECK_RC(MPI_Type_create_struct(4, ebl, ed, ett, &et));
        CHECK_RC(MPI_Type_commit(&et));
        MPI_Aint esz, pos = 0;
        CHECK_RC(MPI_Pack_external_size("external32", 2, et, &esz));
        CHECK(esz == 2 * (4 + 4 + 8 + 2), "external32 size %ld", (long)esz);
        unsigned char out[64];
        typeof(v) two[2] = {v, v};
        two[1].i = -1;
        CHECK_RC(MPI_Pack_external("external32", two, 2, et, out, sizeof out, &pos));
        CHECK(pos == esz, "external32 position %ld", (long)pos);
        unsigned char want[18] = {1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0x0a, 0x0b};
        for (int i = 0; i < 18; i++) CHECK(out[i] == want[i], "external32 byte %d: %02x want %02x", i, out[i], want[i]);
        CHECK(out[18] == 0xff && out[21] == 0xff, "second element int -1");
        typeof(v) back[2];
        memset(back, 0, sizeof back);
        MPI_Aint ip = 0;
        CHECK_RC(MPI_Unpack_external("external32", out, pos, &ip, back, 2, et));
        CHECK(back[0].i == v.i && back[0].l == -2 && back[0].d == 1.5 && back[0].s == 0x0a0b && back[1].i == -1, "external32 round trip");
        /* A vector of doubles in external32. */
        double dd[4] = {1.0, -2.0, 3.0, 4.0};
        MPI_Datatype ev;
        MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &ev);
        MPI_Type_commit(&ev);
        pos = 0;
        CHECK_RC(MPI_Pack_external("external32", dd, 1, ev, out, sizeof out, &pos));
        CHECK(pos == 16 && out[0] == 0x3f && out[1] == 0xf0 && out[8] == 0x40 && out[9] == 0x08, "external32 vector");
        CHECK(error_class(MPI_Pack_external("native", dd, 1, ev, out, sizeof out, &pos)) == MPI_ERR_ARG, "bad datarep");
        MPI_Type_free(&ev);
        MPI_Type_free(&et);
    }

    /* Get_value_index and Status_set_elements / Get_elements. */
    {
        MPI_Datatype p;
        CHECK_RC(MPI_Type_get_value_index(MPI_DOUBLE, MPI_INT, &p));
        CHECK(p == MPI_DOUBLE_INT, "value index");
        MPI_Status s;
        int n;
        CHECK_RC(MPI_Status_set_elements(&s, holes, 5));
        CHECK_RC(MPI_Get_elements(&s, holes, &n));
        CHECK(n == 5, "elements %d", n);
        CHECK_RC(MPI_Get_count(&s, holes, &n));
        CHECK(n == MPI_UNDEFINED, "count of 2.5 elements %d", n);
        CHECK_RC(MPI_Get_elements(&s, MPI_CHAR, &n));
        CHECK(n == 5 + 5 + 1, "bytes %d", n);
    }

    MPI_Datatype all[] = {c3, dc, vec, nv, hv, ix, hx, ib, hb, st, holes, rs, lbub, c2, sa, sf, da, dp, lc};
    for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++) {
        CHECK_RC(MPI_Type_free(&all[i]));
        CHECK(all[i] == MPI_DATATYPE_NULL, "freed handle is NULL");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) printf("dt_types OK\n");
    MPI_Finalize();
    return 0;
}
