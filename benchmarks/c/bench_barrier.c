/*
 * The C side of benchmarks/bench_barrier.py.
 *
 *   bench_barrier party PATH SLOT N CPU OUT [OTHER]
 *                                             N empty iterations at the barrier, pinned to CPU
 *                                             (crossing over between CPU and OTHER when given);
 *                                             writes the N release times (CLOCK_MONOTONIC ns,
 *                                             native u64) to OUT
 *   bench_barrier move PATH N CPU OTHER THREADS OUT
 *                                             N moves of this process (THREADS extra idle
 *                                             threads) between CPU and OTHER through a
 *                                             one-party barrier; writes each move's ns to OUT
 *   bench_barrier hog CPU SECONDS             a noisy neighbour pinned to CPU: random
 *                                             read-modify-writes over 64 MiB plus integer work
 */
#include "duet_barrier.h"

#include <pthread.h>

static int pin(long cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        fprintf(stderr, "bench_barrier: cannot pin to CPU %ld: %s\n", cpu, strerror(errno));
        return -1;
    }
    return 0;
}

static int write_all(const char *out, const uint64_t *values, uint64_t n) {
    FILE *f = fopen(out, "wb");
    if (f == NULL || fwrite(values, sizeof *values, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "bench_barrier: cannot write %s\n", out);
        return 3;
    }
    return 0;
}

static int party(const char *path, uint32_t slot, uint64_t n, long cpu, const char *out,
                 long other) {
    if (pin(cpu) != 0) return 3;
    duet_barrier b;
    int rc = duet_barrier_attach(&b, path, slot);
    if (rc != DUET_BARRIER_OK) {
        fprintf(stderr, "bench_barrier: %s\n", b.error);
        return 6;
    }
    int cpus[2] = {(int)cpu, (int)other};
    if (other >= 0 && duet_barrier_cross(&b, cpus, 2, NULL) != DUET_BARRIER_OK) {
        fprintf(stderr, "bench_barrier: %s\n", b.error);
        return 3;
    }
    uint64_t *starts = calloc(n, sizeof *starts);
    if (starts == NULL) return 3;
    for (uint64_t i = 0; i < n; i++) {
        rc = duet_barrier_wait(&b, UINT64_C(60000000000), &starts[i]);
        if (rc != DUET_BARRIER_OK) {
            fprintf(stderr, "bench_barrier: iteration %" PRIu64 ": %s\n", i, b.error);
            duet_barrier_abort(&b, DUET_ABORT_PARTY_FAILED);
            return rc == DUET_BARRIER_TIMEOUT ? 4 : 5;
        }
    }
    duet_barrier_close(&b);
    rc = write_all(out, starts, n);
    free(starts);
    return rc;
}

static void *idle_thread(void *arg) {
    (void)arg;
    pause();
    return NULL;
}

/* The cost of one move alone: duet__move of the whole process, alternating between two CPUs. */
static int moves(const char *path, uint64_t n, long cpu, long other, long threads,
                 const char *out) {
    pthread_t idle[64];
    for (long t = 0; t < threads && t < 64; t++) pthread_create(&idle[t], NULL, idle_thread, NULL);
    duet_barrier b;
    int cpus[2] = {(int)cpu, (int)other};
    if (duet_barrier_attach(&b, path, 0) != DUET_BARRIER_OK ||
        duet_barrier_cross(&b, cpus, 2, NULL) != DUET_BARRIER_OK) {
        fprintf(stderr, "bench_barrier: %s\n", b.error);
        return 3;
    }
    uint64_t *took = calloc(n, sizeof *took);
    if (took == NULL) return 3;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t t0 = duet_monotonic_ns();
        if (duet__move(&b, cpus[(i + 1) % 2]) != DUET_BARRIER_OK) {
            fprintf(stderr, "bench_barrier: %s\n", b.error);
            return 3;
        }
        took[i] = duet_monotonic_ns() - t0;
    }
    duet_barrier_close(&b);
    int rc = write_all(out, took, n);
    free(took);
    return rc;
}

static int hog(long cpu, double seconds) {
    if (pin(cpu) != 0) return 3;
    size_t words = (64u << 20) / sizeof(uint64_t);
    uint64_t *memory = calloc(words, sizeof *memory);
    if (memory == NULL) return 3;
    uint64_t x = 88172645463325252u ^ (uint64_t)cpu, until = duet_monotonic_ns() +
                                                             (uint64_t)(seconds * 1e9);
    while (duet_monotonic_ns() < until) {
        for (int i = 0; i < 4096; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            memory[x % words] += x;
        }
    }
    free(memory);
    return 0;
}

int main(int argc, char **argv) {
    if ((argc == 7 || argc == 8) && strcmp(argv[1], "party") == 0)
        return party(argv[2], (uint32_t)strtoul(argv[3], NULL, 10), strtoull(argv[4], NULL, 10),
                     strtol(argv[5], NULL, 10), argv[6], argc == 8 ? strtol(argv[7], NULL, 10) : -1);
    if (argc == 8 && strcmp(argv[1], "move") == 0)
        return moves(argv[2], strtoull(argv[3], NULL, 10), strtol(argv[4], NULL, 10),
                     strtol(argv[5], NULL, 10), strtol(argv[6], NULL, 10), argv[7]);
    if (argc == 4 && strcmp(argv[1], "hog") == 0)
        return hog(strtol(argv[2], NULL, 10), strtod(argv[3], NULL));
    fprintf(stderr,
            "usage: bench_barrier party PATH SLOT N CPU OUT [OTHER] | bench_barrier move PATH N "
            "CPU OTHER THREADS OUT | bench_barrier hog CPU SECONDS\n");
    return 2;
}
