/*
 * duet_barrier.h: header-only C11 client of the duet barrier, protocol version 1
 * (docs/barrier-protocol.md), and the native-benchmark contract (environment variables in,
 * samples file out) of docs/architecture.md.
 *
 * Include it before any system header, or compile with -D_GNU_SOURCE. Linux only (futex),
 * little-endian only (the file format). Every function is `static inline`: nothing to link.
 *
 * A native benchmark:
 *
 *     #include "duet_barrier.h"
 *     int main(void) {
 *         duet_native ctx;
 *         if (duet_native_open(&ctx) != 0) {
 *             fprintf(stderr, "%s\n", ctx.error);
 *             return ctx.exit_code;
 *         }
 *         while (duet_native_iteration_begin(&ctx) > 0) {
 *             work();
 *             duet_native_iteration_end(&ctx);
 *         }
 *         return duet_native_close(&ctx);
 *     }
 *
 * Crossover (docs/barrier-protocol.md, "Crossing over"): with DUET_CPUS set ("3,1"),
 * duet_native_open calls duet_barrier_cross, and every wait moves every thread of the side
 * (DUET_TASKS, the side's cgroup task list, else /proc/self/task) to the iteration's CPU between
 * two rendezvous; each sample line records it as "cpu".
 */
#ifndef DUET_BARRIER_H
#define DUET_BARRIER_H

#ifndef _GNU_SOURCE
#  if defined(_FEATURES_H) && !defined(__USE_MISC)
/* syscall() and clock_gettime() need _GNU_SOURCE (or _DEFAULT_SOURCE) before any header. */
#    error "duet_barrier.h: include it before any system header, or compile with -D_GNU_SOURCE"
#  endif
#  define _GNU_SOURCE 1
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#  error "duet barrier protocol version 1 is little-endian only"
#endif
#if ATOMIC_LLONG_LOCK_FREE != 2
#  error "duet_barrier.h needs lock-free 64-bit atomics"
#endif

#define DUET_BARRIER_PROTOCOL_VERSION 1u
#define DUET_BARRIER_MAGIC UINT64_C(0x5252414254455544) /* "DUETBARR", little-endian */
#define DUET_BARRIER_HEADER_SIZE 64u
#define DUET_BARRIER_SLOT_SIZE 64u
#define DUET_BARRIER_MAX_PARTIES 64u

#define DUET_BARRIER_STATE_FREE 0u
#define DUET_BARRIER_STATE_ATTACHED 1u
#define DUET_BARRIER_STATE_SLEEPING 2u
#define DUET_BARRIER_STATE_DETACHED 3u

#define DUET_ABORT_ORCHESTRATOR 1u
#define DUET_ABORT_WATCHDOG 2u
#define DUET_ABORT_PARTY_FAILED 3u
#define DUET_ABORT_PARTY_TIMEOUT 4u
#define DUET_ABORT_PARTY_EXITED 5u

#define DUET_BARRIER_DEFAULT_SPIN_NS UINT64_C(100000000)
#define DUET_BARRIER_DEFAULT_YIELD_NS UINT64_C(100000000)
/* A futex sleep never lasts longer: covers a lost abort wake and peers that cannot wake us. */
#define DUET_BARRIER_SLEEP_SLICE_NS UINT64_C(10000000)
#define DUET_BARRIER_SPINS_PER_CHECK 256u
#define DUET_BARRIER_ERROR_SIZE 320
/* Crossover: the most CPUs a side crosses between, the longest task-list path. */
#define DUET_BARRIER_MAX_CPUS 16u
#define DUET_BARRIER_TASKS_SIZE 256
/* Threads remembered by one move (a side with more is moved whole in every pass), and the passes
 * over the thread list: a thread started by a thread not yet moved starts on the old CPU, and
 * the next pass finds it. */
#define DUET_BARRIER_MOVE_TRACKED 1024u
#define DUET_BARRIER_MOVE_PASSES 4u

/* Results of duet_barrier_wait (>= 0) and errors (< 0). */
enum {
    DUET_BARRIER_OK = 0,
    DUET_BARRIER_TIMEOUT = 1,
    DUET_BARRIER_ABORTED = 2,
    DUET_BARRIER_E_SYSTEM = -1,     /* open/mmap/ftruncate failed: errno in the message */
    DUET_BARRIER_E_BAD_SIZE = -2,
    DUET_BARRIER_E_BAD_MAGIC = -3,
    DUET_BARRIER_E_BAD_VERSION = -4,
    DUET_BARRIER_E_BAD_PARTIES = -5,
    DUET_BARRIER_E_BAD_SLOT = -6,
    DUET_BARRIER_E_SLOT_IN_USE = -7,
    DUET_BARRIER_E_BROKEN = -8,     /* waited again after a timeout or an abort */
    DUET_BARRIER_E_USAGE = -9,      /* e.g. wait() on an observer or a closed barrier */
    DUET_BARRIER_E_MOVE = -10       /* crossover: the side could not be moved to its CPU */
};

typedef struct duet_barrier_header {
    _Atomic uint64_t magic;
    _Atomic uint64_t version;
    _Atomic uint64_t parties;
    _Atomic uint64_t created_ns;
    _Atomic uint64_t creator_pid;
    _Atomic uint64_t abort;
    _Atomic uint64_t abort_reason;
    _Atomic uint64_t abort_pid;
} duet_barrier_header;

typedef struct duet_barrier_slot {
    _Atomic uint64_t generation; /* written by the owner only; only grows */
    _Atomic uint64_t state;
    _Atomic uint64_t pid;
    _Atomic uint64_t reserved[5];
} duet_barrier_slot;

_Static_assert(sizeof(_Atomic uint64_t) == 8, "64-bit atomics must be 8 bytes");
_Static_assert(sizeof(duet_barrier_header) == DUET_BARRIER_HEADER_SIZE, "header is 64 bytes");
_Static_assert(sizeof(duet_barrier_slot) == DUET_BARRIER_SLOT_SIZE, "slot is 64 bytes");
_Static_assert(offsetof(duet_barrier_header, abort) == 40, "abort at offset 40");

