/* test_rng.h — the random numbers of the randomized unit tests: one xorshift64* generator
 * and the seed of a run.
 *
 * A run's seed is FIRTH_TEST_SEED when it is set (decimal), else one taken from the clock and
 * the process id; test_rng_seed_of_run prints it to stderr with the test's name, so that a
 * failing run can be replayed. The generator is not for anything but tests: it is fast and
 * reproducible, nothing more. Header only: each test binary includes it once and owns its
 * generator state (tests are single-threaded; a thread of a test must not draw numbers). */
#ifndef FIRTH_TEST_RNG_H
#define FIRTH_TEST_RNG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static uint64_t test_rng_state = 1;

/* Starts the sequence again from seed (xorshift has no zero state: 0 counts as 1). */
static inline void test_rng_seed(uint64_t seed) { test_rng_state = seed ? seed : 1; }

/* The next 64 random bits (xorshift64*: Vigna, "An experimental exploration of Marsaglia's
 * xorshift generators"; the multiply makes the low bits as good as the high ones). */
static inline uint64_t test_rng_next(void)
{
    test_rng_state ^= test_rng_state >> 12;
    test_rng_state ^= test_rng_state << 25;
    test_rng_state ^= test_rng_state >> 27;
    return test_rng_state * 0x2545F4914F6CDD1DULL;
}

/* A number in [0, n), n > 0 (the modulo bias is of no concern to tests). */
static inline int test_rng_below(int n) { return (int)(test_rng_next() % (uint64_t)n); }

/* A number in [lo, hi], lo <= hi. */
static inline int test_rng_int(int lo, int hi)
{
    return lo + (int)(test_rng_next() % (uint64_t)((int64_t)hi - lo + 1));
}

/* True with the given chance in percent. */
static inline bool test_rng_chance(int percent) { return test_rng_int(1, 100) <= percent; }

/* The seed of this run: FIRTH_TEST_SEED, else one from the clock and the process id (never
 * 0). Prints "<test_name>: seed N (FIRTH_TEST_SEED=N replays it)" to stderr. */
static inline uint64_t test_rng_seed_of_run(const char *test_name)
{
    const char *s = getenv("FIRTH_TEST_SEED");
    uint64_t seed;
    if (s && *s) {
        seed = strtoull(s, NULL, 10);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec ^
               ((uint64_t)getpid() << 32);
    }
    if (seed == 0) seed = 1;
    fprintf(stderr, "%s: seed %llu (FIRTH_TEST_SEED=%llu replays it)\n", test_name,
            (unsigned long long)seed, (unsigned long long)seed);
    return seed;
}

#endif
