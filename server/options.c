/* Command-line options of clothd: one table row per flag (name, where it
 * goes, its range, its help line), read by the parser and the usage text
 * alike. Defaults live in cd_default_server_options(). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../protocol/protocol.h"
#include "../solver/solver.h"
#include "budget.h"
#include "log.h"
#include "pool.h"
#include "server.h"
#include "shm_ring.h"

#define CD_STR_(x) #x
#define CD_STR(x) CD_STR_(x)
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
        .max_total_particles = 4194304,
        .max_step_work = 8388608,
        .max_line = 1024 * 1024,
        .max_output = 64u * 1024 * 1024,
        .frame_budget = 4u * 1024 * 1024,
        .max_connections = 128,
        .line_timeout = 30,
        .log_level = CD_LOG_INFO,
        .log_format = CD_LOG_TEXT,
        .slow_step_ms = 50,
        .step_budget_ms = 0,
        .step_cost_ps = 0, /* measured */
        .health_port = -1,
        .metrics_port = -1,
        .unix_mode = 0600,
        .shm_mb = CD_SHM_DEFAULT_MB,
    };
    return o;
}

typedef enum flag_kind {
    FLAG_TEXT,   /* char[] of CD_FLAG_TEXT_MAX bytes */
    FLAG_INT,    /* int */
    FLAG_UINT,   /* unsigned */
    FLAG_U32,    /* uint32_t */
    FLAG_SIZE,   /* size_t */
    FLAG_SWITCH, /* bool, takes no value */
    FLAG_CHOICE, /* int: the index of the value in `choices` */
    FLAG_MODE,   /* unsigned: file permissions in octal, [lo, hi] */
} flag_kind;

typedef struct flag_spec {
    const char *name;
    const char *value_name; /* in the usage text */
    flag_kind kind;
    size_t offset;
    size_t size; /* FLAG_TEXT: capacity */
    unsigned long long lo, hi;
    const char *help;
} flag_spec;

#define OPT(member) offsetof(cd_server_options, member)
#define TEXT(member) OPT(member), sizeof(((cd_server_options *)0)->member)

/* The values of each FLAG_CHOICE field, NULL-terminated, in the order of
 * cd_log_level and cd_log_format (server/log.h). */
static const char *const log_levels[] = {"error", "warn", "info", "debug", NULL};
static const char *const log_formats[] = {"text", "json", NULL};
static const struct {
    size_t offset;
    const char *const *values;
} choices[] = {{OPT(log_level), log_levels}, {OPT(log_format), log_formats}};

/* In the order of the usage text. */
static const flag_spec flags[] = {
    {"--bind", "ADDR", FLAG_TEXT, TEXT(bind), 0, 0,
     "address to listen on (default 127.0.0.1; another than loopback needs a token or --insecure)"},
    {"--port", "N", FLAG_INT, OPT(port), 0, 0, 65535, "TCP port, 0 = ephemeral (default 7878)"},
    {"--workers", "N", FLAG_UINT, OPT(workers), 0, 1, CD_POOL_MAX_WORKERS,
     "worker threads (default: number of cores)"},
    {"--max-instances", "N", FLAG_U32, OPT(max_instances), 0, 1, 65535,
     "live instances at most (default 1024, at most 65535)"},
    {"--max-particles", "N", FLAG_U32, OPT(max_particles), 0, 4, CD_MAX_PARTICLES_LIMIT,
     "particles per instance at most (default 262144)"},
    {"--max-total-particles", "N", FLAG_U32, OPT(max_total_particles), 0, 4, UINT32_MAX,
     "particles of all live instances at most (default 4194304)"},
    {"--max-step-work", "N", FLAG_U32, OPT(max_step_work), 0, 1, UINT32_MAX,
     "particles x substeps x iterations of one instance at most (default 8388608)"},
    {"--max-line", "BYTES", FLAG_SIZE, OPT(max_line), 0, 64, CD_MAX_LINE_LIMIT,
     "longest request line (default 1048576)"},
    {"--max-connections", "N", FLAG_U32, OPT(max_connections), 0, 1, 65535,
     "client connections at once; one more is answered limit_exceeded and closed (default 128)"},
    {"--line-timeout", "SECONDS", FLAG_U32, OPT(line_timeout), 0, 1, 86400,
     "a request line must be complete this long after its first byte (default 30)"},
    {"--token-file", "PATH", FLAG_TEXT, TEXT(token_file), 0, 0,
     "every connection must `auth` with the token on this file's first line (or CLOTHD_TOKEN)"},
    {"--readonly-token-file", "PATH", FLAG_TEXT, TEXT(readonly_token_file), 0, 0,
     "a second token that allows only read-only commands (or CLOTHD_READONLY_TOKEN)"},
    {"--insecure", "", FLAG_SWITCH, OPT(insecure), 0, 0, 0,
     "allow a non-loopback --bind without a token"},
    {"--log-level", "LEVEL", FLAG_CHOICE, OPT(log_level), 0, 0, 0,
     "error, warn, info (default: one line per connection) or debug (also each rejected request)"},
    {"--log-format", "FORMAT", FLAG_CHOICE, OPT(log_format), 0, 0, 0,
     "text (default) or json: one object per line on stderr"},
    {"--slow-step-ms", "MS", FLAG_U32, OPT(slow_step_ms), 0, 0, 3600000,
     "log a step slower than this at warn (default 50, 0 = never)"},
    {"--step-budget-ms", "MS", FLAG_U32, OPT(step_budget_ms), 0, 0, CD_STEP_BUDGET_MAX_MS,
     "soft time budget of a step that gives no budgetMs (default 0 = none)"},
    {"--step-cost-ps", "PS", FLAG_U32, OPT(step_cost_ps), 0, 0, 1000000000,
     "a fixed step time per cost unit in picoseconds for the budget's plans, the same choices "
     "on any machine (default 0: measured from the recent steps)"},
    {"--unix", "PATH", FLAG_TEXT, TEXT(unix_path), 0, 0,
     "also listen on a Unix socket at PATH (at most 107 bytes; a stale socket there is replaced)"},
    {"--unix-mode", "OCTAL", FLAG_MODE, OPT(unix_mode), 0, 0, 0777,
     "the Unix socket's permissions (default 600: only clothd's user may connect)"},
    {"--shm-mb", "MIB", FLAG_UINT, OPT(shm_mb), 0, 0, CD_SHM_MAX_MB,
     "the shared-memory frame ring for subscribers on this host, made when one asks (default "
     CD_STR(CD_SHM_DEFAULT_MB) ", 0 = none)"},
    {"--health-port", "N", FLAG_INT, OPT(health_port), 0, 0, 65535,
     "serve HTTP GET /healthz and /readyz on this port (default off, 0 = ephemeral)"},
    {"--metrics-port", "N", FLAG_INT, OPT(metrics_port), 0, 0, 65535,
     "serve HTTP GET /metrics (Prometheus text) on this port (default off; may be the health port)"},
    {"--http-bind", "ADDR", FLAG_TEXT, TEXT(http_bind), 0, 0,
     "address of the health and metrics ports (default: the --bind address)"},
    {"--data-dir", "PATH", FLAG_TEXT, TEXT(data_dir), 0, 0,
     "snapshots' folder: save/load, and the newest valid snapshot is loaded at start"},
    {"--autosave", "SECONDS", FLAG_U32, OPT(autosave), 0, 0, 86400,
     "with --data-dir: save every instance as \"autosave\" this often and on SIGTERM (0 = off)"},
    {"--crash-at", "STAGE", FLAG_TEXT, TEXT(crash_at), 0, 0,
     "testing only: abort during snapshot writes at mid-write, write, fsync or rename"},
};