typedef struct duet_barrier {
    void *map;
    size_t size;
    duet_barrier_header *header;
    duet_barrier_slot *slots;
    uint32_t parties;
    uint32_t slot;        /* UINT32_MAX for the creator/observer, which cannot wait */
    uint64_t generation;  /* our own generation, the last one published */
    uint64_t spin_ns;
    uint64_t yield_ns;
    int broken;
    uint64_t abort_reason; /* filled when a wait returns DUET_BARRIER_ABORTED */
    uint64_t abort_pid;
    char error[DUET_BARRIER_ERROR_SIZE]; /* what went wrong, for the last call that failed */
    /* Crossover (duet_barrier_cross): wait k runs the side on cpus[k % ncpus]; 0: no moves. */
    uint32_t ncpus;
    int cpus[DUET_BARRIER_MAX_CPUS];
    uint64_t crossings;
    int cpu;                            /* the CPU the side is pinned to, -1 when unknown */
    char tasks[DUET_BARRIER_TASKS_SIZE]; /* the side's threads ("": /proc/self/task) */
} duet_barrier;

/* -- small helpers ------------------------------------------------------------------------ */

static inline uint64_t duet_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static inline uint64_t duet__clock_ns(clockid_t clock) {
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static inline void duet__pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

static inline void duet__futex_wait(_Atomic uint64_t *word, uint32_t expected, uint64_t ns) {
    struct timespec ts;
    ts.tv_sec = (time_t)(ns / UINT64_C(1000000000));
    ts.tv_nsec = (long)(ns % UINT64_C(1000000000));
    /* The low 32 bits of a little-endian word are its first 4 bytes. Shared futex (no
     * FUTEX_PRIVATE_FLAG): the waker is another process mapping the same file. */
    (void)syscall(SYS_futex, (void *)word, FUTEX_WAIT, expected, &ts, NULL, 0);
}

static inline void duet__futex_wake(_Atomic uint64_t *word) {
    (void)syscall(SYS_futex, (void *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline int duet__fail(char *error, int code, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(error, DUET_BARRIER_ERROR_SIZE, format, args);
    va_end(args);
    return code;
}

/* The protocol's name of an error code ("bad_magic", ...), as the test vectors spell it. */
static inline const char *duet_barrier_code_name(int code) {
    switch (code) {
    case DUET_BARRIER_OK: return "released";
    case DUET_BARRIER_TIMEOUT: return "timeout";
    case DUET_BARRIER_ABORTED: return "aborted";
    case DUET_BARRIER_E_SYSTEM: return "system";
    case DUET_BARRIER_E_BAD_SIZE: return "bad_size";
    case DUET_BARRIER_E_BAD_MAGIC: return "bad_magic";
    case DUET_BARRIER_E_BAD_VERSION: return "bad_version";
    case DUET_BARRIER_E_BAD_PARTIES: return "bad_parties";
    case DUET_BARRIER_E_BAD_SLOT: return "bad_slot";
    case DUET_BARRIER_E_SLOT_IN_USE: return "slot_in_use";
    case DUET_BARRIER_E_BROKEN: return "broken";
    case DUET_BARRIER_E_USAGE: return "usage";
    case DUET_BARRIER_E_MOVE: return "move";
    default: return "unknown";
    }
}

static inline const char *duet_barrier_reason_text(uint64_t reason) {
    switch (reason) {
    case DUET_ABORT_ORCHESTRATOR: return "cancelled by the orchestrator";
    case DUET_ABORT_WATCHDOG: return "the orchestrator's watchdog saw no progress";
    case DUET_ABORT_PARTY_FAILED: return "a party's benchmark failed";
    case DUET_ABORT_PARTY_TIMEOUT: return "a party's wait timed out";
    case DUET_ABORT_PARTY_EXITED: return "a party's process ended early";
    default: return "program-defined reason";
    }
}

static inline size_t duet_barrier_file_size(uint32_t parties) {
    return DUET_BARRIER_HEADER_SIZE + (size_t)DUET_BARRIER_SLOT_SIZE * parties;
}

static inline void duet__init(duet_barrier *b) {
    memset(b, 0, sizeof *b);
    b->slot = UINT32_MAX;
    b->cpu = -1;
    b->spin_ns = DUET_BARRIER_DEFAULT_SPIN_NS;
    b->yield_ns = DUET_BARRIER_DEFAULT_YIELD_NS;
}

/* -- creating and attaching --------------------------------------------------------------- */

/* The orchestrator's side (duet itself uses the Python client; this is for tests and tools).
 * created_ns == 0 means now (CLOCK_REALTIME), creator_pid == 0 means getpid(). */
static inline int duet_barrier_create(duet_barrier *b, const char *path, uint32_t parties,
                                      uint64_t created_ns, uint64_t creator_pid) {
    duet__init(b);
    if (parties < 1 || parties > DUET_BARRIER_MAX_PARTIES)
        return duet__fail(b->error, DUET_BARRIER_E_BAD_PARTIES,
                          "parties must be between 1 and %u, got %u", DUET_BARRIER_MAX_PARTIES,
                          parties);
    size_t size = duet_barrier_file_size(parties);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return duet__fail(b->error, DUET_BARRIER_E_SYSTEM, "cannot create %s: %s", path,
                          strerror(errno));
    if (ftruncate(fd, (off_t)size) != 0) {
        int saved = errno;
        close(fd);
        unlink(path);
        return duet__fail(b->error, DUET_BARRIER_E_SYSTEM, "cannot size %s: %s", path,
                          strerror(saved));
    }
    void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int saved = errno;
    close(fd);
    if (map == MAP_FAILED) {
        unlink(path);
        return duet__fail(b->error, DUET_BARRIER_E_SYSTEM, "cannot map %s: %s", path,
                          strerror(saved));
    }
    b->map = map;
    b->size = size;
    b->header = (duet_barrier_header *)map;
    b->slots = (duet_barrier_slot *)((char *)map + DUET_BARRIER_HEADER_SIZE);
    b->parties = parties;
    duet_barrier_header *h = b->header;
    atomic_store_explicit(&h->version, DUET_BARRIER_PROTOCOL_VERSION, memory_order_relaxed);
    atomic_store_explicit(&h->parties, parties, memory_order_relaxed);
    atomic_store_explicit(&h->created_ns,
                          created_ns ? created_ns : duet__clock_ns(CLOCK_REALTIME),
                          memory_order_relaxed);
    atomic_store_explicit(&h->creator_pid, creator_pid ? creator_pid : (uint64_t)getpid(),
                          memory_order_relaxed);
    /* Last, with release: a party that sees the magic sees the whole header. */
    atomic_store_explicit(&h->magic, DUET_BARRIER_MAGIC, memory_order_release);
    return DUET_BARRIER_OK;
}

static inline int duet__map_existing(duet_barrier *b, const char *path) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return duet__fail(b->error, DUET_BARRIER_E_SYSTEM, "cannot open barrier file %s: %s",
                          path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int saved = errno;
        close(fd);
        return duet__fail(b->error, DUET_BARRIER_E_SYSTEM, "cannot stat %s: %s", path,
                          strerror(saved));
    }
    size_t size = (size_t)st.st_size;
    if (size < DUET_BARRIER_HEADER_SIZE) {
        close(fd);
        return duet__fail(b->error, DUET_BARRIER_E_BAD_SIZE,
                          "%s is truncated: %zu bytes, a barrier file has a %u-byte header at "
                          "least",
                          path, size, DUET_BARRIER_HEADER_SIZE);
    }
    void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int saved = errno;
    close(fd);
    if (map == MAP_FAILED)
        return duet__fail(b->error, DUET_BARRIER_E_SYSTEM, "cannot map %s: %s", path,
                          strerror(saved));
    b->map = map;
    b->size = size;
    b->header = (duet_barrier_header *)map;
    b->slots = (duet_barrier_slot *)((char *)map + DUET_BARRIER_HEADER_SIZE);
    duet_barrier_header *h = b->header;
    uint64_t magic = atomic_load_explicit(&h->magic, memory_order_acquire);
    uint64_t version = atomic_load_explicit(&h->version, memory_order_relaxed);
    uint64_t parties = atomic_load_explicit(&h->parties, memory_order_relaxed);
    int rc = DUET_BARRIER_OK;
    if (magic != DUET_BARRIER_MAGIC) {
        unsigned char bytes[8];
        memcpy(bytes, &magic, 8);
        rc = duet__fail(b->error, DUET_BARRIER_E_BAD_MAGIC,
                        "%s is not a duet barrier file: its first 8 bytes are "
                        "%02x %02x %02x %02x %02x %02x %02x %02x, expected \"DUETBARR\"",
                        path, bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5],
                        bytes[6], bytes[7]);
    } else if (version != DUET_BARRIER_PROTOCOL_VERSION) {
        rc = duet__fail(b->error, DUET_BARRIER_E_BAD_VERSION,
                        "%s uses barrier protocol version %" PRIu64
                        ", this client speaks version %u only: the orchestrator and the harness "
                        "come from different duet releases",
                        path, version, DUET_BARRIER_PROTOCOL_VERSION);
    } else if (parties < 1 || parties > DUET_BARRIER_MAX_PARTIES) {
        rc = duet__fail(b->error, DUET_BARRIER_E_BAD_PARTIES,
                        "%s declares %" PRIu64 " parties; version %u allows 1 to %u", path,
                        parties, DUET_BARRIER_PROTOCOL_VERSION, DUET_BARRIER_MAX_PARTIES);
    } else if (size != duet_barrier_file_size((uint32_t)parties)) {
        rc = duet__fail(b->error, DUET_BARRIER_E_BAD_SIZE,
                        "%s is %s: %zu bytes, a %" PRIu64
                        "-party barrier file has exactly %zu",
                        path,
                        size < duet_barrier_file_size((uint32_t)parties) ? "truncated"
                                                                          : "too long",
                        size, parties, duet_barrier_file_size((uint32_t)parties));
    }
    if (rc != DUET_BARRIER_OK) {
        munmap(map, size);
        b->map = NULL;
        return rc;
    }
    b->parties = (uint32_t)parties;
    return DUET_BARRIER_OK;
}

/* Map an existing file as party `slot`, after validating it. */
static inline int duet_barrier_attach(duet_barrier *b, const char *path, uint32_t slot) {
    duet__init(b);
    int rc = duet__map_existing(b, path);
    if (rc != DUET_BARRIER_OK) return rc;
    if (slot >= b->parties) {
        rc = duet__fail(b->error, DUET_BARRIER_E_BAD_SLOT,
                        "slot %u does not exist in %s: it has %u parties (slots 0 to %u)", slot,
                        path, b->parties, b->parties - 1);
    } else {
        duet_barrier_slot *own = &b->slots[slot];
        uint64_t state = atomic_load_explicit(&own->state, memory_order_acquire);
        if (state != DUET_BARRIER_STATE_FREE)
            rc = duet__fail(b->error, DUET_BARRIER_E_SLOT_IN_USE,
                            "slot %u of %s is already taken (state %" PRIu64 ", pid %" PRIu64
                            "): each party needs its own slot of a fresh barrier file",
                            slot, path, state,
                            atomic_load_explicit(&own->pid, memory_order_relaxed));
    }
    if (rc != DUET_BARRIER_OK) {
        munmap(b->map, b->size);
        b->map = NULL;
        return rc;
    }
    duet_barrier_slot *own = &b->slots[slot];
    b->slot = slot;
    b->generation = atomic_load_explicit(&own->generation, memory_order_relaxed);
    atomic_store_explicit(&own->pid, (uint64_t)getpid(), memory_order_relaxed);
    atomic_store_explicit(&own->state, DUET_BARRIER_STATE_ATTACHED, memory_order_seq_cst);
    return DUET_BARRIER_OK;
}

/* Map an existing file without a slot: can read generations and abort, not wait. */
static inline int duet_barrier_observe(duet_barrier *b, const char *path) {
    duet__init(b);
    return duet__map_existing(b, path);
}

/* How long a wait spins, then yields, before it sleeps in a futex. */
static inline void duet_barrier_set_spin(duet_barrier *b, uint64_t spin_ns, uint64_t yield_ns) {
    b->spin_ns = spin_ns;
    b->yield_ns = yield_ns;
}

static inline uint64_t duet_barrier_generation(const duet_barrier *b, uint32_t slot) {
    if (b->map == NULL || slot >= b->parties) return 0;
    return atomic_load_explicit(&b->slots[slot].generation, memory_order_acquire);
}

/* -- the rendezvous ----------------------------------------------------------------------- */

static inline int duet__aborted(duet_barrier *b) {
    duet_barrier_header *h = b->header;
    b->abort_reason = atomic_load_explicit(&h->abort_reason, memory_order_relaxed);
    b->abort_pid = atomic_load_explicit(&h->abort_pid, memory_order_relaxed);
    b->broken = 1;
    return duet__fail(b->error, DUET_BARRIER_ABORTED,
                      "barrier aborted by pid %" PRIu64 ": %s (reason %" PRIu64 ")",
                      b->abort_pid, duet_barrier_reason_text(b->abort_reason), b->abort_reason);
}

/* Past the first spins: spin with clock checks, then yield, then sleep in futex slices. */
static inline int duet__wait_long(duet_barrier *b, uint32_t peer_slot, uint64_t g,
                                  uint64_t begin, uint64_t deadline) {
    duet_barrier_header *h = b->header;
    duet_barrier_slot *own = &b->slots[b->slot];
    duet_barrier_slot *peer = &b->slots[peer_slot];
    for (;;) {
        for (unsigned n = 0; n < DUET_BARRIER_SPINS_PER_CHECK; n++) {
            if (atomic_load_explicit(&peer->generation, memory_order_acquire) >= g)
                return DUET_BARRIER_OK;
            if (atomic_load_explicit(&h->abort, memory_order_relaxed)) {
                atomic_thread_fence(memory_order_acquire);
                return duet__aborted(b);
            }
            duet__pause();
        }
        uint64_t now = duet_monotonic_ns();
        if (now >= deadline) {
            b->broken = 1;
            uint64_t peer_pid = atomic_load_explicit(&peer->pid, memory_order_relaxed);
            return duet__fail(b->error, DUET_BARRIER_TIMEOUT,
                              "barrier wait timed out after %.3f s at generation %" PRIu64
                              ": slot %u (pid %" PRIu64 ") is at generation %" PRIu64,
                              (double)(deadline - begin) / 1e9, g, peer_slot, peer_pid,
                              atomic_load_explicit(&peer->generation, memory_order_relaxed));
        }
        uint64_t elapsed = now - begin;
        if (elapsed < b->spin_ns) continue;
        if (elapsed - b->spin_ns < b->yield_ns) {
            sched_yield();
            continue;
        }
        /* Sleep: announce it, then re-check (Dekker with the waker's store-then-load). */
        atomic_store_explicit(&own->state, DUET_BARRIER_STATE_SLEEPING, memory_order_seq_cst);
        uint64_t seen = atomic_load_explicit(&peer->generation, memory_order_seq_cst);
        if (seen < g && !atomic_load_explicit(&h->abort, memory_order_seq_cst)) {
            uint64_t slice = deadline - now;
            if (slice > DUET_BARRIER_SLEEP_SLICE_NS) slice = DUET_BARRIER_SLEEP_SLICE_NS;
            duet__futex_wait(&peer->generation, (uint32_t)seen, slice);
        }
        atomic_store_explicit(&own->state, DUET_BARRIER_STATE_ATTACHED, memory_order_relaxed);
    }
}

/* One generation: arrive, wait for every other party, read the clock (duet_barrier_wait). */
static inline int duet__rendezvous(duet_barrier *b, uint64_t timeout_ns, uint64_t *start_ns) {
    duet_barrier_header *h = b->header;
    if (atomic_load_explicit(&h->abort, memory_order_acquire)) return duet__aborted(b);
    duet_barrier_slot *own = &b->slots[b->slot];
    uint64_t g = ++b->generation;
    atomic_store_explicit(&own->generation, g, memory_order_seq_cst);
    for (uint32_t k = 0; k < b->parties; k++) {
        if (k != b->slot && atomic_load_explicit(&b->slots[k].state, memory_order_seq_cst) ==
                                DUET_BARRIER_STATE_SLEEPING) {
            duet__futex_wake(&own->generation);
            break;
        }
    }
    uint64_t begin = 0, deadline = 0;
    for (uint32_t j = 0; j < b->parties; j++) {
        if (j == b->slot) continue;
        duet_barrier_slot *peer = &b->slots[j];
        unsigned n = 0;
        /* The common case: a pure spin, no clock read. */
        while (atomic_load_explicit(&peer->generation, memory_order_acquire) < g) {
            if (atomic_load_explicit(&h->abort, memory_order_relaxed)) {
                atomic_thread_fence(memory_order_acquire);
                return duet__aborted(b);
            }
            duet__pause();
            if (++n == DUET_BARRIER_SPINS_PER_CHECK) {
                if (begin == 0) {
                    begin = duet_monotonic_ns();
                    deadline = begin + timeout_ns;
                    if (deadline < begin) deadline = UINT64_MAX;
                }
                int rc = duet__wait_long(b, j, g, begin, deadline);
                if (rc != DUET_BARRIER_OK) return rc;
                break;
            }
        }
    }
    uint64_t t = duet_monotonic_ns();
    if (start_ns) *start_ns = t;
    return DUET_BARRIER_OK;
}

/* -- crossover: moving the side between the CPUs of its pair ------------------------------- */

/* The side's threads: the task list file, else /proc/self/task. Returns how many were put in
 * out (at most cap), or -1 with b->error set. */
static inline int duet__threads(duet_barrier *b, pid_t *out, size_t cap, size_t *total) {
    size_t n = 0;
    *total = 0;
    if (b->tasks[0] != '\0') {
        FILE *f = fopen(b->tasks, "re");
        if (f == NULL)
            return duet__fail(b->error, -1, "cannot read the side's task list %s: %s", b->tasks,
                              strerror(errno));
        long tid;
        while (fscanf(f, "%ld", &tid) == 1) {
            if (n < cap) out[n++] = (pid_t)tid;
            (*total)++;
        }
        fclose(f);
        return (int)n;
    }
    DIR *d = opendir("/proc/self/task");
    if (d == NULL)
        return duet__fail(b->error, -1, "cannot list /proc/self/task: %s", strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        if (n < cap) out[n++] = (pid_t)atol(e->d_name);
        (*total)++;
    }
    closedir(d);
    return (int)n;
}

/* Pin every thread of the side to cpu; a thread that ended meanwhile is skipped. */
static inline int duet__move(duet_barrier *b, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pid_t listed[DUET_BARRIER_MOVE_TRACKED];
    pid_t moved[DUET_BARRIER_MOVE_TRACKED];
    size_t nmoved = 0;
    for (unsigned pass = 0; pass < DUET_BARRIER_MOVE_PASSES; pass++) {
        size_t total = 0;
        int n = duet__threads(b, listed, DUET_BARRIER_MOVE_TRACKED, &total);
        if (n < 0) return DUET_BARRIER_E_MOVE;
        int fresh = 0;
        for (int i = 0; i < n; i++) {
            int seen = 0;
            for (size_t j = 0; j < nmoved && !seen; j++) seen = moved[j] == listed[i];
            if (seen) continue;
            fresh = 1;
            if (sched_setaffinity(listed[i], sizeof set, &set) != 0 && errno != ESRCH)
                return duet__fail(b->error, DUET_BARRIER_E_MOVE,
                                  "cannot move thread %ld of the side to CPU %d (crossover): "
                                  "%s; every CPU it crosses to must be in the side's cpuset "
                                  "and every thread in %s must be the side's own",
                                  (long)listed[i], cpu, strerror(errno),
                                  b->tasks[0] ? b->tasks : "/proc/self/task");
            if (nmoved < DUET_BARRIER_MOVE_TRACKED) moved[nmoved++] = listed[i];
        }
        /* More threads than tracked: the ones beyond were not moved; move everything again. */
        if (total > (size_t)n) nmoved = 0;
        if (!fresh) break;
    }
    b->cpu = cpu;
    return DUET_BARRIER_OK;
}

/* Cross the side over the cores: from now on wait k (counted from 0) runs it on
 * cpus[k % ncpus]; it moves to cpus[0] at once, so what it does before its first wait already
 * runs there. tasks: the file listing the side's threads (its cgroup's `tasks` at cgroup v1,
 * `cgroup.threads` at v2), NULL or "" for every thread of this process. */
static inline int duet_barrier_cross(duet_barrier *b, const int *cpus, uint32_t ncpus,
                                     const char *tasks) {
    if (ncpus == 0 || ncpus > DUET_BARRIER_MAX_CPUS)
        return duet__fail(b->error, DUET_BARRIER_E_USAGE,
                          "crossover needs 1 to %u CPUs, got %u", DUET_BARRIER_MAX_CPUS, ncpus);
    for (uint32_t i = 0; i < ncpus; i++) {
        if (cpus[i] < 0 || cpus[i] >= CPU_SETSIZE)
            return duet__fail(b->error, DUET_BARRIER_E_USAGE, "CPU %d is out of range", cpus[i]);
        b->cpus[i] = cpus[i];
    }
    if (tasks != NULL && strlen(tasks) >= sizeof b->tasks)
        return duet__fail(b->error, DUET_BARRIER_E_USAGE, "the task list path is too long");
    snprintf(b->tasks, sizeof b->tasks, "%s", tasks ? tasks : "");
    b->ncpus = ncpus;
    b->crossings = 0;
    return duet__move(b, b->cpus[0]);
}

/* Arrive and wait for every other party. On DUET_BARRIER_OK, *start_ns (if not NULL) is
 * CLOCK_MONOTONIC read right after the release. DUET_BARRIER_TIMEOUT / _ABORTED break the
 * barrier for this party (later waits return DUET_BARRIER_E_BROKEN); b->error says why.
 * After duet_barrier_cross, a wait is two rendezvous (two generations) with the move between:
 * both sides finish the previous iteration before either moves (a side that moved at once
 * would land on the CPU where the other still works), and both have moved before the clock
 * starts. A failed move returns DUET_BARRIER_E_MOVE. */
static inline int duet_barrier_wait(duet_barrier *b, uint64_t timeout_ns, uint64_t *start_ns) {
    if (b->map == NULL || b->slot >= b->parties)
        return duet__fail(b->error, DUET_BARRIER_E_USAGE,
                          "wait() needs an attached party's barrier");
    if (b->broken)
        return duet__fail(b->error, DUET_BARRIER_E_BROKEN,
                          "this party's barrier is broken by an earlier timeout or abort");
    if (b->ncpus == 0) return duet__rendezvous(b, timeout_ns, start_ns);
    int rc = duet__rendezvous(b, timeout_ns, NULL);
    if (rc != DUET_BARRIER_OK) return rc;
    rc = duet__move(b, b->cpus[b->crossings % b->ncpus]);
    if (rc != DUET_BARRIER_OK) return rc;
    b->crossings++;
    return duet__rendezvous(b, timeout_ns, start_ns);
}

/* Raise the abort flag: every wait of every party returns DUET_BARRIER_ABORTED promptly. */
static inline int duet_barrier_abort(duet_barrier *b, uint64_t reason) {
    if (b->map == NULL)
        return duet__fail(b->error, DUET_BARRIER_E_USAGE, "abort() on a closed barrier");
    if (reason == 0)
        return duet__fail(b->error, DUET_BARRIER_E_USAGE, "abort reason 0 is not a reason");
    duet_barrier_header *h = b->header;
    if (atomic_load_explicit(&h->abort, memory_order_acquire)) return DUET_BARRIER_OK;
    atomic_store_explicit(&h->abort_reason, reason, memory_order_relaxed);
    atomic_store_explicit(&h->abort_pid, (uint64_t)getpid(), memory_order_relaxed);
    atomic_store_explicit(&h->abort, 1, memory_order_seq_cst);
    for (uint32_t i = 0; i < b->parties; i++) duet__futex_wake(&b->slots[i].generation);
    return DUET_BARRIER_OK;
}

/* Mark our slot DETACHED and unmap; the file stays (the orchestrator removes it). Idempotent. */
static inline void duet_barrier_close(duet_barrier *b) {
    if (b->map == NULL) return;
    if (b->slot < b->parties)
        atomic_store_explicit(&b->slots[b->slot].state, DUET_BARRIER_STATE_DETACHED,
                              memory_order_seq_cst);
    munmap(b->map, b->size);
    b->map = NULL;
    b->header = NULL;
    b->slots = NULL;
}

/* -- the native-benchmark contract -------------------------------------------------------- */

/* Exit codes, the same as duet_worker.py's. */
#define DUET_EXIT_OK 0
#define DUET_EXIT_USAGE 2
#define DUET_EXIT_FAILED 3
#define DUET_EXIT_TIMEOUT 4
#define DUET_EXIT_ABORTED 5
#define DUET_EXIT_BARRIER 6

typedef struct duet_native {
    duet_barrier barrier;
    uint32_t slot;
    char side[64];
    uint64_t warmup;
    uint64_t iterations;
    uint64_t timeout_ns;
    uint64_t inner_loops;   /* written in the done line; 1 unless the program loops itself */
    uint64_t done;          /* iterations finished, warmup included */
    uint64_t start_ns;      /* of the current iteration */
    uint64_t cpu_start_ns;
    /* /proc/thread-self/schedstat of the thread that opened the context, kept open (-1: the
     * kernel has none); its second field is the time spent runnable but waiting for a CPU. */
    int schedstat_fd;
    uint64_t runq_start_ns;
    long nivcsw_start;
    FILE *samples;
    int in_iteration;
    int exit_code;          /* DUET_EXIT_*: 0 while all is well */
    char error[512];
} duet_native;

/* The run-queue delay so far of the thread behind fd (schedstat field 2), or UINT64_MAX. */
static inline uint64_t duet__run_delay_ns(int fd) {
    if (fd < 0) return UINT64_MAX;
    char buf[128];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return UINT64_MAX;
    buf[n] = '\0';
    unsigned long long runtime = 0, delay = 0;
    if (sscanf(buf, "%llu %llu", &runtime, &delay) != 2) return UINT64_MAX;
    return (uint64_t)delay;
}

static inline long duet__involuntary_switches(void) {
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) != 0) return -1;
    return usage.ru_nivcsw;
}

