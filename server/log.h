/* clothd's log: one line per event on stderr, in text or JSON.
 *
 *   2026-12-01T10:00:00.123Z info connect peer=127.0.0.1:40312 connections=1
 *   {"time":"2026-12-01T10:00:00.123Z","level":"info","event":"connect","peer":"127.0.0.1:40312","connections":1}
 *
 * A line is an event name (a stable token) and key=value fields; the text
 * form quotes a value that holds a space, a quote, '=' or a control
 * character. Times are ISO-8601 UTC with milliseconds.
 *
 * A line is built in the logger's own buffer and written with one call:
 *
 *   if (cd_log_begin(log, CD_LOG_INFO, "connect")) {
 *       cd_log_str(log, "peer", peer);
 *       cd_log_end(log);
 *   }
 *
 * cd_log_begin returns false when the level is filtered out (nothing else
 * to call then). Not thread-safe: each server's logger is used on its loop
 * thread only. A field that no longer fits the line is left out. */
#ifndef CLOTHD_SERVER_LOG_H
#define CLOTHD_SERVER_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* In the order of the --log-level values (server/options.c). */
typedef enum cd_log_level { CD_LOG_ERROR, CD_LOG_WARN, CD_LOG_INFO, CD_LOG_DEBUG } cd_log_level;
/* In the order of the --log-format values. */
typedef enum cd_log_format { CD_LOG_TEXT, CD_LOG_JSON } cd_log_format;

#define CD_LOG_LINE_MAX 1024

typedef struct cd_log {
    cd_log_level level; /* lines above this level are dropped */
    cd_log_format format;
    FILE *out;
    char line[CD_LOG_LINE_MAX];
    size_t len;
    bool open; /* between begin and end */
} cd_log;

void cd_log_init(cd_log *log, cd_log_level level, cd_log_format format, FILE *out);
bool cd_log_enabled(const cd_log *log, cd_log_level level);
/* Starts a line: its time, level and event. False when the level is off. */
bool cd_log_begin(cd_log *log, cd_log_level level, const char *event);
void cd_log_str(cd_log *log, const char *key, const char *value);
void cd_log_uint(cd_log *log, const char *key, uint64_t value);
/* A number printed with `decimals` digits after the point. */
void cd_log_fixed(cd_log *log, const char *key, double value, int decimals);
/* Ends and writes the line. */
void cd_log_end(cd_log *log);

const char *cd_log_level_name(cd_log_level level);

#endif
