/* The examples, built by the Makefile and run here against the shared
 * server with their output asserted: the C game loop (a cape on a walking
 * capsule at 60 Hz), the same loop built from `pkg-config clothd` alone,
 * the C++ RAII wrapper, the C# P/Invoke snippet under mono, and the
 * skinned cape on a walking character with its --check. An example
 * that is not built in this configuration (the ASan run has no C#) is
 * reported as skipped. And the READMEs' C sessions (the shared-memory
 * subscriber's too), compiled as they are written (only the port changed)
 * and run against their own server, which they must leave with no
 * instance. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool example(const char *name, char *path, size_t cap)
{
    const char *dir = getenv("CLOTHD_C_EXAMPLES");
    snprintf(path, cap, "%s/%s", dir ? dir : ".", name);
    if (access(path, F_OK) != 0) {
        printf("     (skipped: %s is not built in this configuration)\n", name);
        return false;
    }
    return true;
}

static const char *line_with(const char *out, const char *prefix)
{
    const char *p = strstr(out, prefix);
    return p ? p : "";
}

static void check_cape(const char *bin, const char *flags, int ticks_wanted)
{
    char cmd[1200], out[4096];
    snprintf(cmd, sizeof cmd, "%s --port %u %s", bin, (unsigned)ct_main_server.port, flags);
    int rc = ct_run(cmd, out, sizeof out);
    REQUIRE(rc == 0, "%s exited %d:\n%s", cmd, rc, out);
    int ticks = 0, acked = 0, late = -1, inside = -1;
    unsigned long long frames = 0, last = 0;
    float trail = -1, low = -1, closest = -1, radius = 0;
    CHECK(sscanf(line_with(out, "ticks:"), "ticks: %d at %*[^,], steps acknowledged: %d, late replies: %d", &ticks,
                 &acked, &late) == 3, "%s", out);
    CHECK(sscanf(line_with(out, "frames received:"), "frames received: %llu, last frame: %llu", &frames, &last) == 2);
    CHECK(sscanf(line_with(out, "cape trails"), "cape trails the capsule by %f", &trail) == 1);
    CHECK(sscanf(line_with(out, "cape lowest point:"), "cape lowest point: y=%f", &low) == 1);
    CHECK(sscanf(line_with(out, "closest to the body"), "closest to the body's axis: %f m (radius %f); "
                 "particle-ticks inside the body: %d", &closest, &radius, &inside) == 3);
    CHECK(ticks == ticks_wanted && acked == ticks, "every step acknowledged: %d of %d", acked, ticks);
    CHECK(last == (unsigned long long)ticks, "the last frame is the last step's (%llu)", last);
    CHECK(frames >= (unsigned long long)ticks * 9 / 10, "frames arrive as the steps go (%llu of %d)", frames, ticks);
    CHECK(trail > 0.2f && trail < 0.7f, "the cape trails behind the walking body: %.3f m", (double)trail);
    CHECK(low > 0.55f && low < 1.0f, "it hangs from the shoulders (1.45) about its length (0.75): lowest %.3f",
          (double)low);
    CHECK(inside == 0 && closest >= radius - 0.02f, "it never enters the body: closest %.3f", (double)closest);
    CHECK(strstr(out, "errors of ticketless requests: 0\n") != NULL, "every queued move was accepted");
    const char *trails = line_with(out, "cape trails");
    printf("     %.*s\n", (int)strcspn(trails, "\n"), trails);
}

static void the_cape_game_loop_should_run_at_60_hz(void)
{
    char bin[1024];
    if (example("cape", bin, sizeof bin))
        check_cape(bin, "--seconds 2", 120);
}

static void the_pkg_config_build_should_run_too(void)
{
    char bin[1024];
    if (example("cape-pkgconfig", bin, sizeof bin))
        check_cape(bin, "--seconds 1.5 --fast", 90);
}

static void the_cpp_wrapper_should_work(void)
{
    char bin[1024], cmd[1200], out[4096];
    if (!example("raii", bin, sizeof bin))
        return;
    snprintf(cmd, sizeof cmd, "%s --port %u", bin, (unsigned)ct_main_server.port);
    int rc = ct_run(cmd, out, sizeof out);
    REQUIRE(rc == 0, "%s exited %d:\n%s", cmd, rc, out);
    CHECK(strstr(out, "frame 120, 100 particles\n") != NULL, "%s", out);
    float top = 0, bottom = 0;
    CHECK(sscanf(line_with(out, "top row"), "top row y=%f, bottom row mean y=%f", &top, &bottom) == 2);
    CHECK(top == 2.0f && bottom > 1.0f && bottom < 1.15f, "the curtain hangs 0.9 m: top %.3f bottom %.3f",
          (double)top, (double)bottom);
    CHECK(strstr(out, "after destroy: caught not_found: instance: no instance") != NULL, "%s", out);
}

static void the_csharp_snippet_should_work(void)
{
    char exe[1024], cmd[2400], out[4096];
    if (!example("ClothdExample.exe", exe, sizeof exe))
        return;
    const char *libdir = getenv("CLOTHD_C_LIBDIR");
    snprintf(cmd, sizeof cmd, "LD_LIBRARY_PATH=%s mono %s --port %u 2>&1", libdir ? libdir : ".", exe,
             (unsigned)ct_main_server.port);
    int rc = ct_run(cmd, out, sizeof out);
    REQUIRE(rc == 0, "%s exited %d:\n%s", cmd, rc, out);
    CHECK(strstr(out, ": 64 particles, 306 constraints\n") != NULL, "%s", out);
    CHECK(strstr(out, "pinned 8\n") != NULL);
    CHECK(strstr(out, "frame 60, time 1.000, 64 particles, 8 pinned, gravity -9.81\n") != NULL, "%s", out);
    float top = 0, bottom = 0;
    CHECK(sscanf(line_with(out, "top row"), "top row y=%f, bottom row mean y=%f", &top, &bottom) == 2);
    CHECK(top == 2.0f && bottom > 1.2f && bottom < 1.4f, "top %.3f bottom %.3f", (double)top, (double)bottom);
    CHECK(strstr(out, "after destroy: not_found: instance: no instance") != NULL && strstr(out, "(NotFound)"),
          "%s", out);
}

/* The skinned cape on a walking character (8 capsules on 4 transforms, a
 * binary skin each frame) for 2 s with --check: it exits 1 when a particle
 * sank > 5 mm into the body or strayed > 1 cm beyond its reach. */