static inline void duet__json_string(FILE *out, const char *s) {
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc(c, out);
        } else if (c < 0x20) {
            fprintf(out, "\\u%04x", c);
        } else {
            fputc(c, out);
        }
    }
    fputc('"', out);
}

/* Record a failure: error line in the samples file, abort the barrier so the other side stops
 * at once (unless the failure is the abort itself), remember the exit code. */
static inline int duet__native_failed(duet_native *ctx, int exit_code, uint64_t abort_reason) {
    if (ctx->exit_code == DUET_EXIT_OK) ctx->exit_code = exit_code;
    if (ctx->samples) {
        fputs("{\"error\": ", ctx->samples);
        duet__json_string(ctx->samples, ctx->error);
        fputs("}\n", ctx->samples);
        fflush(ctx->samples);
    }
    if (abort_reason && ctx->barrier.map) duet_barrier_abort(&ctx->barrier, abort_reason);
    ctx->in_iteration = 0;
    return ctx->exit_code;
}

/* The program's own failure (message goes to the samples file); returns DUET_EXIT_FAILED. */
static inline int duet_native_fail(duet_native *ctx, const char *message) {
    snprintf(ctx->error, sizeof ctx->error, "%s", message);
    return duet__native_failed(ctx, DUET_EXIT_FAILED, DUET_ABORT_PARTY_FAILED);
}

