/* The C client's test runner: starts the shared clothd, runs every suite
 * (or those whose test names contain argv[1]), each test under a watchdog,
 * stops the server (it must exit 0) and prints "c-client: N passed, N failed". */
#include "harness.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const ct_test *const suites[] = {
    ct_json_tests,       ct_frame_tests,    ct_api_tests,       ct_command_tests, ct_error_tests,
    ct_subscribe_tests,  ct_pipeline_tests, ct_connection_tests, ct_auth_tests,   ct_example_tests,
    ct_garment_tests,    ct_scene_tests,    ct_shard_tests,     ct_hello_tests,   ct_unix_tests,
    ct_shm_tests,
};

int main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    signal(SIGPIPE, SIG_IGN); /* the fake servers' writes; the library never needs this */
    if (!ct_server_start_unix(&ct_main_server, NULL)) { /* TCP, and a Unix socket for test_unix.c */
        fprintf(stderr, "c-client: cannot start clothd ($CLOTHD_BIN)\n");
        return 2;
    }
    int passed = 0, failed = 0;
    int64_t t0 = ct_now_ms();
    for (size_t s = 0; s < sizeof suites / sizeof suites[0]; s++) {
        for (const ct_test *t = suites[s]; t->name != NULL; t++) {
            if (filter != NULL && strstr(t->name, filter) == NULL)
                continue;
            ct_set_current(t->name);
            ct_failed = false;
            int64_t start = ct_now_ms();
            alarm((unsigned)(t->timeout_s ? t->timeout_s : 20));
            t->fn();
            alarm(0);
            int ms = (int)(ct_now_ms() - start);
            printf("%s %s (%d ms)\n", ct_failed ? "FAIL" : "ok  ", t->name, ms);
            fflush(stdout);
            if (ct_failed)
                failed++;
            else
                passed++;
        }
    }
    int code = ct_server_stop(&ct_main_server);
    if (code != 0) {
        fprintf(stderr, "  FAIL: the shared clothd exited with %d (its stderr: %s)\n", code, ct_main_server.log);
        failed++;
    }
    printf("c-client: %d tests in %.1f s\n", passed + failed, (double)(ct_now_ms() - t0) / 1000.0);
    printf("c-client: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
