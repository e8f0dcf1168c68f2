/* The demo's small program: an integer workload of about 20 ms.
 * Version 2 (compiled with -DVERSION=2) does 5 % more work: that is the regression the demo
 * finds. The result is printed so the compiler cannot drop the loop. */
#include <stdint.h>
#include <stdio.h>

#ifndef VERSION
#define VERSION 1
#endif

#define BASE_STEPS 24000000ULL

int main(void) {
    uint64_t steps = VERSION == 2 ? BASE_STEPS * 105 / 100 : BASE_STEPS;
    uint64_t x = 88172645463325252ULL, acc = 0;
    for (uint64_t i = 0; i < steps; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        acc += x & 0xff;
    }
    printf("%llu\n", (unsigned long long)acc);
    return 0;
}