static inline int duet__env_u64(duet_native *ctx, const char *name, int required,
                                uint64_t fallback, uint64_t *out) {
    const char *value = getenv(name);
    if (value == NULL || *value == '\0') {
        if (!required) {
            *out = fallback;
            return 0;
        }
        snprintf(ctx->error, sizeof ctx->error,
                 "UsageError: %s is not set: this program must be started by duet (native "
                 "benchmark)",
                 name);
        return -1;
    }
    char *end = NULL;
    errno = 0;
    unsigned long long parsed = strtoull(value, &end, 10);
    if (value[0] < '0' || value[0] > '9' || errno != 0 || *end != '\0') {
        snprintf(ctx->error, sizeof ctx->error,
                 "UsageError: %s=\"%.64s\" is not a non-negative integer", name, value);
        return -1;
    }
    *out = (uint64_t)parsed;
    return 0;
}

/* Crossover when DUET_CPUS is set ("3,1": wait k runs the side on the k-th CPU of the list,
 * cyclically; DUET_TASKS the side's task list); else the side stays where duet pinned it, and
 * its one CPU, when it has one, is recorded per iteration. Returns 0 or the exit code. */
static inline int duet__native_place(duet_native *ctx) {
    const char *list = getenv("DUET_CPUS");
    if (list == NULL || *list == '\0') {
        cpu_set_t set;
        CPU_ZERO(&set);
        if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1)
            for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &set)) ctx->barrier.cpu = c;
        return DUET_EXIT_OK;
    }
    int cpus[DUET_BARRIER_MAX_CPUS];
    uint32_t n = 0;
    const char *p = list;
    for (;;) {
        char *end = NULL;
        errno = 0;
        long cpu = strtol(p, &end, 10);
        if (*p < '0' || *p > '9' || errno != 0 || end == p || cpu >= CPU_SETSIZE ||
            n == DUET_BARRIER_MAX_CPUS || (*end != ',' && *end != '\0')) {
            snprintf(ctx->error, sizeof ctx->error,
                     "UsageError: DUET_CPUS=\"%.64s\" is not a list of at most %u CPU numbers "
                     "separated by commas",
                     list, DUET_BARRIER_MAX_CPUS);
            return duet__native_failed(ctx, DUET_EXIT_USAGE, DUET_ABORT_PARTY_FAILED);
        }
        cpus[n++] = (int)cpu;
        if (*end == '\0') break;
        p = end + 1;
    }
    if (duet_barrier_cross(&ctx->barrier, cpus, n, getenv("DUET_TASKS")) != DUET_BARRIER_OK) {
        snprintf(ctx->error, sizeof ctx->error, "BarrierError: %s", ctx->barrier.error);
        return duet__native_failed(ctx, DUET_EXIT_BARRIER, DUET_ABORT_PARTY_FAILED);
    }
    return DUET_EXIT_OK;
}

