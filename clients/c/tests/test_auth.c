/* Tokens (server flags --token-file and --readonly-token-file): the client
 * sends `auth` first on its own, a wrong token fails clothd_connect with
 * `unauthorized`, the read-only token reads but may not step, and
 * token_from_env takes $CLOTHD_TOKEN. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static const char full_token[] = "full-access-token-4f1c9a7e2b";
static const char read_token[] = "read-only-token-8d3e6b1a5c0f";

static void tokens_should_grant_full_or_read_only_access(void)
{
    char full_file[512], read_file[512];
    REQUIRE(ct_write_temp(full_token, full_file, sizeof full_file));
    REQUIRE(ct_write_temp(read_token, read_file, sizeof read_file));
    const char *args[] = {"--token-file", full_file, "--readonly-token-file", read_file, NULL};
    ct_server s;
    REQUIRE(ct_server_start(&s, args, 0));
    clothd_error err;

    clothd_client *c = ct_connect(s.port, full_token);
    clothd_created cl = {{0}, 0, 0};
    if (c != NULL) {
        CHECK(clothd_access_granted(c) == CLOTHD_ACCESS_FULL);
        CHECK(clothd_create_cloth(c, NULL, &cl, &err) == CLOTHD_OK, "%s", err.message);
        clothd_close(c);
    }

    c = ct_connect(s.port, read_token);
    if (c != NULL) {
        CHECK(clothd_access_granted(c) == CLOTHD_ACCESS_READONLY);
        clothd_instance_state st;
        CHECK(clothd_get(c, cl.instance, NULL, &st, &err) == CLOTHD_OK, "get is allowed: %s", err.message);
        clothd_instance_state_free(&st);
        CHECK(clothd_ping(c, &err) == CLOTHD_OK);
        CHECK(clothd_step(c, NULL, NULL, &err) == CLOTHD_E_UNAUTHORIZED &&
                  strstr(err.message, "not allowed with the read-only token"),
              "%s", err.message);
        clothd_close(c);
    }

    clothd_options o = clothd_options_default();
    o.port = s.port;
    o.token = "not-the-token-at-all-xyz";
    clothd_client *bad = (clothd_client *)&o;
    CHECK(clothd_connect(&o, &bad, &err) == CLOTHD_E_UNAUTHORIZED && bad == NULL &&
              strstr(err.message, "token: wrong token"),
          "%s: %s", clothd_code_name(err.code), err.message);

    setenv(CLOTHD_TOKEN_ENV, full_token, 1);
    o.token = NULL;
    o.token_from_env = true;
    c = NULL;
    CHECK(clothd_connect(&o, &c, &err) == CLOTHD_OK && clothd_access_granted(c) == CLOTHD_ACCESS_FULL,
          "the token from $CLOTHD_TOKEN: %s", err.message);
    clothd_close(c);
    o.token_from_env = false;
    c = NULL;
    CHECK(clothd_connect(&o, &c, &err) == CLOTHD_OK, "a hello refused before auth: %s", err.message);
    CHECK(clothd_access_granted(c) == CLOTHD_ACCESS_NONE);
    CHECK(clothd_server(c).hello == CLOTHD_HELLO_UNKNOWN && !clothd_has_feature(c, "scenes"),
          "nothing known before auth");
    CHECK(clothd_ping(c, &err) == CLOTHD_E_UNAUTHORIZED, "without token_from_env the variable is not read");
    CHECK(clothd_auth(c, full_token, NULL, &err) == CLOTHD_OK, "%s", err.message);
    CHECK(clothd_server(c).hello == CLOTHD_HELLO_ANSWERED && clothd_has_feature(c, "scenes"),
          "auth asks hello again");
    clothd_close(c);
    /* Features required: a hello refused before auth fails the connect. */
    const char *need[] = {"scenes"};
    o.require = need;
    o.require_count = 1;
    c = NULL;
    CHECK(clothd_connect(&o, &c, &err) == CLOTHD_E_UNAUTHORIZED && c == NULL &&
              strstr(err.message, "needs auth first"),
          "%s: %s", clothd_code_name(err.code), err.message);
    o.require = NULL;
    o.require_count = 0;
    unsetenv(CLOTHD_TOKEN_ENV);

    CHECK(ct_server_stop(&s) == 0);
    remove(full_file);
    remove(read_file);
}

const ct_test ct_auth_tests[] = {
    {"auth: full and read-only tokens, a wrong one, $CLOTHD_TOKEN", tokens_should_grant_full_or_read_only_access, 0},
    {NULL, NULL, 0},
};
