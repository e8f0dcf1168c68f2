/*
 * duet_noise.c: the reference interference generator of docs/accuracy.md (the one of the
 * prototype figures there, "The prototype"). A noisy neighbour that hits the whole VM:
 *
 * - one hog thread per CPU (all online CPUs, or --cpus), pinned with sched_setaffinity,
 *   SCHED_OTHER at nice 0, started by the caller outside the measured cgroups;
 * - each thread does random read-modify-writes over its own 64 MiB buffer, interleaved with
 *   integer work (a multiply/xorshift chain between the memory accesses);
 * - on and off periods, each uniform in [0.2 s, 2 s], drawn from a seeded PRNG: the *same*
 *   schedule on every CPU (all threads follow one absolute timetable);
 * - bounded in time: the process stops by itself after --duration seconds, whatever happens
 *   to whoever started it (the main thread ends it; alarm() is a second, independent bound;
 *   --die-with-parent also ends it when its parent dies).
 *
 * --asymmetric CPU: the negative control. One hog thread on CPU only, the same schedule: noise
 * that one side of a duet sees and the other does not, which duet cannot cancel.
 *
 * Output (stdout, JSON lines): a "started" line with the pid, the CPUs, the seed and the
 * schedule's first periods, then a "stopped" line with the fraction of time it was on.
 *
 * Build: gcc -O2 -Wall -Wextra -Werror -pthread -o duet_noise duet_noise.c
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_CPUS 256
#define MAX_PERIODS 100000

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t) {
    struct timespec ts = {.tv_sec = (time_t)(t / 1000000000u), .tv_nsec = (long)(t % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* The timetable: period k is "on" from start[k] to end[k] (absolute, CLOCK_MONOTONIC). */
static uint64_t on_start[MAX_PERIODS], on_end[MAX_PERIODS];
static size_t periods;
static uint64_t stop_at;
static atomic_int stopping;
static size_t buffer_bytes = 64u << 20;

typedef struct hog {
    pthread_t thread;
    int cpu;
    int pinned;
    uint64_t sink;
} hog;

static void *hog_main(void *arg) {
    hog *h = arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(h->cpu, &set);
    h->pinned = sched_setaffinity(0, sizeof set, &set) == 0;
    size_t words = buffer_bytes / 8;
    uint64_t *buf = malloc(buffer_bytes);
    if (!buf) return NULL;
    for (size_t i = 0; i < words; i++) buf[i] = i;
    uint64_t x = (uint64_t)h->cpu * 7919u + 1, acc = 0;
    for (size_t k = 0; k < periods && !atomic_load(&stopping); k++) {
        if (on_start[k] >= stop_at) break;
        sleep_until(on_start[k]);
        uint64_t end = on_end[k] < stop_at ? on_end[k] : stop_at;
        while (!atomic_load_explicit(&stopping, memory_order_relaxed) && now_ns() < end) {
            for (int j = 0; j < 4096; j++) {
                /* a random read-modify-write over the 64 MiB buffer ... */
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                size_t i = (size_t)(x % words);
                buf[i] = buf[i] * 3 + acc;
                /* ... plus integer work */
                for (int r = 0; r < 8; r++) acc = (acc ^ x) * UINT64_C(0x9E3779B97F4A7C15) + r;
            }
        }
    }
    h->sink = acc;
    free(buf);
    return NULL;
}

static int parse_cpus(const char *text, int *cpus) {
    int n = 0;
    char *copy = strdup(text), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int a, b;
        if (sscanf(tok, "%d-%d", &a, &b) == 2) {
        } else if (sscanf(tok, "%d", &a) == 1) {
            b = a;
        } else {
            n = -1;
            break;
        }
        for (int c = a; c <= b && n < MAX_CPUS; c++) cpus[n++] = c;
    }
    free(copy);
    return n;
}

static void usage(void) {
    fprintf(stderr,
            "usage: duet_noise --duration SECONDS [--seed N] [--cpus LIST] [--asymmetric CPU]\n"
            "                  [--mib 64] [--period-min 0.2] [--period-max 2.0] "
            "[--die-with-parent]\n");
}