/* Read DUET_* from the environment, open the samples file and write its header, attach to the
 * barrier (and cross over when DUET_CPUS says so). Returns 0, or the exit code (ctx->error
 * says why). */
static inline int duet_native_open(duet_native *ctx) {
    memset(ctx, 0, sizeof *ctx);
    ctx->inner_loops = 1;
    ctx->schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    ctx->barrier.slot = UINT32_MAX;
    ctx->barrier.cpu = -1;
    const char *samples = getenv("DUET_SAMPLES");
    if (samples == NULL || *samples == '\0') {
        snprintf(ctx->error, sizeof ctx->error,
                 "UsageError: DUET_SAMPLES is not set: this program must be started by duet "
                 "(native benchmark)");
        ctx->exit_code = DUET_EXIT_USAGE;
        return ctx->exit_code;
    }
    ctx->samples = fopen(samples, "w");
    if (ctx->samples == NULL) {
        snprintf(ctx->error, sizeof ctx->error, "OSError: cannot open the samples file %.256s: %s",
                 samples, strerror(errno));
        ctx->exit_code = DUET_EXIT_USAGE;
        return ctx->exit_code;
    }
    const char *side = getenv("DUET_SIDE");
    snprintf(ctx->side, sizeof ctx->side, "%s", side ? side : "");
    fputs("{\"duet_samples\": 1, \"side\": ", ctx->samples);
    duet__json_string(ctx->samples, ctx->side);
    fprintf(ctx->samples, ", \"pid\": %ld}\n", (long)getpid());
    fflush(ctx->samples);
    uint64_t slot = 0;
    if (side == NULL || *side == '\0') {
        snprintf(ctx->error, sizeof ctx->error,
                 "UsageError: DUET_SIDE is not set: this program must be started by duet "
                 "(native benchmark)");
        return duet__native_failed(ctx, DUET_EXIT_USAGE, 0);
    }
    if (duet__env_u64(ctx, "DUET_SLOT", 1, 0, &slot) != 0 ||
        duet__env_u64(ctx, "DUET_ITERATIONS", 1, 0, &ctx->iterations) != 0 ||
        duet__env_u64(ctx, "DUET_WARMUP", 0, 0, &ctx->warmup) != 0 ||
        duet__env_u64(ctx, "DUET_TIMEOUT_NS", 0, UINT64_C(60000000000), &ctx->timeout_ns) != 0)
        return duet__native_failed(ctx, DUET_EXIT_USAGE, 0);
    if (slot >= DUET_BARRIER_MAX_PARTIES) {
        snprintf(ctx->error, sizeof ctx->error, "UsageError: DUET_SLOT=%" PRIu64 " is out of range",
                 slot);
        return duet__native_failed(ctx, DUET_EXIT_USAGE, 0);
    }
    ctx->slot = (uint32_t)slot;
    const char *path = getenv("DUET_BARRIER");
    if (path == NULL || *path == '\0') {
        snprintf(ctx->error, sizeof ctx->error,
                 "UsageError: DUET_BARRIER is not set: this program must be started by duet "
                 "(native benchmark)");
        return duet__native_failed(ctx, DUET_EXIT_USAGE, 0);
    }
    int rc = duet_barrier_attach(&ctx->barrier, path, ctx->slot);
    if (rc != DUET_BARRIER_OK) {
        snprintf(ctx->error, sizeof ctx->error, "BarrierFileError: %s", ctx->barrier.error);
        return duet__native_failed(ctx, DUET_EXIT_BARRIER, 0);
    }
    return duet__native_place(ctx);
}