static void the_walking_cape_should_stay_out_of_the_body(void)
{
    char bin[1024], cmd[1200], out[4096];
    if (!example("walking_cape", bin, sizeof bin))
        return;
    snprintf(cmd, sizeof cmd, "%s --port %u --seconds 2 --check", bin, (unsigned)ct_main_server.port);
    int rc = ct_run(cmd, out, sizeof out);
    REQUIRE(rc == 0, "%s exited %d:\n%s", cmd, rc, out);
    unsigned verts = 0, tris = 0;
    int frames = 0, errors = -1;
    float depth = -1, stray = -1, hem = -1;
    CHECK(sscanf(line_with(out, "t= 2.0s"), "t= 2.0s  deepest in the body %*f m  beyond reach %*f m  hem %f", &hem) == 1,
          "%s", out);
    const char *summary = line_with(out, " vertices, ");
    while (summary > out && summary[-1] != '\n')
        summary--; /* the summary line starts with the vertex count */
    CHECK(sscanf(summary, "%u vertices, %u triangles, %d frames; worst: %f m inside the body, %f m beyond reach; "
                 "errors of queued requests: %d", &verts, &tris, &frames, &depth, &stray, &errors) == 6, "%s", out);
    CHECK(verts == 30 * 24 - 12 && tris == 2 * 29 * 23 - 2 * 15, "the sheet less its neck: %u vertices, %u triangles",
          verts, tris);
    CHECK(frames == 120 && errors == 0, "120 frames, every queued transform and skin accepted (%d errors)", errors);
    CHECK(depth >= 0 && depth <= 0.005f && stray >= 0 && stray <= 0.01f, "depth %.4f, stray %.4f", (double)depth,
          (double)stray);
    CHECK(hem > 0.05f && hem < 0.5f, "the hem swings off its skinned place, within its 0.5 m reach: %.3f m",
          (double)hem);
    printf("     %.*s\n", (int)strcspn(summary, "\n"), summary);
}

/* The first ```c block after `heading` in the repository file `file`, with
 * `anchor` replaced by `replacement` (the anchor must be there), wrapped in
 * main() when `wrap`; NULL (a failure recorded) when something is missing. */
static char *readme_snippet(const char *file, const char *heading, const char *anchor, const char *replacement,
                            bool wrap)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ct_repo(), file);
    char *text = ct_read_file(path, NULL);
    const char *at = text ? strstr(text, heading) : NULL;
    const char *start = at ? strstr(at, "```c\n") : NULL;
    const char *end = start ? strstr(start + 5, "```") : NULL;
    const char *hit = end ? strstr(start, anchor) : NULL;
    if (hit == NULL || hit > end) {
        ct_fail(__FILE__, __LINE__, "readme_snippet", "%s: no ```c block with \"%s\" after \"%s\"", file, anchor,
                heading);
        free(text);
        return NULL;
    }
    start += 5;
    size_t size = (size_t)(end - start) + strlen(replacement) + 64;
    char *code = malloc(size);
    if (code != NULL) {
        /* A fragment's first line is its #include; the rest goes into main(). */
        const char *body = wrap ? strchr(start, '\n') + 1 : start;
        snprintf(code, size, "%.*s%s%.*s%s%.*s%s", (int)(body - start), start, wrap ? "int main(void)\n{\n" : "",
                 (int)(hit - body), body, replacement, (int)(end - hit - strlen(anchor)), hit + strlen(anchor),
                 wrap ? "return 0;\n}\n" : "");
    }
    free(text);
    return code;
}

