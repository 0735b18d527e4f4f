/* A deterministic mutation fuzzer for the request parser: valid requests of
 * every command are cut, spliced, bit-flipped and filled with hostile bytes,
 * and each mutant must give a definite answer (OK, or a known error code
 * with a one-line message) without crashing. `make test` also runs this
 * file under AddressSanitizer and UndefinedBehaviorSanitizer. */
#include <criterion/criterion.h>
#include <string.h>

#include "../protocol/protocol.h"

static const char *const corpus[] = {
    "{\"cmd\":\"create\",\"id\":1,\"width\":12,\"height\":7,\"spacing\":0.05,\"mass\":2,"
    "\"stiffness\":0.9,\"bendStiffness\":0.4,\"damping\":0.02,\"origin\":[0,2,0],"
    "\"solverIterations\":8,\"right\":[1,0,0],\"down\":[0,0,1],\"gravity\":[0,-9.81,0]}",
    "{\"cmd\":\"destroy\",\"instance\":3}",
    "{\"cmd\":\"pin\",\"instance\":1,\"particles\":[0,1,2],\"positions\":[[0,1,0],[1,1,0],[2,1,0]]}",
    "{\"cmd\":\"pin\",\"instance\":1,\"particle\":9,\"position\":[0.9,2,0]}",
    "{\"cmd\":\"unpin\",\"instance\":1,\"particles\":[4,5]}",
    "{\"cmd\":\"wind\",\"wind\":[1,0,0.5],\"id\":\"w\"}",
    "{\"cmd\":\"gravity\",\"instance\":2,\"gravity\":[0,-1,0]}",
    "{\"cmd\":\"addCollider\",\"instance\":1,\"type\":\"capsule\",\"position\":[0,1,0],"
    "\"normal\":[0,1,0],\"radius\":0.1,\"height\":0.6}",
    "{\"cmd\":\"moveCollider\",\"instance\":1,\"collider\":1,\"position\":[0,2,0]}",
    "{\"cmd\":\"removeCollider\",\"instance\":1,\"collider\":65537}",
    "{\"cmd\":\"enable\",\"instance\":1,\"enabled\":false}",
    "{\"cmd\":\"step\",\"dt\":0.016666,\"instances\":[1,2,3]}",
    "{\"cmd\":\"get\",\"instance\":1}",
    "{\"cmd\":\"subscribe\",\"instances\":[1,2]}",
    "{\"cmd\":\"unsubscribe\"}",
    "{\"cmd\":\"status\"}",
};

static const char *const hostile[] = {
    "1e999", "-1e999", "NaN", "null", "[]", "{}", "\"\\u0000\"", "[[[[[[[[[[", "-0",
    "4294967296", "-1", "2.5", "\"\xff\xfe\"", "true", "1e-400", "[1,2]", "[1,2,3,4]",
};

/* xorshift32: the same mutants on every run. */
static uint32_t next_random(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

static size_t mutate(char *out, size_t cap, uint32_t *rng)
{
    const size_t ncorpus = sizeof corpus / sizeof corpus[0];
    const char *base = corpus[next_random(rng) % ncorpus];
    size_t len = strlen(base);
    memcpy(out, base, len);
    int edits = 1 + (int)(next_random(rng) % 4);
    for (int e = 0; e < edits && len > 0; e++) {
        size_t at = next_random(rng) % len;
        switch (next_random(rng) % 5) {
        case 0: /* flip a bit */
            out[at] = (char)(out[at] ^ (1u << (next_random(rng) % 8)));
            break;
        case 1: /* cut the tail */
            len = at;
            break;
        case 2: /* random byte, NUL included */
            out[at] = (char)(next_random(rng) & 0xFF);
            break;
        case 3: { /* splice a hostile literal */
            const char *h = hostile[next_random(rng) % (sizeof hostile / sizeof hostile[0])];
            size_t hl = strlen(h);
            if (at + hl > cap)
                break;
            memcpy(out + at, h, hl);
            if (at + hl > len)
                len = at + hl;
            break;
        }
        case 4: { /* splice a piece of another request */
            const char *other = corpus[next_random(rng) % ncorpus];
            size_t ol = strlen(other), from = next_random(rng) % ol, n = ol - from;
            if (at + n > cap)
                n = cap - at;
            memcpy(out + at, other + from, n);
            len = at + n;
            break;
        }
        }
    }
    return len;
}

Test(protocol_fuzz, mutated_requests_always_get_a_definite_answer)
{
    enum { CAP = 1024, ROUNDS = 40000 };
    uint32_t rng = 0x9E3779B9u;
    cd_limits limits = cd_default_limits();
    limits.max_list = 64;
    unsigned ok = 0, failed = 0;
    for (int round = 0; round < ROUNDS; round++) {
        /* A heap copy of exactly `len` bytes: no terminating NUL to lean on. */
        char buf[CAP];
        size_t len = mutate(buf, CAP, &rng);
        char *line = malloc(len ? len : 1);
        cr_assert_not_null(line);
        memcpy(line, buf, len);
        cd_request req;
        cd_error err;
        cd_status st = cd_request_parse(line, len, &limits, &req, &err);
        if (st == CD_OK) {
            ok++;
            cr_assert(req.cmd < CD_CMD_COUNT);
        } else {
            failed++;
            cr_assert(st > CD_OK && st < CD_STATUS_COUNT, "unknown status %d", st);
            cr_assert_eq(err.code, st);
            cr_assert(err.message[0] != '\0', "an error without a message");
            cr_assert_null(strchr(err.message, '\n'), "a message must stay on one line");
        }
        cd_request_free(&req);
        free(line);
    }
    /* Both outcomes must be exercised, or the fuzzer tests nothing. */
    cr_assert_gt(ok, 100u);
    cr_assert_gt(failed, 100u);
}