/* Wait at the barrier for the next iteration. Returns 1: run the iteration now; 0: all
 * iterations are done; -1: failed (timeout, abort: ctx->exit_code and ctx->error say which). */
static inline int duet_native_iteration_begin(duet_native *ctx) {
    if (ctx->exit_code != DUET_EXIT_OK) return -1;
    if (ctx->in_iteration) {
        snprintf(ctx->error, sizeof ctx->error,
                 "UsageError: duet_native_iteration_begin() called twice without iteration_end()");
        duet__native_failed(ctx, DUET_EXIT_USAGE, DUET_ABORT_PARTY_FAILED);
        return -1;
    }
    if (ctx->done >= ctx->warmup + ctx->iterations) return 0;
    uint64_t start = 0;
    int rc = duet_barrier_wait(&ctx->barrier, ctx->timeout_ns, &start);
    if (rc == DUET_BARRIER_OK) {
        ctx->cpu_start_ns = duet__clock_ns(CLOCK_PROCESS_CPUTIME_ID);
        ctx->runq_start_ns = duet__run_delay_ns(ctx->schedstat_fd);
        ctx->nivcsw_start = duet__involuntary_switches();
        ctx->start_ns = start;
        ctx->in_iteration = 1;
        return 1;
    }
    if (rc == DUET_BARRIER_TIMEOUT) {
        snprintf(ctx->error, sizeof ctx->error, "BarrierTimeout: %s", ctx->barrier.error);
        duet__native_failed(ctx, DUET_EXIT_TIMEOUT, DUET_ABORT_PARTY_TIMEOUT);
    } else if (rc == DUET_BARRIER_ABORTED) {
        snprintf(ctx->error, sizeof ctx->error, "BarrierAborted: %s", ctx->barrier.error);
        duet__native_failed(ctx, DUET_EXIT_ABORTED, 0);
    } else {
        snprintf(ctx->error, sizeof ctx->error, "BarrierError: %s", ctx->barrier.error);
        duet__native_failed(ctx, DUET_EXIT_BARRIER, DUET_ABORT_PARTY_FAILED);
    }
    return -1;
}