/* Compiles `code` against the library, runs it against the server on
 * `port` (its stdout in out), and checks that it left no instance and no
 * scene behind (an ephemeral one goes when its connection closes). */
static void run_snippet(const char *what, const char *code, uint16_t port, char *out, size_t cap)
{
    char src[512], cmd[2400];
    REQUIRE(code != NULL);
    REQUIRE(ct_write_temp(code, src, sizeof src));
    const char *libdir = getenv("CLOTHD_C_LIBDIR");
    snprintf(cmd, sizeof cmd, "cc -std=c11 -DPORT=%u -I%s/clients/c/include -x c %s -x none %s/libclothd.a -lm -o %s.bin 2>&1",
             (unsigned)port, ct_repo(), src, libdir ? libdir : ".", src);
    int rc = ct_run(cmd, out, cap);
    CHECK(rc == 0, "%s does not compile:\n%s\n%s", what, out, code);
    if (rc == 0) {
        snprintf(cmd, sizeof cmd, "%s.bin", src);
        rc = ct_run(cmd, out, cap);
        CHECK(rc == 0, "%s exited %d:\n%s", what, rc, out);
        remove(cmd);
    }
    remove(src);
    clothd_client *c = ct_connect(port, NULL);
    REQUIRE(c != NULL);
    clothd_status st = {0};
    clothd_error err;
    size_t scenes = 1;
    int64_t until = ct_now_ms() + 3000;
    do {
        clothd_status_free(&st);
        if (clothd_get_status(c, &st, &err) != CLOTHD_OK || clothd_scenes(c, NULL, NULL, &scenes, &err) != CLOTHD_OK)
            break;
        if (st.instance_count == 0 && scenes == 0)
            break;
        ct_sleep_ms(20);
    } while (ct_now_ms() < until);
    CHECK(st.instance_count == 0 && scenes == 0, "%s left %zu instances, %zu scenes", what, st.instance_count, scenes);
    clothd_status_free(&st);
    clothd_close(c);
}

static void the_readme_c_sessions_should_leave_nothing_behind(void)
{
    ct_server s;
    REQUIRE(ct_server_start(&s, NULL, 0));
    char out[4096];
    char *code = readme_snippet("clients/c/README.md", "## A session", "clothd_options opt = clothd_options_default();",
                                "clothd_options opt = clothd_options_default(); opt.port = PORT;", false);
    run_snippet("clients/c/README.md's session", code, s.port, out, sizeof out);
    CHECK(strstr(out, "frame 180, bottom-left y = ") != NULL, "%s", out);
    free(code);
    code = readme_snippet("README.md", "## From C and C++", "clothd_connect(NULL, &c, &err);",
                          "clothd_options o_ = clothd_options_default(); o_.port = PORT; clothd_connect(&o_, &c, &err);",
                          true);
    run_snippet("README.md's C session", code, s.port, out, sizeof out);
    free(code);
    code = readme_snippet("clients/c/README.md", "## Frames through shared memory",
                          "o.unix_path = \"/run/clothd/clothd.sock\";", "o.port = PORT;", false);
    run_snippet("clients/c/README.md's shared-memory session", code, s.port, out, sizeof out);
    CHECK(strcmp(out, "missed: 0\n") == 0, "%s", out);
    free(code);
    CHECK(ct_server_stop(&s) == 0);
}

const ct_test ct_example_tests[] = {
    {"examples: the walking cape (skinned mesh, 8 capsules, binary skin) --check", the_walking_cape_should_stay_out_of_the_body, 60},
    {"examples: the C game loop (a cape on a walking capsule, 60 Hz)", the_cape_game_loop_should_run_at_60_hz, 20},
    {"examples: the game loop built with pkg-config", the_pkg_config_build_should_run_too, 20},
    {"examples: the C++ RAII wrapper", the_cpp_wrapper_should_work, 0},
    {"examples: the C# P/Invoke snippet under mono", the_csharp_snippet_should_work, 0},
    {"examples: the READMEs' C sessions leave nothing behind", the_readme_c_sessions_should_leave_nothing_behind, 30},
    {NULL, NULL, 0},
};
