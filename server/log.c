/* The log line writer (see log.h): text for people, JSON for collectors,
 * the same fields in both. Every line is built in a fixed buffer and
 * written with one fwrite, so lines never interleave and logging never
 * allocates. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "log.h"

/* Room kept for what ends a line ("}\n" in JSON). */
#define CD_LOG_RESERVE 3

static const char *const level_names[] = {"error", "warn", "info", "debug"};

const char *cd_log_level_name(cd_log_level level)
{
    return (unsigned)level <= CD_LOG_DEBUG ? level_names[level] : "info";
}

void cd_log_init(cd_log *log, cd_log_level level, cd_log_format format, FILE *out)
{
    memset(log, 0, sizeof *log);
    log->level = level;
    log->format = format;
    log->out = out;
}

bool cd_log_enabled(const cd_log *log, cd_log_level level)
{
    return log != NULL && log->out != NULL && level <= log->level;
}

/* Appends n bytes when they fit (keeping the reserve); false otherwise. */
static bool put(cd_log *log, const char *text, size_t n)
{
    if (log->len + n + CD_LOG_RESERVE > sizeof log->line)
        return false;
    memcpy(log->line + log->len, text, n);
    log->len += n;
    return true;
}

static bool put_str(cd_log *log, const char *text)
{
    return put(log, text, strlen(text));
}

/* A JSON string body: quotes, backslashes and control bytes escaped. */
static bool put_json_escaped(cd_log *log, const char *value)
{
    for (const unsigned char *p = (const unsigned char *)value; *p != '\0'; p++) {
        char esc[8];
        size_t n = 0;
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            n = 2;
        } else if (*p < 0x20 || *p == 0x7f) {
            n = (size_t)snprintf(esc, sizeof esc, "\\u%04x", *p);
        } else {
            esc[0] = (char)*p;
            n = 1;
        }
        if (!put(log, esc, n))
            return false;
    }
    return true;
}

/* Does a text-form value need quotes? */
static bool needs_quotes(const char *value)
{
    if (*value == '\0')
        return true;
    for (const unsigned char *p = (const unsigned char *)value; *p != '\0'; p++)
        if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || *p == 0x7f)
            return true;
    return false;
}

/* ' key=' (text) or ',"key":' (JSON). */
static bool put_key(cd_log *log, const char *key)
{
    if (log->format == CD_LOG_JSON)
        return put(log, ",\"", 2) && put_str(log, key) && put(log, "\":", 2);
    return put(log, " ", 1) && put_str(log, key) && put(log, "=", 1);
}

/* Adds one field, or leaves the line as it was when it does not fit. */
static void field(cd_log *log, const char *key, const char *value, bool quoted)
{
    if (!log->open)
        return;
    const size_t before = log->len;
    bool ok = put_key(log, key);
    if (ok && quoted && (log->format == CD_LOG_JSON || needs_quotes(value)))
        ok = put(log, "\"", 1) && put_json_escaped(log, value) && put(log, "\"", 1);
    else if (ok)
        ok = put_str(log, value);
    if (!ok)
        log->len = before;
}

bool cd_log_begin(cd_log *log, cd_log_level level, const char *event)
{
    if (!cd_log_enabled(log, level))
        return false;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    char stamp[40];
    size_t n = strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(stamp + n, sizeof stamp - n, ".%03ldZ", now.tv_nsec / 1000000);
    log->len = 0;
    log->open = true;
    const char *name = cd_log_level_name(level);
    if (log->format == CD_LOG_JSON) {
        put_str(log, "{\"time\":\"");
        put_str(log, stamp);
        put_str(log, "\",\"level\":\"");
        put_str(log, name);
        put_str(log, "\",\"event\":\"");
        put_json_escaped(log, event);
        put_str(log, "\"");
    } else {
        put_str(log, stamp);
        put_str(log, " ");
        put_str(log, name);
        put_str(log, " ");
        put_str(log, event);
    }
    return true;
}

void cd_log_str(cd_log *log, const char *key, const char *value)
{
    field(log, key, value != NULL ? value : "", true);
}

void cd_log_uint(cd_log *log, const char *key, uint64_t value)
{
    char text[24];
    snprintf(text, sizeof text, "%llu", (unsigned long long)value);
    field(log, key, text, false);
}

void cd_log_fixed(cd_log *log, const char *key, double value, int decimals)
{
    char text[48];
    if (!isfinite(value))
        value = 0.0;
    snprintf(text, sizeof text, "%.*f", decimals, value);
    field(log, key, text, false);
}

void cd_log_end(cd_log *log)
{
    if (!log->open)
        return;
    log->open = false;
    /* The reserve guarantees room for the end. */
    if (log->format == CD_LOG_JSON)
        log->line[log->len++] = '}';
    log->line[log->len++] = '\n';
    fwrite(log->line, 1, log->len, log->out);
    fflush(log->out);
}
