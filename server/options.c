/* Command-line options of clothd. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../solver/solver.h"
#include "pool.h"
#include "server.h"

#define CD_MAX_LINE_LIMIT (256u * 1024u * 1024u)
#define CD_MAX_PARTICLES_LIMIT (16u * 1024u * 1024u)

static unsigned core_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > CD_POOL_MAX_WORKERS ? CD_POOL_MAX_WORKERS : (unsigned)n;
}

cd_server_options cd_default_server_options(void)
{
    cd_server_options o = {
        .bind = "127.0.0.1",
        .port = 7878,
        .workers = core_count(),
        .max_instances = 1024,
        .max_particles = 262144,
        .max_line = 1024 * 1024,
        .max_output = 64u * 1024 * 1024,
        .frame_budget = 4u * 1024 * 1024,
    };
    return o;
}

static const char usage_text[] =
    "usage: clothd [options]\n"
    "  --bind ADDR           address to listen on (default 127.0.0.1)\n"
    "  --port N              TCP port, 0 = ephemeral (default 7878)\n"
    "  --workers N           worker threads (default: number of cores)\n"
    "  --max-instances N     live instances at most (default 1024, at most 65535)\n"
    "  --max-particles N     particles per instance at most (default 262144)\n"
    "  --max-line BYTES      longest request line (default 1048576)\n"
    "  --help                this text\n"
    "  --version             print the version\n";

/* Parses a whole decimal number in [lo, hi]. */
static bool parse_uint(const char *text, unsigned long long lo, unsigned long long hi,
                       unsigned long long *out)
{
    if (text == NULL || *text == '\0' || *text == '-')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

int cd_server_parse_args(int argc, char **argv, cd_server_options *opts, FILE *out, FILE *err)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long long v = 0;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(usage_text, out);
            return 1;
        }
        if (strcmp(arg, "--version") == 0) {
            fprintf(out, "clothd %s (protocol 1)\n", CD_VERSION_STRING);
            return 1;
        }
        if (strcmp(arg, "--bind") == 0) {
            if (value == NULL || strlen(value) >= sizeof opts->bind)
                goto bad_value;
            strcpy(opts->bind, value);
        } else if (strcmp(arg, "--port") == 0) {
            if (!parse_uint(value, 0, 65535, &v))
                goto bad_value;
            opts->port = (int)v;
        } else if (strcmp(arg, "--workers") == 0) {
            if (!parse_uint(value, 1, CD_POOL_MAX_WORKERS, &v))
                goto bad_value;
            opts->workers = (unsigned)v;
        } else if (strcmp(arg, "--max-instances") == 0) {
            if (!parse_uint(value, 1, 65535, &v))
                goto bad_value;
            opts->max_instances = (uint32_t)v;
        } else if (strcmp(arg, "--max-particles") == 0) {
            if (!parse_uint(value, 4, CD_MAX_PARTICLES_LIMIT, &v))
                goto bad_value;
            opts->max_particles = (uint32_t)v;
        } else if (strcmp(arg, "--max-line") == 0) {
            if (!parse_uint(value, 64, CD_MAX_LINE_LIMIT, &v))
                goto bad_value;
            opts->max_line = (size_t)v;
        } else {
            fprintf(err, "clothd: unknown option %s\n%s", arg, usage_text);
            return 2;
        }
        i++; /* consumed the value */
        continue;
    bad_value:
        fprintf(err, "clothd: %s: %s value %s\n", arg, value ? "invalid" : "missing",
                value ? value : "");
        return 2;
    }
    return 0;
}