#define FLAG_COUNT (sizeof flags / sizeof flags[0])

static void print_usage(FILE *out)
{
    fputs("usage: clothd [options]\n", out);
    for (size_t i = 0; i < FLAG_COUNT; i++) {
        char head[64];
        snprintf(head, sizeof head, "%s%s%s", flags[i].name, flags[i].kind == FLAG_SWITCH ? "" : " ",
                 flags[i].kind == FLAG_SWITCH ? "" : flags[i].value_name);
        fprintf(out, "  %-24s %s\n", head, flags[i].help);
    }
    fprintf(out, "  %-24s %s\n", "--help", "this text");
    fprintf(out, "  %-24s %s\n", "--version", "print the version");
}

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

/* Stores `value` into the field of `spec`; false when it does not fit. */
static bool store(const flag_spec *spec, const char *value, cd_server_options *opts)
{
    unsigned char *field = (unsigned char *)opts + spec->offset;
    unsigned long long v = 0;
    switch (spec->kind) {
    case FLAG_TEXT:
        if (value == NULL || strlen(value) >= spec->size)
            return false;
        memcpy(field, value, strlen(value) + 1);
        return true;
    case FLAG_SWITCH:
        *(bool *)field = true;
        return true;
    case FLAG_CHOICE:
        for (size_t c = 0; c < sizeof choices / sizeof choices[0]; c++) {
            if (choices[c].offset != spec->offset)
                continue;
            for (int i = 0; value != NULL && choices[c].values[i] != NULL; i++) {
                if (strcmp(value, choices[c].values[i]) == 0) {
                    *(int *)field = i;
                    return true;
                }
            }
        }
        return false;
    case FLAG_MODE: {
        char *end = NULL;
        if (value == NULL || *value < '0' || *value > '7')
            return false;
        errno = 0;
        v = strtoull(value, &end, 8);
        if (errno != 0 || *end != '\0' || v < spec->lo || v > spec->hi)
            return false;
        *(unsigned *)field = (unsigned)v;
        return true;
    }
    default:
        break;
    }
    if (!parse_uint(value, spec->lo, spec->hi, &v))
        return false;
    if (spec->kind == FLAG_INT)
        *(int *)field = (int)v;
    else if (spec->kind == FLAG_UINT)
        *(unsigned *)field = (unsigned)v;
    else if (spec->kind == FLAG_U32)
        *(uint32_t *)field = (uint32_t)v;
    else
        *(size_t *)field = (size_t)v;
    return true;
}

int cd_server_parse_args(int argc, char **argv, cd_server_options *opts, FILE *out, FILE *err)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_usage(out);
            return 1;
        }
        if (strcmp(arg, "--version") == 0) {
            fprintf(out, "clothd %s (protocol 1)\n", CD_VERSION_STRING);
            return 1;
        }
        const flag_spec *spec = NULL;
        for (size_t k = 0; k < FLAG_COUNT && spec == NULL; k++)
            if (strcmp(arg, flags[k].name) == 0)
                spec = &flags[k];
        if (spec == NULL) {
            fprintf(err, "clothd: unknown option %s\n", arg);
            print_usage(err);
            return 2;
        }
        const char *value = NULL;
        if (spec->kind != FLAG_SWITCH)
            value = i + 1 < argc ? argv[++i] : NULL;
        if (!store(spec, value, opts)) {
            fprintf(err, "clothd: %s: %s value %s\n", arg, value ? "invalid" : "missing",
                    value ? value : "");
            return 2;
        }
    }
    return 0;
}
