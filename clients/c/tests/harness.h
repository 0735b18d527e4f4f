/* The C client's test runner: a plain one (no framework), so the same
 * binary runs under ASan+UBSan without a forking runner in the way. Each
 * test is a function in a table; CHECK records a failure and goes on,
 * REQUIRE records it and leaves the test. Every test runs under a watchdog
 * (a hang fails the run instead of blocking it), and the run ends with the
 * line "c-client: N passed, N failed". Helpers start the real clothd
 * ($CLOTHD_BIN) on an ephemeral port, a TCP proxy that can cut
 * connections, and small fake servers that break the protocol. */
#ifndef CLOTHD_C_TESTS_HARNESS_H
#define CLOTHD_C_TESTS_HARNESS_H

#define _POSIX_C_SOURCE 200809L

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "clothd/client.h"

typedef struct ct_test {
    const char *name;
    void (*fn)(void);
    int timeout_s; /* 0: 20 */
} ct_test;

extern bool ct_failed;
/* Names the running test in failure messages and arms the watchdog's handler. */
void ct_set_current(const char *name);

/* Records a failure: where, what failed (a condition or a step), and why. */
void ct_fail(const char *file, int line, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* CHECK(cond) or CHECK(cond, "format", args...): the trailing " " keeps ISO C
 * happy when no message is given (the tests build with -Wno-format-extra-args). */
#define CHECK(...) CT_CHECK_(__VA_ARGS__, " ")
#define CT_CHECK_(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ct_fail(__FILE__, __LINE__, "CHECK(" #cond ")", __VA_ARGS__);                        \
    } while (0)
#define REQUIRE(...) CT_REQUIRE_(__VA_ARGS__, " ")
#define CT_REQUIRE_(cond, ...)                                                                     \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            ct_fail(__FILE__, __LINE__, "REQUIRE(" #cond ")", __VA_ARGS__);                      \
            return;                                                                                \
        }                                                                                          \
    } while (0)
/* A call that must return CLOTHD_OK; on failure prints the error. */
#define REQUIRE_OK(call, err)                                                                      \
    do {                                                                                           \
        clothd_code rc_ = (call);                                                                  \
        if (rc_ != CLOTHD_OK) {                                                                    \
            ct_fail(__FILE__, __LINE__, #call, "-> %s: %s", clothd_code_name(rc_), (err).message);     \
            return;                                                                                \
        }                                                                                          \
    } while (0)
#define CHECK_NEAR(a, b, tol)                                                                      \
    CHECK(fabs((double)(a) - (double)(b)) <= (tol), "%s = %.9g, %s = %.9g (tolerance %g)", #a,    \
          (double)(a), #b, (double)(b), (double)(tol))

/* ---- the real server ---- */
typedef struct ct_server {
    pid_t pid;
    uint16_t port;
    char log[512];
    char unix_dir[64];   /* ct_server_start_unix's folder ("" without, or the caller's) */
    char unix_path[108]; /* --unix's path ("" without): unix_dir/clothd.sock, or the caller's */
} ct_server;

/* Starts $CLOTHD_BIN --port 0 --workers 2 plus `args` (NULL-terminated,
 * may be NULL); port 0 in `port_wanted` lets the server pick. */
bool ct_server_start(ct_server *s, const char *const *args, uint16_t port_wanted);
/* The same with `--unix DIR/clothd.sock` (DIR a fresh folder under /tmp,
 * removed by ct_server_stop/ct_server_kill), waiting for the second line,
 * "clothd listening on unix:PATH". The shared server is started so. */
bool ct_server_start_unix(ct_server *s, const char *const *args);
/* The same at `path` (a restarted server's; its folder stays the caller's). */
bool ct_server_start_unix_at(ct_server *s, const char *path, const char *const *args);
/* SIGTERM, and the exit status (0 expected) within 5 s; -1 if it hung or died by a signal. */
int ct_server_stop(ct_server *s);
void ct_server_kill(ct_server *s);

/* The suite's shared server (started by main, stopped at the end). */
extern ct_server ct_main_server;
/* A client of the shared server (or of `port`), timeout 10 s; NULL on failure (reported). */
clothd_client *ct_connect(uint16_t port, const char *token);
/* A client connected with these options; NULL on failure (reported). */
clothd_client *ct_connect_with(const clothd_options *o);

/* A file holding `text` (a temporary path in *path, cap bytes). */
bool ct_write_temp(const char *text, char *path, size_t cap);
/* A whole file, malloc'd and NUL-terminated (its length in *size when
 * size is not NULL); NULL when it cannot be read. */
char *ct_read_file(const char *path, size_t *size);
/* Runs a command, captures up to cap bytes of its stdout; the exit status or -1. */
int ct_run(const char *cmd, char *out, size_t cap);
/* The repository root ($CLOTHD_REPO). */
const char *ct_repo(void);
/* Milliseconds on a monotonic clock. */
int64_t ct_now_ms(void);
/* Polls client c until cond holds or ms pass. */
#define POLL_UNTIL(c, cond, ms)                                                                    \
    do {                                                                                           \
        int64_t until_ = ct_now_ms() + (ms);                                                       \
        while (!(cond) && ct_now_ms() < until_)                                                    \
            clothd_poll((c), 20, NULL, NULL);                                                      \
    } while (0)
void ct_sleep_ms(int ms);

/* ---- a proxy that can cut its connections ---- */
typedef struct ct_proxy ct_proxy;
ct_proxy *ct_proxy_start(uint16_t upstream_port);
uint16_t ct_proxy_port(const ct_proxy *p);
/* Closes every connection it carries now (new ones are accepted again). */
void ct_proxy_cut(ct_proxy *p);
void ct_proxy_stop(ct_proxy *p);

/* ---- a fake server: accepts one connection, reads one line, answers
 * `reply` bytes (may be NULL), then closes (close_after) or stays silent ---- */
typedef struct ct_fake ct_fake;
ct_fake *ct_fake_start(const void *reply, size_t len, bool close_after);
uint16_t ct_fake_port(const ct_fake *f);
void ct_fake_stop(ct_fake *f);
/* Stops it and copies every byte it read from its client (cap bytes, NUL-terminated). */
void ct_fake_stop_seen(ct_fake *f, char *seen, size_t cap);

/* ---- a clothd from before the handshake: answers `hello` with
 * unknown_command and every other request with ok (ping with "pong",
 * create with instance 1, step with "stepped"), one connection after another, keeping every
 * line it read ---- */
typedef struct ct_old ct_old;
ct_old *ct_old_start(void);
uint16_t ct_old_port(const ct_old *o);
/* Every line it has read so far (a copy, cap bytes, NUL-terminated). */
void ct_old_seen(ct_old *o, char *seen, size_t cap);
void ct_old_stop(ct_old *o);

/* The suites (each file's table ends with {NULL, NULL, 0}). */
extern const ct_test ct_json_tests[];
extern const ct_test ct_frame_tests[];
extern const ct_test ct_api_tests[];
extern const ct_test ct_command_tests[];
extern const ct_test ct_error_tests[];
extern const ct_test ct_subscribe_tests[];
extern const ct_test ct_pipeline_tests[];
extern const ct_test ct_connection_tests[];
extern const ct_test ct_auth_tests[];
extern const ct_test ct_example_tests[];
extern const ct_test ct_garment_tests[];
extern const ct_test ct_scene_tests[];
extern const ct_test ct_shard_tests[];
extern const ct_test ct_hello_tests[];
extern const ct_test ct_unix_tests[];
extern const ct_test ct_shm_tests[];

#endif