/* End the iteration begun last: time it and append its sample line (flushed). Returns 0 or -1. */
static inline int duet_native_iteration_end(duet_native *ctx) {
    uint64_t end = duet_monotonic_ns();
    uint64_t cpu_end = duet__clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    uint64_t runq_end = duet__run_delay_ns(ctx->schedstat_fd);
    long nivcsw_end = duet__involuntary_switches();
    if (ctx->exit_code != DUET_EXIT_OK) return -1;
    if (!ctx->in_iteration) {
        snprintf(ctx->error, sizeof ctx->error,
                 "UsageError: duet_native_iteration_end() called without iteration_begin()");
        duet__native_failed(ctx, DUET_EXIT_USAGE, DUET_ABORT_PARTY_FAILED);
        return -1;
    }
    ctx->in_iteration = 0;
    int warmup = ctx->done < ctx->warmup;
    uint64_t index = warmup ? ctx->done : ctx->done - ctx->warmup;
    int written = fprintf(ctx->samples,
                          "{\"phase\": \"%s\", \"index\": %" PRIu64 ", \"start_ns\": %" PRIu64
                          ", \"duration_ns\": %" PRIu64 ", \"cpu_ns\": %" PRIu64,
                          warmup ? "warmup" : "measure", index, ctx->start_ns,
                          end - ctx->start_ns, cpu_end - ctx->cpu_start_ns);
    if (written >= 0 && runq_end != UINT64_MAX && ctx->runq_start_ns != UINT64_MAX &&
        runq_end >= ctx->runq_start_ns)
        written = fprintf(ctx->samples, ", \"runq_ns\": %" PRIu64, runq_end - ctx->runq_start_ns);
    if (written >= 0 && nivcsw_end >= 0 && ctx->nivcsw_start >= 0)
        written = fprintf(ctx->samples, ", \"nivcsw\": %ld", nivcsw_end - ctx->nivcsw_start);
    if (written >= 0 && ctx->barrier.cpu >= 0)
        written = fprintf(ctx->samples, ", \"cpu\": %d", ctx->barrier.cpu);
    if (written >= 0) written = fputs("}\n", ctx->samples);
    if (written < 0 || fflush(ctx->samples) != 0) {
        snprintf(ctx->error, sizeof ctx->error, "OSError: cannot write the samples file: %s",
                 strerror(errno));
        duet__native_failed(ctx, DUET_EXIT_FAILED, DUET_ABORT_PARTY_FAILED);
        return -1;
    }
    ctx->done++;
    return 0;
}

