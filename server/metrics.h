/* The server's counters (server/metrics.c): what `stats` and /metrics
 * report and what the log lines say. Every counter is updated on the loop
 * thread only (step timings are taken there too, when a batch starts and
 * finishes), so none needs an atomic. */
#ifndef CLOTHD_SERVER_METRICS_H
#define CLOTHD_SERVER_METRICS_H

#include <stdint.h>

#include "../protocol/protocol.h"

/* Upper bounds of the step-duration histogram, in seconds (one more bucket,
 * +Inf, follows): from a tiny inline step (~20 us) to a stalled one. */
#define CD_STEP_BUCKETS(X) \
    X(0.0001) X(0.00025) X(0.0005) X(0.001) X(0.0025) X(0.005) X(0.01) X(0.025) X(0.05) X(0.1) \
    X(0.25) X(0.5) X(1.0) X(2.5)
#define CD_STEP_BUCKET_ONE(bound) +1
enum { CD_STEP_BUCKET_COUNT = 0 CD_STEP_BUCKETS(CD_STEP_BUCKET_ONE) };
#undef CD_STEP_BUCKET_ONE

/* Steps per second are counted over this many whole seconds. */
#define CD_RATE_SECONDS 10

/* What was written to clients, by kind. */
typedef enum cd_write_kind { CD_WRITE_REPLY, CD_WRITE_EVENT, CD_WRITE_FRAME, CD_WRITE_KINDS } cd_write_kind;

typedef struct cd_metrics {
    uint64_t started_ns;   /* uv_hrtime() at start */
    double started_unix;   /* the wall clock at start, seconds since the epoch */
    uint64_t connections_total;
    uint64_t connections_refused; /* over --max-connections */
    uint64_t requests[CD_CMD_COUNT];   /* lines naming a known command, by command */
    uint64_t errors[CD_STATUS_COUNT];  /* error replies, by cd_status */
    uint64_t steps;                    /* step batches finished */
    uint64_t instance_steps;           /* instances stepped by them */
    uint64_t slow_steps;               /* batches over --slow-step-ms */
    uint64_t budget_steps;             /* batches with a time budget */
    uint64_t budget_overruns;          /* of those, slower than their budget */
    double budget_seconds;             /* their budgets' sum (a plot's budget line: its mean) */
    uint64_t degraded_instance_steps;  /* instances the budget stepped below their level */
    uint64_t step_buckets[CD_STEP_BUCKET_COUNT + 1]; /* per bucket (not cumulative); last: +Inf */
    double step_seconds;               /* their durations' sum */
    uint64_t sent_bytes[CD_WRITE_KINDS]; /* bytes whose write completed */
    uint64_t frames_sent;
    uint64_t frames_skipped; /* replaced in a slow subscriber's slot before being sent */
    uint64_t rate_second[CD_RATE_SECONDS]; /* which second (uv_now() / 1000) each slot counts */
    uint64_t rate_steps[CD_RATE_SECONDS];
    uint64_t slow_logged_at;  /* uv_now() of the last slow-step line; 0: none yet */
    uint64_t slow_unlogged;   /* slow steps since then that had no line */
} cd_metrics;

/* One connection's share, for its close line and the rate limits of its
 * warn lines (at most one line a second per kind and connection). */
/* "255.255.255.255:65535", "[ffff:…:ffff]:65535" and a NUL fit. */
#define CD_ADDR_TEXT_MAX 64

typedef struct cd_conn_stats {
    char peer[CD_ADDR_TEXT_MAX]; /* "127.0.0.1:40312" or "[::1]:40312" */
    uint64_t opened;    /* uv_now() at accept */
    int cmd;            /* the cd_command being run; CD_CMD_COUNT: none */
    uint64_t requests, errors;
    uint64_t frames_sent, frames_skipped, bytes_sent;
    uint64_t skip_logged_at, skip_unlogged;  /* frames-skipped lines */
    uint64_t warn_logged_at, warn_unlogged;  /* limit and unauthorized lines */
} cd_conn_stats;

#endif
