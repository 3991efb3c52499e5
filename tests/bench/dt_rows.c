/* The copy floor under pack_sub / unpack_sub of dt_pack.c, without MPI:
 * 512 rows of 4 KiB at a stride of 8 KiB (the 512 x 512 subarray of a
 * 1024 x 1024 matrix of doubles) copied to / from a packed 2 MiB buffer by
 * several row copies. Every variant runs ROUNDS times, interleaved with the
 * others, each round a warm-up then ITERS timed copies; prints
 * "variant median_us best_us" per line.
 *
 *   gather_memcpy   memcpy per row (what a simple pack does; glibc picks
 *                   rep movsb for 4 KiB on CPUs with ERMS)
 *   gather_movsb    rep movsb per row, inline
 *   gather_avx2     128-byte AVX2 loop per row
 *   gather_avx2_pf  the same, prefetching the next row (mpi-core's kernel)
 *   gather_avx2_al  AVX2 loop whose strided-side accesses are 64-byte
 *                   aligned (one unaligned head chunk, then aligned ones)
 *   gather_nt       AVX2 loop with non-temporal stores
 *   flat_memcpy     one memcpy of 2 MiB contiguous (no rows at all)
 *   scatter_*       the same for unpack (packed -> rows)
 *   scatter_avx2_pfw  AVX2 loop prefetching the next row for writing
 *                   (PREFETCHW: mpi-core's unpack kernel)
 *
 * Build: cc -O2 -o dt_rows tests/bench/dt_rows.c
 * Run: ./dt_rows [rounds [cpu|wall [offset]]]   (cpu: thread CPU time, as
 * dt_pack.c; offset: both buffers start that many bytes past a 64-byte
 * boundary, e.g. 16 as glibc's malloc gives large blocks)
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { G = 1024, S = 512, ROW = S * 8, STRIDE = G * 8, START = (100 * G + 200) * 8, ITERS = 200 };

static int cputime;

/* Seconds, wall clock or (with `cpu`) this thread's CPU time. */
static double now(void) {
    struct timespec t;
    clock_gettime(cputime ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* One row copy: `d` <- `s`, ROW bytes; `next` is the strided side's next
 * row (for prefetching). */
typedef void (*rowfn)(char *d, const char *s, const char *next);

static void r_memcpy(char *d, const char *s, const char *next) {
    (void)next;
    memcpy(d, s, ROW);
}

static void r_movsb(char *d, const char *s, const char *next) {
    size_t n = ROW;
    (void)next;
    __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}

#define BLOCK128(store)                                                        \
    for (int j = 0; j < ROW; j += 128) {                                       \
        __m256i v0 = _mm256_loadu_si256((const __m256i *)(s + j));             \
        __m256i v1 = _mm256_loadu_si256((const __m256i *)(s + j + 32));        \
        __m256i v2 = _mm256_loadu_si256((const __m256i *)(s + j + 64));        \
        __m256i v3 = _mm256_loadu_si256((const __m256i *)(s + j + 96));        \
        if (next) {                                                            \
            _mm_prefetch(next + j, _MM_HINT_T0);                               \
            _mm_prefetch(next + j + 64, _MM_HINT_T0);                          \
        }                                                                      \
        store((__m256i *)(d + j), v0);                                         \
        store((__m256i *)(d + j + 32), v1);                                    \
        store((__m256i *)(d + j + 64), v2);                                    \
        store((__m256i *)(d + j + 96), v3);                                    \
    }

__attribute__((target("avx2"))) static void r_avx2(char *d, const char *s, const char *next) {
    (void)next;
    next = NULL;
    BLOCK128(_mm256_storeu_si256)
}

__attribute__((target("avx2"))) static void r_avx2_pf(char *d, const char *s, const char *next) {
    BLOCK128(_mm256_storeu_si256)
}

/* The strided side's accesses aligned: one unaligned 128-byte head chunk,
 * then from the first 64-byte boundary of the strided side on, aligned
 * chunks, and the last 128 bytes unaligned (overlapping). `gather`: the
 * strided side is the source. */
#define ALIGNED_ROW(gather)                                                    \
    do {                                                                       \
        const char *a = (gather) ? s : d;                                      \
        size_t h = (64 - ((size_t)a & 63)) & 63;                               \
        CHUNK(d, s, loadu, storeu);                                            \
        size_t j = h;                                                          \
        for (; j + 128 <= ROW; j += 128) {                                     \
            if (gather) CHUNK(d + j, s + j, load, storeu);                     \
            else CHUNK(d + j, s + j, loadu, store);                            \
        }                                                                      \
        if (j < ROW) CHUNK(d + ROW - 128, s + ROW - 128, loadu, storeu);       \
    } while (0)
#define CHUNK(d, s, ld, st)                                                    \
    do {                                                                       \
        __m256i v0 = _mm256_##ld##_si256((const __m256i *)(s));                \
        __m256i v1 = _mm256_##ld##_si256((const __m256i *)(s) + 1);            \
        __m256i v2 = _mm256_##ld##_si256((const __m256i *)(s) + 2);            \
        __m256i v3 = _mm256_##ld##_si256((const __m256i *)(s) + 3);            \
        _mm256_##st##_si256((__m256i *)(d), v0);                               \
        _mm256_##st##_si256((__m256i *)(d) + 1, v1);                           \
        _mm256_##st##_si256((__m256i *)(d) + 2, v2);                           \
        _mm256_##st##_si256((__m256i *)(d) + 3, v3);                           \
    } while (0)

__attribute__((target("avx2"))) static void r_al_g(char *d, const char *s, const char *next) {
    (void)next;
    ALIGNED_ROW(1);
}

__attribute__((target("avx2"))) static void r_al_s(char *d, const char *s, const char *next) {
    (void)next;
    ALIGNED_ROW(0);
}

/* The AVX2 loop prefetching the next row for writing (PREFETCHW): what
 * mpi-core's kernel does when it unpacks. */
__attribute__((target("avx2,prfchw"))) static void r_avx2_pfw(char *d, const char *s, const char *next) {
    for (int j = 0; j < ROW; j += 128) {
        __m256i v0 = _mm256_loadu_si256((const __m256i *)(s + j));
        __m256i v1 = _mm256_loadu_si256((const __m256i *)(s + j + 32));
        __m256i v2 = _mm256_loadu_si256((const __m256i *)(s + j + 64));
        __m256i v3 = _mm256_loadu_si256((const __m256i *)(s + j + 96));
        __builtin_prefetch(next + j, 1, 3);
        __builtin_prefetch(next + j + 64, 1, 3);
        _mm256_storeu_si256((__m256i *)(d + j), v0);
        _mm256_storeu_si256((__m256i *)(d + j + 32), v1);
        _mm256_storeu_si256((__m256i *)(d + j + 64), v2);
        _mm256_storeu_si256((__m256i *)(d + j + 96), v3);
    }
}

__attribute__((target("avx2"))) static void r_nt(char *d, const char *s, const char *next) {
    (void)next;
    next = NULL;
    BLOCK128(_mm256_stream_si256)
}

static char *mat, *packed;

static void run_rows(rowfn f, int gather) {
    for (int i = 0; i < S; i++) {
        char *row = mat + START + (size_t)i * STRIDE, *p = packed + (size_t)i * ROW;
        const char *next = i + 1 < S ? row + STRIDE : row;
        if (gather)
            f(p, row, next);
        else
            f(row, p, next);
    }
    if (f == r_nt) _mm_sfence();
}

static rowfn cur;
static void gather(void) { run_rows(cur, 1); }
static void scatter(void) { run_rows(cur, 0); }
static void flat(void) { memcpy(packed, mat + START, (size_t)S * ROW); }

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 31;
    cputime = argc > 2 && strcmp(argv[2], "cpu") == 0;
    size_t off = argc > 3 ? (size_t)atoi(argv[3]) % 64 : 0;
    struct { const char *name; rowfn f; void (*run)(void); } v[] = {
        {"gather_memcpy", r_memcpy, gather}, {"gather_movsb", r_movsb, gather},
        {"gather_avx2", r_avx2, gather},     {"gather_avx2_pf", r_avx2_pf, gather},
        {"gather_avx2_al", r_al_g, gather},  {"gather_nt", r_nt, gather},         {"flat_memcpy", NULL, flat},
        {"scatter_memcpy", r_memcpy, scatter}, {"scatter_movsb", r_movsb, scatter},
        {"scatter_avx2", r_avx2, scatter},   {"scatter_avx2_pf", r_avx2_pf, scatter},
        {"scatter_avx2_pfw", r_avx2_pfw, scatter}, {"scatter_avx2_al", r_al_s, scatter}, {"scatter_nt", r_nt, scatter},
    };
    int nv = sizeof v / sizeof v[0];
    if (!__builtin_cpu_supports("avx2")) nv = 2; /* memcpy and movsb only */
    mat = (char *)aligned_alloc(64, (size_t)G * G * 8 + 64) + off;
    packed = (char *)aligned_alloc(64, (size_t)S * ROW + 64) + off;
    memset(mat, 1, (size_t)G * G * 8);
    memset(packed, 2, (size_t)S * ROW);
    double *t = malloc(sizeof(double) * nv * rounds);
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < nv; k++) {
            cur = v[k].f;
            if (cur == r_nt && off % 32) continue; /* streaming stores need 32-byte alignment */
            for (int w = 0; w < ITERS / 10; w++) v[k].run();
            double t0 = now();
            for (int it = 0; it < ITERS; it++) v[k].run();
            t[k * rounds + r] = (now() - t0) / ITERS * 1e6;
        }
    for (int k = 0; k < nv; k++) {
        if (v[k].f == r_nt && off % 32) continue;
        qsort(t + k * rounds, rounds, sizeof(double), cmp);
        printf("%s %.2f %.2f\n", v[k].name, t[k * rounds + rounds / 2], t[k * rounds]);
    }
    return 0;
}
