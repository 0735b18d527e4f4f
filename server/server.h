/* clothd server — options and the entry point used by main.c.
 *
 * The server owns a libuv loop on the calling thread (accepting TCP and,
 * with --unix, Unix-socket connections, reading
 * requests, writing replies and frames) and a worker pool that steps
 * instances, one job per instance per step. */
#ifndef CLOTHD_SERVER_H
#define CLOTHD_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct cd_server_options {
    char bind[64];          /* IPv4 or IPv6 address to listen on */
    int port;               /* 0 = ephemeral; the chosen port is printed */
    unsigned workers;       /* worker threads */
    uint32_t max_instances; /* live instances at most */
    uint32_t max_particles; /* particles per instance at most */
    uint32_t max_total_particles; /* particles of all live instances at most */
    uint32_t max_step_work; /* particles x substeps x iterations of one instance at most */
    size_t max_line;        /* bytes in one request line at most */
    size_t max_output;      /* replies queued to one client at most; beyond: closed */
    size_t frame_budget;    /* frame bytes in flight to one client before skipping */
    uint32_t max_connections; /* client connections at once; beyond: refused */
    uint32_t line_timeout;    /* seconds a request line may take from its first byte */
    char token_file[4096];          /* the full-access token's file, "" = CLOTHD_TOKEN or none */
    char readonly_token_file[4096]; /* the read-only token's file, "" = CLOTHD_READONLY_TOKEN */
    bool insecure;                  /* serve a non-loopback bind without a token */
    int log_level;          /* cd_log_level (server/log.h): error, warn, info, debug */
    int log_format;         /* cd_log_format: text or json */
    uint32_t slow_step_ms;  /* a step batch slower than this is logged at warn; 0: never */
    uint32_t step_budget_ms; /* a step's soft time budget when it gives no budgetMs; 0: none */
    uint32_t step_cost_ps;   /* a fixed batch wall time per cost unit, picoseconds; 0: measured */
    int health_port;        /* HTTP /healthz and /readyz; -1: off, 0: ephemeral */
    int metrics_port;       /* HTTP /metrics (Prometheus); -1: off; may equal health_port */
    char http_bind[64];     /* address of the HTTP ports; "": the --bind address */
    char data_dir[4096];    /* snapshots' folder; "": save and load are off */
    uint32_t autosave;      /* seconds between autosaves (and one at SIGTERM); 0: off */
    char crash_at[16];      /* tests: abort at this stage of a snapshot write (snapshot_file.c) */
    char unix_path[108];    /* also listen on this Unix socket (sun_path's size); "": no */
    unsigned unix_mode;     /* the socket file's permissions (default 0600) */
    unsigned shm_mb;        /* the shared-memory frame ring's MiB; 0: none */
} cd_server_options;

cd_server_options cd_default_server_options(void);

/* Parses the command line. Returns 0 to run, 1 when --help or --version was
 * printed to `out` (exit 0), 2 on a usage error printed to `err` (exit 2). */
int cd_server_parse_args(int argc, char **argv, cd_server_options *opts, FILE *out, FILE *err);

/* Runs until SIGINT or SIGTERM; returns the process exit code. */
int cd_server_run(const cd_server_options *opts);

#endif
