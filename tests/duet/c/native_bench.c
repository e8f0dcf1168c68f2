/*
 * A native benchmark as a user would write it, for tests/duet/test_barrier_c.py: everything
 * comes from the DUET_* environment (duet_native_open), the samples file is written by the
 * header's helpers.
 *
 *   native_bench WORK_US [FAIL_AT [loop|run]]
 *
 * WORK_US: microseconds of busy work per iteration; FAIL_AT: the iteration (0-based, warmup
 * included) whose work fails, -1 for none; "loop" uses iteration_begin/end, "run" the callback.
 */
#include "duet_barrier.h"

struct work {
    uint64_t work_ns;
    long fail_at;
    long iteration;
};

static int do_work(void *arg) {
    struct work *w = arg;
    if (w->iteration++ == w->fail_at) return 7;
    uint64_t until = duet_monotonic_ns() + w->work_ns;
    volatile uint64_t sink = 0;
    while (duet_monotonic_ns() < until) sink++;
    return 0;
}

int main(int argc, char **argv) {
    struct work w = {0, -1, 0};
    if (argc > 1) w.work_ns = strtoull(argv[1], NULL, 10) * 1000u;
    if (argc > 2) w.fail_at = strtol(argv[2], NULL, 10);
    int use_run = argc > 3 && strcmp(argv[3], "run") == 0;

    duet_native ctx;
    if (duet_native_open(&ctx) != 0) {
        fprintf(stderr, "native_bench: %s\n", ctx.error);
        return ctx.exit_code;
    }
    if (use_run) {
        duet_native_run(&ctx, do_work, &w);
    } else {
        while (duet_native_iteration_begin(&ctx) > 0) {
            if (do_work(&w) != 0) {
                duet_native_fail(&ctx, "BenchmarkFailed: the work failed");
                break;
            }
            duet_native_iteration_end(&ctx);
        }
    }
    int rc = duet_native_close(&ctx);
    if (rc != 0) fprintf(stderr, "native_bench: %s\n", ctx.error);
    return rc;
}
