/*
 * duet_workload.c: the duet paper's four artificial workloads (section 4.4), as a native duet
 * benchmark (docs/barrier-protocol.md, "Native programs") and as a plain program.
 *
 *   integer  an integer loop that lives in L1 (a 4 KiB table, multiply/xor/shift chain)
 *   float    a floating-point loop that lives in L1 (a 4 KiB table of doubles, mul/add chains)
 *   cache    a linear read-modify-write walk over 4 MiB (mostly last-level-cache hits)
 *   memory   a random pointer chase over 64 MiB (mostly last-level-cache misses)
 *
 * One iteration executes `--ops N` operations; the work is proportional to N, so the same
 * workload with N and 2N operations has a known 2.00x ratio, and 1.02N a 2% slowdown.
 *
 * Modes:
 *   duet_workload --kind K --ops N [--fill]   native duet benchmark (DUET_* environment)
 *   duet_workload --kind K --ops N --once     one iteration, nothing printed (command benchmarks,
 *                                             pyperf, hyperfine)
 *   duet_workload --kind K --ops N --bare I   I iterations timed alone, one line of JSON per
 *                                             iteration (harness overhead baseline)
 *   duet_workload --kind K --calibrate MS     prints the op count of an MS-millisecond iteration
 *
 * --fill: the paper's remedy for uneven load (section 4.4). With the duet barrier, a side that
 * finishes an iteration first spins at the barrier (a `pause` loop, then yields, then sleeps on
 * a futex after 100 ms), so its core stays "busy" but not with the workload's resource use.
 * With --fill, that side arrives at the barrier (publishes its generation) and then keeps
 * executing its own workload in small chunks (1/4096 of an iteration) until the other side
 * arrives, so both cores carry the same kind of load for the whole iteration. The fill work is
 * not timed: the measured iteration still starts at the barrier's release. After the last
 * iteration there is nothing to wait for (the barrier protocol has no end rendezvous), so the
 * last iteration of the shorter side is not followed by fill: 1 iteration in I+W.
 */
#include "duet_barrier.h"

#include <math.h>

#define CACHE_BYTES (4u << 20)
#define MEMORY_BYTES (64u << 20)
#define LINE 64u

enum kind { K_INTEGER, K_FLOAT, K_CACHE, K_MEMORY };

