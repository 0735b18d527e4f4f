/* What the C client's bench programs share: CPU time, a median, and a
 * clothd of their own on an ephemeral port. Header-only (static inline),
 * since each bench is one file built on its own (client.mk). */
#ifndef CLOTHD_C_BENCH_UTIL_H
#define CLOTHD_C_BENCH_UTIL_H

#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

extern char **environ;

/* This process's CPU time, user and system, in seconds. */
static inline double bench_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0, n) (sorts v). */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Starts `clothd` (2 workers, an ephemeral port, and with `unix_path` not
 * NULL a Unix socket there); its TCP port from the banner, 0 on failure.
 * The pipe stays open: the server writes only its banner lines there. */
static inline uint16_t bench_start_server(const char *clothd, const char *unix_path, pid_t *pid)
{
    int fd[2];
    if (pipe(fd) != 0)
        return 0;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", 0, 0);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    char *argv[] = {(char *)clothd, "--port", "0", "--workers", "2",
                    unix_path ? "--unix" : NULL, (char *)unix_path, NULL};
    int rc = posix_spawn(pid, clothd, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    if (rc != 0)
        return 0;
    FILE *f = fdopen(fd[0], "r");
    unsigned port = 0;
    char line[256];
    for (int i = 0; f != NULL && i < (unix_path ? 2 : 1) && fgets(line, sizeof line, f) != NULL; i++) {
        const char *p = strstr(line, "listening on ");
        const char *colon = p && strncmp(p + 13, "unix:", 5) != 0 ? strrchr(p, ':') : NULL;
        if (colon != NULL)
            port = (unsigned)atoi(colon + 1);
    }
    return (uint16_t)port;
}

#endif