/* The whole loop around a callback: fn(arg) does one iteration's work and returns 0, or
 * non-zero for a failure. Returns 0 or the exit code; call duet_native_close() after. */
static inline int duet_native_run(duet_native *ctx, int (*fn)(void *arg), void *arg) {
    int rc;
    while ((rc = duet_native_iteration_begin(ctx)) > 0) {
        int status = fn(arg);
        if (status != 0) {
            snprintf(ctx->error, sizeof ctx->error,
                     "BenchmarkFailed: the benchmark function returned %d in iteration %" PRIu64,
                     status, ctx->done);
            return duet__native_failed(ctx, DUET_EXIT_FAILED, DUET_ABORT_PARTY_FAILED);
        }
        if (duet_native_iteration_end(ctx) != 0) break;
    }
    return ctx->exit_code;
}

/* Write the done line (if every iteration ran), close the samples file and detach. Returns
 * the exit code: 0, or the failure's DUET_EXIT_*. Closing early counts as a failure. */
static inline int duet_native_close(duet_native *ctx) {
    if (ctx->exit_code == DUET_EXIT_OK && ctx->done < ctx->warmup + ctx->iterations) {
        snprintf(ctx->error, sizeof ctx->error,
                 "BenchmarkFailed: closed after %" PRIu64 " of %" PRIu64 " iterations",
                 ctx->done, ctx->warmup + ctx->iterations);
        duet__native_failed(ctx, DUET_EXIT_FAILED, DUET_ABORT_PARTY_FAILED);
    }
    if (ctx->samples) {
        if (ctx->exit_code == DUET_EXIT_OK)
            fprintf(ctx->samples, "{\"done\": true, \"inner_loops\": %" PRIu64 "}\n",
                    ctx->inner_loops);
        if (fclose(ctx->samples) != 0 && ctx->exit_code == DUET_EXIT_OK)
            ctx->exit_code = DUET_EXIT_FAILED;
        ctx->samples = NULL;
    }
    if (ctx->schedstat_fd >= 0) close(ctx->schedstat_fd);
    ctx->schedstat_fd = -1;
    duet_barrier_close(&ctx->barrier);
    return ctx->exit_code;
}

#endif /* DUET_BARRIER_H */