typedef struct workload {
    enum kind kind;
    uint64_t ops;
    uint64_t *table;     /* integer: 512 words (4 KiB) */
    double *ftable;      /* float: 512 doubles (4 KiB) */
    uint64_t *cache;     /* cache: 4 MiB */
    uint64_t cache_pos;
    uint64_t *memory;    /* memory: 64 MiB of cache lines, a single random cycle */
    uint64_t memory_pos;
    uint64_t sink;
    double fsink;
} workload;

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static int workload_init(workload *w, enum kind kind, uint64_t ops) {
    memset(w, 0, sizeof *w);
    w->kind = kind;
    w->ops = ops;
    uint64_t seed = 42;
    switch (kind) {
    case K_INTEGER:
        w->table = aligned_alloc(64, 512 * sizeof(uint64_t));
        if (!w->table) return -1;
        for (unsigned i = 0; i < 512; i++) w->table[i] = splitmix(&seed) | 1;
        break;
    case K_FLOAT:
        w->ftable = aligned_alloc(64, 512 * sizeof(double));
        if (!w->ftable) return -1;
        for (unsigned i = 0; i < 512; i++) w->ftable[i] = 1.0 + (double)(i % 7) * 1e-9;
        break;
    case K_CACHE:
        w->cache = aligned_alloc(64, CACHE_BYTES);
        if (!w->cache) return -1;
        for (size_t i = 0; i < CACHE_BYTES / 8; i++) w->cache[i] = i;
        break;
    case K_MEMORY: {
        /* One cycle through every cache line of 64 MiB (Sattolo's shuffle): a pointer chase
         * whose next address the prefetcher cannot guess. */
        size_t lines = MEMORY_BYTES / LINE, stride = LINE / 8;
        w->memory = aligned_alloc(64, MEMORY_BYTES);
        if (!w->memory) return -1;
        uint32_t *perm = malloc(lines * sizeof *perm);
        if (!perm) return -1;
        for (size_t i = 0; i < lines; i++) perm[i] = (uint32_t)i;
        for (size_t i = lines - 1; i > 0; i--) {
            size_t j = (size_t)(splitmix(&seed) % i);
            uint32_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (size_t i = 0; i < lines; i++) w->memory[(size_t)i * stride] = (uint64_t)perm[i] * stride;
        free(perm);
        break;
    }
    }
    return 0;
}

/* `ops` operations of the workload. */
static void workload_run(workload *w, uint64_t ops) {
    switch (w->kind) {
    case K_INTEGER: {
        uint64_t x = w->sink + 1;
        const uint64_t *t = w->table;
        for (uint64_t i = 0; i < ops; i++) {
            x = (x ^ t[x & 511]) * UINT64_C(0x9E3779B97F4A7C15);
            x ^= x >> 29;
        }
        w->sink = x;
        break;
    }
    case K_FLOAT: {
        double a = w->fsink + 1.0, b = 0.5, c = 0.25, d = 0.125;
        const double *t = w->ftable;
        for (uint64_t i = 0; i < ops; i++) {
            double m = t[i & 511];
            a = a * m + 1e-7;
            b = b * m - 1e-7;
            c = c * 0.9999999 + m * 1e-7;
            d = d * 1.0000001 - m * 1e-7;
        }
        w->fsink = a + b + c + d;
        if (!isfinite(w->fsink)) w->fsink = 0.0;
        break;
    }
    case K_CACHE: {
        /* one op = one 64-byte line read and written, walking linearly and wrapping. */
        uint64_t *c = w->cache;
        size_t lines = CACHE_BYTES / LINE, stride = LINE / 8;
        uint64_t pos = w->cache_pos, acc = w->sink;
        for (uint64_t i = 0; i < ops; i++) {
            uint64_t *p = c + pos * stride;
            acc += p[0];
            p[0] = acc;
            if (++pos == lines) pos = 0;
        }
        w->cache_pos = pos;
        w->sink = acc;
        break;
    }
    case K_MEMORY: {
        /* one op = one dependent load of a random cache line (and a write to it). */
        uint64_t *m = w->memory;
        uint64_t pos = w->memory_pos;
        for (uint64_t i = 0; i < ops; i++) {
            uint64_t next = m[pos];
            m[pos + 1] += 1;
            pos = next;
        }
        w->memory_pos = pos;
        w->sink += pos;
        break;
    }
    }
}

static uint64_t now_ns(void) { return duet_monotonic_ns(); }

static void usage(void) {
    fprintf(stderr,
            "usage: duet_workload --kind integer|float|cache|memory --ops N "
            "[--fill | --once | --bare ITERATIONS]\n"
            "       duet_workload --kind K --calibrate MILLISECONDS\n");
}

/* duet_native_iteration_begin() with --fill: arrive at the barrier (publish our generation, as
 * duet_barrier_wait does), then, instead of spinning, run the workload in small chunks until
 * every peer has arrived too, and take the release time. Arrival is published before the
 * filling, so two filling sides cannot wait for each other. A release is noticed at most one
 * chunk late (chunk = 1/4096 of an iteration, a few microseconds), which shows as start skew. */
static int fill_iteration_begin(duet_native *ctx, workload *w, uint64_t chunk) {
    if (ctx->exit_code != DUET_EXIT_OK) return -1;
    if (ctx->done >= ctx->warmup + ctx->iterations) return 0;
    duet_barrier *b = &ctx->barrier;
    duet_barrier_header *h = b->header;
    if (atomic_load_explicit(&h->abort, memory_order_acquire)) {
        snprintf(ctx->error, sizeof ctx->error, "BarrierAborted: aborted before the wait");
        duet__native_failed(ctx, DUET_EXIT_ABORTED, 0);
        return -1;
    }
    duet_barrier_slot *own = &b->slots[b->slot];
    uint64_t g = ++b->generation;
    atomic_store_explicit(&own->generation, g, memory_order_seq_cst);
    for (uint32_t k = 0; k < b->parties; k++)
        if (k != b->slot && atomic_load_explicit(&b->slots[k].state, memory_order_seq_cst) ==
                                DUET_BARRIER_STATE_SLEEPING)
            duet__futex_wake(&own->generation);
    uint64_t deadline = now_ns() + ctx->timeout_ns;
    for (uint32_t j = 0; j < b->parties; j++) {
        if (j == b->slot) continue;
        while (atomic_load_explicit(&b->slots[j].generation, memory_order_acquire) < g) {
            if (atomic_load_explicit(&h->abort, memory_order_acquire)) {
                b->broken = 1;
                snprintf(ctx->error, sizeof ctx->error, "BarrierAborted: the barrier was aborted");
                duet__native_failed(ctx, DUET_EXIT_ABORTED, 0);
                return -1;
            }
            if (now_ns() > deadline) {
                b->broken = 1;
                snprintf(ctx->error, sizeof ctx->error,
                         "BarrierTimeout: the other side did not arrive (fill)");
                duet__native_failed(ctx, DUET_EXIT_TIMEOUT, DUET_ABORT_PARTY_TIMEOUT);
                return -1;
            }
            workload_run(w, chunk);
        }
    }
    ctx->start_ns = now_ns();
    ctx->cpu_start_ns = duet__clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    ctx->in_iteration = 1;
    return 1;
}

/* A count written in decimal digits only; 0 (refused as usage) for anything else: strtoull
   would read "-5" as 2^64 - 5 and run an iteration that never ends. */
static uint64_t parse_count(const char *s) {
    if (*s == '\0') return 0;
    for (const char *c = s; *c; c++)
        if (*c < '0' || *c > '9') return 0;
    return strtoull(s, NULL, 10);
}

int main(int argc, char **argv) {
    const char *kind_name = NULL;
    uint64_t ops = 0, bare = 0;
    double calibrate_ms = 0;
    int fill = 0, once = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--kind") && v) kind_name = argv[++i];
        else if (!strcmp(a, "--ops") && v) ops = parse_count(argv[++i]);
        else if (!strcmp(a, "--bare") && v) bare = parse_count(argv[++i]);
        else if (!strcmp(a, "--calibrate") && v) calibrate_ms = strtod(argv[++i], NULL);
        else if (!strcmp(a, "--fill")) fill = 1;
        else if (!strcmp(a, "--once")) once = 1;
        else {
            usage();
            return 2;
        }
    }
    enum kind kind;
    if (!kind_name) { usage(); return 2; }
    if (!strcmp(kind_name, "integer")) kind = K_INTEGER;
    else if (!strcmp(kind_name, "float")) kind = K_FLOAT;
    else if (!strcmp(kind_name, "cache")) kind = K_CACHE;
    else if (!strcmp(kind_name, "memory")) kind = K_MEMORY;
    else { usage(); return 2; }
    if (calibrate_ms <= 0 && ops == 0) { usage(); return 2; }

    workload w;
    if (workload_init(&w, kind, ops) != 0) {
        fprintf(stderr, "duet_workload: out of memory\n");
        return 3;
    }
    if (calibrate_ms > 0) {
        /* Grow the count until one run takes >= 50 ms, then scale; best of 5 at the target. */
        uint64_t n = 1000;
        workload_run(&w, n);
        for (;;) {
            uint64_t t0 = now_ns();
            workload_run(&w, n);
            uint64_t dt = now_ns() - t0;
            if (dt >= 50000000u) {
                n = (uint64_t)((double)n * calibrate_ms * 1e6 / (double)dt);
                break;
            }
            n *= 2;
        }
        uint64_t best = UINT64_MAX;
        for (int r = 0; r < 5; r++) {
            uint64_t t0 = now_ns();
            workload_run(&w, n);
            uint64_t dt = now_ns() - t0;
            if (dt < best) best = dt;
        }
        n = (uint64_t)((double)n * calibrate_ms * 1e6 / (double)best);
        printf("{\"kind\": \"%s\", \"ops\": %" PRIu64 ", \"target_ms\": %g}\n", kind_name, n,
               calibrate_ms);
        return 0;
    }
    if (once) {
        workload_run(&w, ops);
        return (int)(w.sink & 0) + (w.fsink < -1e300);
    }
    if (bare) {
        for (uint64_t i = 0; i < bare; i++) {
            uint64_t t0 = now_ns();
            workload_run(&w, ops);
            uint64_t t1 = now_ns();
            printf("{\"index\": %" PRIu64 ", \"start_ns\": %" PRIu64 ", \"duration_ns\": %" PRIu64
                   "}\n",
                   i, t0, t1 - t0);
        }
        fflush(stdout);
        return (int)(w.sink & 0);
    }

    duet_native ctx;
    if (duet_native_open(&ctx) != 0) {
        fprintf(stderr, "%s\n", ctx.error);
        return ctx.exit_code;
    }
    uint64_t chunk = ops / 4096 ? ops / 4096 : 1;
    while ((fill ? fill_iteration_begin(&ctx, &w, chunk) : duet_native_iteration_begin(&ctx)) > 0) {
        workload_run(&w, ops);
        if (duet_native_iteration_end(&ctx) != 0) break;
    }
    return duet_native_close(&ctx);
}
