/* A model of halo_col (tests/bench/dt_pack.c) without MPI: two threads,
 * pinned to CPUs 0 and 1, exchange one column of a 1024 x 1026 grid of
 * doubles (1024 doubles, stride 1026) through one ring per direction of
 * stamped 64-byte-aligned records, as mpi-core's shared-memory rings carry
 * eager messages. Each thread has its own grid, sends its column 1024 and
 * receives into column 0, like both ranks of the benchmark. Ways to move
 * the 8 KiB:
 *
 *   temp        pack into a temporary, copy it into one record, wait for the
 *               peer's record, unpack it (mpi-core's eager path)
 *   direct      pack straight into one record, wait, unpack
 *   chunked N   records of N doubles: after publishing each, unpack every
 *               record of the peer's that is already there (pack and unpack
 *               pipelined, never waiting while there is something to pack)
 *   lockstep N  records of N doubles; after the first, each step waits for
 *               the peer's previous record and packs the next one in the same
 *               loop that unpacks it (its rows are those just packed: the
 *               lines are still in L1)
 *   rt          round trip of one cache line between the two CPUs (ns): the
 *               state of the host (where it runs the two vCPUs)
 *
 *   cc -O2 -pthread -o model tests/bench/dt_halo_model.c
 *   ./model rt; ./model temp; ./model direct; ./model chunked 128; ./model lockstep 256
 *
 * Prints microseconds per exchange (20000 exchanges after 2000 warm-up).
 * No flow control: within one exchange a thread writes one column's worth
 * and cannot get further ahead of its peer, and a ring holds 32 columns.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { R = 1024, LD = 1026, RING = 1 << 18, ITERS = 20000, WARM = 2000 };
enum { TEMP, DIRECT, CHUNKED, LOCKSTEP };
static int mode, chunk = R;
static char *ring[2]; /* ring[i] is written by thread i */
static _Atomic long line __attribute__((aligned(64)));

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

/* A ring position: records of a fixed size, wrapping to the start when the
 * next would not fit; the stamp (first 8 bytes) is the record's sequence
 * number, stored last. */
struct pos { unsigned long at, seq; };
static _Atomic unsigned long *stamp(char *r, struct pos p) { return (_Atomic unsigned long *)(r + p.at); }
static double *payload(char *r, struct pos p) { return (double *)(r + p.at + 64); }
static void advance(struct pos *p, int n) {
    p->at += 64 + n * 8;
    if (p->at + 64 + n * 8 > RING) p->at = 0;
    p->seq++;
}
static void publish(char *r, struct pos *p, int n) {
    atomic_store_explicit(stamp(r, *p), p->seq + 1, memory_order_release);
    advance(p, n);
}
static int arrived(char *r, struct pos p) {
    return atomic_load_explicit(stamp(r, p), memory_order_acquire) == p.seq + 1;
}
static void pack(const double *s, double *d, int n) { for (int i = 0; i < n; i++) d[i] = s[(long)i * LD]; }
static void unpack(const double *s, double *d, int n) { for (int i = 0; i < n; i++) d[(long)i * LD] = s[i]; }

static void *run(void *arg) {
    int me = (int)(long)arg;
    pin(me);
    double *grid = malloc(sizeof(double) * (R + 2) * LD), tmp[R];
    for (long i = 0; i < (long)(R + 2) * LD; i++) grid[i] = i;
    const double *src = grid + LD + LD - 2;
    double *dst = grid + LD;
    char *out = ring[me], *in = ring[1 - me];
    struct pos w = {0, 0}, r = {0, 0};
    int n = mode == TEMP || mode == DIRECT ? R : chunk, k, u;
    double t0 = 0;
    for (int it = -WARM; it < ITERS; it++) {
        if (it == 0) t0 = now();
        switch (mode) {
        case TEMP:
        case DIRECT:
            if (mode == TEMP) {
                pack(src, tmp, R);
                memcpy(payload(out, w), tmp, sizeof tmp);
            } else {
                pack(src, payload(out, w), R);
            }
            publish(out, &w, R);
            while (!arrived(in, r)) {}
            unpack(payload(in, r), dst, R);
            advance(&r, R);
            break;
        case CHUNKED:
            for (k = 0, u = 0; u < R / n;) {
                if (k < R / n) {
                    pack(src + (long)k * n * LD, payload(out, w), n);
                    publish(out, &w, n);
                    k++;
                }
                while (u < R / n && arrived(in, r)) {
                    unpack(payload(in, r), dst + (long)u * n * LD, n);
                    advance(&r, n);
                    u++;
                    if (k < R / n) break;
                }
            }
            break;
        case LOCKSTEP:
            pack(src, payload(out, w), n);
            publish(out, &w, n);
            for (k = 1; k <= R / n; k++) {
                while (!arrived(in, r)) {}
                const double *p = payload(in, r), *s = src + (long)k * n * LD;
                double *d = dst + (long)(k - 1) * n * LD;
                if (k < R / n) {
                    double *q = payload(out, w);
                    for (int i = 0; i < n; i++) {
                        q[i] = s[(long)i * LD];
                        d[(long)i * LD] = p[i];
                    }
                    publish(out, &w, n);
                } else {
                    unpack(p, d, n);
                }
                advance(&r, n);
            }
            break;
        }
    }
    if (me == 0) printf("%.3f\n", (now() - t0) / ITERS * 1e6);
    free(grid);
    return 0;
}

static void *pong(void *arg) {
    (void)arg;
    pin(1);
    for (long i = 0; i < 100000; i++) {
        while (atomic_load(&line) != 2 * i + 1) {}
        atomic_store(&line, 2 * i + 2);
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *m = argc > 1 ? argv[1] : "temp";
    pthread_t t[2];
    if (strcmp(m, "rt") == 0) {
        pin(0);
        pthread_create(&t[0], 0, pong, 0);
        double t0 = now();
        for (long i = 0; i < 100000; i++) {
            atomic_store(&line, 2 * i + 1);
            while (atomic_load(&line) != 2 * i + 2) {}
        }
        printf("%.1f\n", (now() - t0) / 100000 * 1e9);
        pthread_join(t[0], 0);
        return 0;
    }
    mode = strcmp(m, "temp") == 0 ? TEMP : strcmp(m, "direct") == 0 ? DIRECT : strcmp(m, "chunked") == 0 ? CHUNKED : LOCKSTEP;
    if (argc > 2) chunk = atoi(argv[2]);
    if (chunk < 1 || chunk > R || R % chunk) {
        fprintf(stderr, "chunk must divide %d\n", R);
        return 1;
    }
    for (int i = 0; i < 2; i++) {
        ring[i] = aligned_alloc(4096, RING);
        memset(ring[i], 0, RING);
    }
    for (long i = 0; i < 2; i++) pthread_create(&t[i], 0, run, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    return 0;
}