int main(int argc, char **argv) {
    double duration = 0, pmin = 0.2, pmax = 2.0;
    uint64_t seed = 1;
    const char *cpus_text = NULL;
    int asymmetric = -1, die_with_parent = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--duration") && has) duration = strtod(argv[++i], NULL);
        else if (!strcmp(a, "--seed") && has) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--cpus") && has) cpus_text = argv[++i];
        else if (!strcmp(a, "--asymmetric") && has) asymmetric = atoi(argv[++i]);
        else if (!strcmp(a, "--mib") && has) buffer_bytes = (size_t)strtoull(argv[++i], NULL, 10) << 20;
        else if (!strcmp(a, "--period-min") && has) pmin = strtod(argv[++i], NULL);
        else if (!strcmp(a, "--period-max") && has) pmax = strtod(argv[++i], NULL);
        else if (!strcmp(a, "--die-with-parent")) die_with_parent = 1;
        else {
            usage();
            return 2;
        }
    }
    if (!(duration > 0 && duration <= 86400) || !(pmin > 0 && pmax >= pmin) || buffer_bytes < 4096) {
        fprintf(stderr, "duet_noise: --duration must be in (0, 86400] s and periods positive\n");
        usage();
        return 2;
    }
    /* The hard bound, independent of the main thread: SIGALRM's default action ends us. */
    alarm((unsigned)duration + 3);
    if (die_with_parent) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1) return 0; /* the parent is already gone */
    }
    struct sched_param sp = {0};
    sched_setscheduler(0, SCHED_OTHER, &sp);
    setpriority(PRIO_PROCESS, 0, 0);

    int cpus[MAX_CPUS], ncpus = 0;
    if (asymmetric >= 0) {
        cpus[0] = asymmetric;
        ncpus = 1;
    } else if (cpus_text) {
        ncpus = parse_cpus(cpus_text, cpus);
    } else {
        cpu_set_t set;
        CPU_ZERO(&set);
        if (sched_getaffinity(0, sizeof set, &set) == 0)
            for (int c = 0; c < CPU_SETSIZE && ncpus < MAX_CPUS; c++)
                if (CPU_ISSET(c, &set)) cpus[ncpus++] = c;
    }
    if (ncpus <= 0) {
        fprintf(stderr, "duet_noise: no CPU to run on (--cpus %s)\n", cpus_text ? cpus_text : "");
        return 2;
    }

    /* One timetable for every CPU: on, off, on, off, ... each period uniform in [pmin, pmax]. */
    uint64_t start = now_ns() + 50000000u; /* 50 ms for the threads to allocate */
    stop_at = start + (uint64_t)(duration * 1e9);
    uint64_t t = start, s = seed, on_total = 0;
    uint64_t span = (uint64_t)((pmax - pmin) * 1e9), base = (uint64_t)(pmin * 1e9);
    while (t < stop_at && periods < MAX_PERIODS) {
        uint64_t on = base + (span ? splitmix(&s) % (span + 1) : 0);
        uint64_t off = base + (span ? splitmix(&s) % (span + 1) : 0);
        on_start[periods] = t;
        on_end[periods] = t + on;
        on_total += (t + on < stop_at ? on : stop_at - t);
        periods++;
        t += on + off;
    }
    printf("{\"noise\": \"started\", \"pid\": %ld, \"seed\": %" PRIu64 ", \"duration_s\": %g, "
           "\"asymmetric\": %s, \"mib\": %zu, \"cpus\": [",
           (long)getpid(), seed, duration, asymmetric >= 0 ? "true" : "false", buffer_bytes >> 20);
    for (int i = 0; i < ncpus; i++) printf("%s%d", i ? ", " : "", cpus[i]);
    printf("], \"periods\": %zu, \"on_fraction\": %.3f}\n", periods,
           (double)on_total / (double)(stop_at - start));
    fflush(stdout);

    static hog hogs[MAX_CPUS];
    int started = 0;
    for (int i = 0; i < ncpus; i++) {
        hogs[i].cpu = cpus[i];
        if (pthread_create(&hogs[i].thread, NULL, hog_main, &hogs[i]) != 0) break;
        started++;
    }
    sleep_until(stop_at);
    atomic_store(&stopping, 1);
    for (int i = 0; i < started; i++) pthread_join(hogs[i].thread, NULL);
    int pinned = 0;
    for (int i = 0; i < started; i++) pinned += hogs[i].pinned;
    printf("{\"noise\": \"stopped\", \"threads\": %d, \"pinned\": %d}\n", started, pinned);
    return started == ncpus && pinned == ncpus ? 0 : 1;
}
