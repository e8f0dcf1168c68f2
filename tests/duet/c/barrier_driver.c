/*
 * Test driver for duet_barrier.h: reads one command per line on stdin, answers one line on
 * stdout (flushed), so tests/duet/test_barrier_c.py can replay the shared vectors step by step
 * and pair the C client with a Python peer.
 *
 *   create PATH PARTIES CREATED_NS CREATOR_PID -> ok | refused CODE MESSAGE
 *   attach PATH SLOT                           -> ok | refused CODE MESSAGE
 *   observe PATH                               -> ok | refused CODE MESSAGE
 *   spin SLOT SPIN_NS YIELD_NS                 -> ok
 *   wait SLOT TIMEOUT_NS                       -> released START_NS | timeout | aborted REASON PID
 *                                                 | broken
 *   rounds SLOT N TIMEOUT_NS OUT               -> done | failed CODE MESSAGE   (start_ns per line
 *                                                 in OUT)
 *   abort SLOT|observer REASON                 -> ok | failed CODE MESSAGE
 *   generation SLOT                            -> VALUE (read through the observer handle)
 *   close SLOT|observer                        -> ok
 *   pid                                        -> PID
 *   quit
 */
#include "duet_barrier.h"

#define OBSERVER DUET_BARRIER_MAX_PARTIES

static duet_barrier handles[DUET_BARRIER_MAX_PARTIES + 1];

static unsigned handle_index(const char *word) {
    if (strcmp(word, "observer") == 0) return OBSERVER;
    unsigned long slot = strtoul(word, NULL, 10);
    return slot < DUET_BARRIER_MAX_PARTIES ? (unsigned)slot : OBSERVER;
}

static void reply_refused(int rc, const duet_barrier *b) {
    printf("refused %s %s\n", duet_barrier_code_name(rc), b->error);
}

static int rounds(duet_barrier *b, unsigned long long n, uint64_t timeout_ns, const char *out) {
    uint64_t *starts = calloc(n ? n : 1, sizeof *starts);
    if (starts == NULL) {
        printf("failed system out of memory\n");
        return -1;
    }
    int rc = DUET_BARRIER_OK;
    unsigned long long done = 0;
    for (; done < n; done++) {
        rc = duet_barrier_wait(b, timeout_ns, &starts[done]);
        if (rc != DUET_BARRIER_OK) break;
    }
    FILE *f = fopen(out, "w");
    if (f != NULL) {
        for (unsigned long long i = 0; i < done; i++) fprintf(f, "%" PRIu64 "\n", starts[i]);
        fclose(f);
    }
    free(starts);
    if (rc != DUET_BARRIER_OK) {
        printf("failed %s %s\n", duet_barrier_code_name(rc), b->error);
        return -1;
    }
    printf("done\n");
    return 0;
}

int main(void) {
    char line[4096];
    for (unsigned i = 0; i <= OBSERVER; i++) handles[i].map = NULL;
    while (fgets(line, sizeof line, stdin) != NULL) {
        char cmd[32] = "", a[2048] = "", b_[64] = "", c[64] = "", d[2048] = "";
        int fields = sscanf(line, "%31s %2047s %63s %63s %2047s", cmd, a, b_, c, d);
        if (fields < 1) continue;
        if (strcmp(cmd, "quit") == 0) break;
        if (strcmp(cmd, "pid") == 0) {
            printf("%ld\n", (long)getpid());
        } else if (strcmp(cmd, "create") == 0) {
            duet_barrier *h = &handles[OBSERVER];
            int rc = duet_barrier_create(h, a, (uint32_t)strtoul(b_, NULL, 10),
                                         strtoull(c, NULL, 10), strtoull(d, NULL, 10));
            if (rc == DUET_BARRIER_OK)
                printf("ok\n");
            else
                reply_refused(rc, h);
        } else if (strcmp(cmd, "attach") == 0) {
            unsigned slot = (unsigned)strtoul(b_, NULL, 10);
            duet_barrier *h = &handles[slot < DUET_BARRIER_MAX_PARTIES ? slot : 0];
            duet_barrier scratch;
            /* A refused attach must not clobber a live handle. */
            int rc = duet_barrier_attach(&scratch, a, slot);
            if (rc == DUET_BARRIER_OK) {
                *h = scratch;
                printf("ok\n");
            } else {
                reply_refused(rc, &scratch);
            }
        } else if (strcmp(cmd, "observe") == 0) {
            duet_barrier *h = &handles[OBSERVER];
            int rc = duet_barrier_observe(h, a);
            if (rc == DUET_BARRIER_OK)
                printf("ok\n");
            else
                reply_refused(rc, h);
        } else if (strcmp(cmd, "spin") == 0) {
            duet_barrier_set_spin(&handles[handle_index(a)], strtoull(b_, NULL, 10),
                                  strtoull(c, NULL, 10));
            printf("ok\n");
        } else if (strcmp(cmd, "wait") == 0) {
            duet_barrier *h = &handles[handle_index(a)];
            uint64_t start = 0;
            int rc = duet_barrier_wait(h, strtoull(b_, NULL, 10), &start);
            if (rc == DUET_BARRIER_OK)
                printf("released %" PRIu64 "\n", start);
            else if (rc == DUET_BARRIER_TIMEOUT)
                printf("timeout\n");
            else if (rc == DUET_BARRIER_ABORTED)
                printf("aborted %" PRIu64 " %" PRIu64 "\n", h->abort_reason, h->abort_pid);
            else if (rc == DUET_BARRIER_E_BROKEN)
                printf("broken\n");
            else
                printf("failed %s %s\n", duet_barrier_code_name(rc), h->error);
        } else if (strcmp(cmd, "rounds") == 0) {
            rounds(&handles[handle_index(a)], strtoull(b_, NULL, 10), strtoull(c, NULL, 10), d);
        } else if (strcmp(cmd, "abort") == 0) {
            duet_barrier *h = &handles[handle_index(a)];
            int rc = duet_barrier_abort(h, strtoull(b_, NULL, 10));
            if (rc == DUET_BARRIER_OK)
                printf("ok\n");
            else
                printf("failed %s %s\n", duet_barrier_code_name(rc), h->error);
        } else if (strcmp(cmd, "generation") == 0) {
            printf("%" PRIu64 "\n",
                   duet_barrier_generation(&handles[OBSERVER], (uint32_t)strtoul(a, NULL, 10)));
        } else if (strcmp(cmd, "close") == 0) {
            duet_barrier_close(&handles[handle_index(a)]);
            printf("ok\n");
        } else {
            printf("failed usage unknown command %s\n", cmd);
        }
        fflush(stdout);
    }
    for (unsigned i = 0; i <= OBSERVER; i++) duet_barrier_close(&handles[i]);
    return 0;
}
