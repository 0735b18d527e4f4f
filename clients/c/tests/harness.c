/* The runner and its helpers (harness.h): the test tables, the watchdog,
 * starting and stopping the real clothd, a cutting proxy, fake servers. */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

bool ct_failed;
ct_server ct_main_server;
static const char *current_test = "?";
static void on_watchdog(int sig);

/* Every server started, so that a watchdog can take them down with the run. */
#define MAX_PIDS 64
static volatile pid_t started[MAX_PIDS];

void ct_set_current(const char *name)
{
    current_test = name;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_watchdog;
    sigaction(SIGALRM, &sa, NULL);
}

void ct_fail(const char *file, int line, const char *what, const char *fmt, ...)
{
    ct_failed = true;
    fprintf(stderr, "  FAIL %s (%s:%d): %s ", current_test, file, line, what);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int64_t ct_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ct_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

const char *ct_repo(void)
{
    const char *r = getenv("CLOTHD_REPO");
    return r ? r : ".";
}

static void remember_pid(pid_t pid, bool add)
{
    for (int i = 0; i < MAX_PIDS; i++) {
        if (add && started[i] == 0) {
            started[i] = pid;
            return;
        }
        if (!add && started[i] == pid) {
            started[i] = 0;
            return;
        }
    }
}

static void on_watchdog(int sig)
{
    (void)sig;
    static const char msg[] = "  FAIL: the test hung (watchdog); stopping its servers\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    for (int i = 0; i < MAX_PIDS; i++)
        if (started[i] > 0)
            kill(started[i], SIGKILL);
    _exit(3);
}

/* ---- the server ---- */

static void *drain(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {
    }
    close(fd);
    return NULL;
}

static bool server_start(ct_server *s, const char *const *args, uint16_t port_wanted);

bool ct_server_start(ct_server *s, const char *const *args, uint16_t port_wanted)
{
    memset(s, 0, sizeof *s);
    return server_start(s, args, port_wanted);
}

bool ct_server_start_unix(ct_server *s, const char *const *args)
{
    memset(s, 0, sizeof *s);
    snprintf(s->unix_dir, sizeof s->unix_dir, "/tmp/clothd-c-XXXXXX");
    if (mkdtemp(s->unix_dir) == NULL) {
        fprintf(stderr, "  mkdtemp %s: %s\n", s->unix_dir, strerror(errno));
        s->unix_dir[0] = '\0';
        return false;
    }
    snprintf(s->unix_path, sizeof s->unix_path, "%s/clothd.sock", s->unix_dir);
    return server_start(s, args, 0);
}

bool ct_server_start_unix_at(ct_server *s, const char *path, const char *const *args)
{
    memset(s, 0, sizeof *s);
    snprintf(s->unix_path, sizeof s->unix_path, "%s", path);
    return server_start(s, args, 0);
}

/* The socket file (if the server could not remove it) and its folder. */
static void remove_unix_dir(ct_server *s)
{
    if (s->unix_dir[0] == '\0')
        return;
    unlink(s->unix_path);
    rmdir(s->unix_dir);
    s->unix_dir[0] = '\0';
}

static bool server_start(ct_server *s, const char *const *args, uint16_t port_wanted)
{
    static int serial;
    const char *bin = getenv("CLOTHD_BIN");
    if (bin == NULL)
        bin = "build/clothd";
    const char *logs = getenv("CLOTHD_C_LOGS");
    snprintf(s->log, sizeof s->log, "%s/server-%d-%d.log", logs ? logs : "/tmp", (int)getpid(), serial++);
    char port[8];
    snprintf(port, sizeof port, "%u", (unsigned)port_wanted);
    const char *argv[32] = {bin, "--port", port, "--workers", "2"};
    int n = 5;
    if (s->unix_path[0] != '\0') {
        argv[n++] = "--unix";
        argv[n++] = s->unix_path;
    }
    for (int i = 0; args != NULL && args[i] != NULL && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    int out[2];
    if (pipe(out) != 0)
        return false;
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        dup2(out[1], 1);
        int log = open(s->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (log >= 0)
            dup2(log, 2);
        close(out[0]);
        close(out[1]);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    s->pid = pid;
    remember_pid(pid, true);
    /* The banner, and with --unix the line after it. */
    char line[512];
    size_t len = 0;
    int lines_wanted = s->unix_path[0] != '\0' ? 2 : 1;
    int64_t deadline = ct_now_ms() + 10000;
    while (len < sizeof line - 1) {
        int lines = 0;
        for (size_t i = 0; i < len; i++)
            lines += line[i] == '\n';
        if (lines >= lines_wanted)
            break;
        struct pollfd pfd = {out[0], POLLIN, 0};
        int left = (int)(deadline - ct_now_ms());
        if (left <= 0 || poll(&pfd, 1, left) <= 0)
            break;
        ssize_t k = read(out[0], line + len, sizeof line - 1 - len);
        if (k <= 0)
            break;
        len += (size_t)k;
    }
    line[len] = '\0';
    char first[256]; /* the banner: its last colon is the port's */
    snprintf(first, sizeof first, "%.*s", (int)strcspn(line, "\n"), line);
    const char *at = strstr(first, " listening on ");
    const char *colon = at ? strrchr(at, ':') : NULL;
    unsigned p = colon ? (unsigned)strtoul(colon + 1, NULL, 10) : 0;
    if (p == 0) {
        fprintf(stderr, "  clothd gave no banner (got \"%s\"); its stderr is in %s\n", line, s->log);
        close(out[0]);
        ct_server_kill(s);
        return false;
    }
    s->port = (uint16_t)p;
    if (s->unix_path[0] != '\0') {
        char expected[160];
        snprintf(expected, sizeof expected, "\nclothd listening on unix:%s\n", s->unix_path);
        if (strstr(line, expected) == NULL) {
            fprintf(stderr, "  clothd did not say it listens on unix:%s (got \"%s\"); its stderr is in %s\n",
                    s->unix_path, line, s->log);
            close(out[0]);
            ct_server_kill(s);
            return false;
        }
    }
    pthread_t t;
    if (pthread_create(&t, NULL, drain, (void *)(intptr_t)out[0]) == 0)
        pthread_detach(t);
    else
        close(out[0]);
    return true;
}

int ct_server_stop(ct_server *s)
{
    if (s->pid <= 0)
        return -1;
    kill(s->pid, SIGTERM);
    int status = 0;
    int64_t deadline = ct_now_ms() + 5000;
    pid_t r;
    while ((r = waitpid(s->pid, &status, WNOHANG)) == 0 && ct_now_ms() < deadline)
        ct_sleep_ms(10);
    if (r == 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, &status, 0);
        remember_pid(s->pid, false);
        s->pid = 0;
        remove_unix_dir(s);
        return -1;
    }
    remember_pid(s->pid, false);
    s->pid = 0;
    remove_unix_dir(s);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void ct_server_kill(ct_server *s)
{
    if (s->pid <= 0)
        return;
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    remember_pid(s->pid, false);
    s->pid = 0;
    remove_unix_dir(s);
}

clothd_client *ct_connect_with(const clothd_options *o)
{
    clothd_client *c = NULL;
    clothd_error err;
    if (clothd_connect(o, &c, &err) != CLOTHD_OK)
        ct_fail(__FILE__, __LINE__, "connect", "to port %u: %s: %s", (unsigned)o->port, clothd_code_name(err.code),
                err.message);
    return c;
}

clothd_client *ct_connect(uint16_t port, const char *token)
{
    clothd_options o = clothd_options_default();
    o.port = port ? port : ct_main_server.port;
    o.token = token;
    return ct_connect_with(&o);
}

bool ct_write_temp(const char *text, char *path, size_t cap)
{
    const char *dir = getenv("CLOTHD_C_LOGS");
    snprintf(path, cap, "%s/tmp-XXXXXX", dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0)
        return false;
    size_t n = strlen(text);
    bool ok = write(fd, text, n) == (ssize_t)n;
    close(fd);
    return ok;
}

char *ct_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *text = NULL;
    size_t n = 0, cap = 0, k;
    do {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            char *p = realloc(text, cap);
            if (p == NULL) {
                free(text);
                fclose(f);
                return NULL;
            }
            text = p;
        }
        k = fread(text + n, 1, cap - 1 - n, f);
        n += k;
    } while (k > 0);
    fclose(f);
    text[n] = '\0';
    if (size != NULL)
        *size = n;
    return text;
}

int ct_run(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    size_t len = 0, k;
    while (len < cap - 1 && (k = fread(out + len, 1, cap - 1 - len, p)) > 0)
        len += k;
    out[len] = '\0';
    char sink[1024];
    while (fread(sink, 1, sizeof sink, p) > 0) {
    }
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ---- listening sockets ---- */

static int listen_any(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

static int connect_local(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* ---- the proxy ---- */

#define PROXY_PAIRS 16

struct ct_proxy {
    int listen_fd;
    uint16_t port, upstream;
    int wake[2];
    pthread_t thread;
    pthread_mutex_t lock;
    bool cut, stop;
    int pairs[PROXY_PAIRS][2]; /* client, upstream; -1 when free */
};

static void close_pair(ct_proxy *p, int i)
{
    for (int k = 0; k < 2; k++)
        if (p->pairs[i][k] >= 0) {
            close(p->pairs[i][k]);
            p->pairs[i][k] = -1;
        }
}

static void *proxy_main(void *arg)
{
    ct_proxy *p = arg;
    char buf[65536];
    for (;;) {
        pthread_mutex_lock(&p->lock);
        bool stop = p->stop, cut = p->cut;
        p->cut = false;
        pthread_mutex_unlock(&p->lock);
        if (cut || stop)
            for (int i = 0; i < PROXY_PAIRS; i++)
                close_pair(p, i);
        if (stop)
            return NULL;
        struct pollfd pfd[2 + 2 * PROXY_PAIRS];
        int n = 0;
        pfd[n++] = (struct pollfd){p->listen_fd, POLLIN, 0};
        pfd[n++] = (struct pollfd){p->wake[0], POLLIN, 0};
        for (int i = 0; i < PROXY_PAIRS; i++)
            for (int k = 0; k < 2; k++)
                pfd[n++] = (struct pollfd){p->pairs[i][k], POLLIN, 0};
        if (poll(pfd, (nfds_t)n, 1000) <= 0)
            continue;
        if (pfd[1].revents) {
            char x[16];
            ssize_t r = read(p->wake[0], x, sizeof x);
            (void)r;
        }
        if (pfd[0].revents & POLLIN) {
            int c = accept(p->listen_fd, NULL, NULL);
            int u = c >= 0 ? connect_local(p->upstream) : -1;
            int slot = -1;
            for (int i = 0; i < PROXY_PAIRS && slot < 0; i++)
                if (p->pairs[i][0] < 0)
                    slot = i;
            if (c >= 0 && u >= 0 && slot >= 0) {
                p->pairs[slot][0] = c;
                p->pairs[slot][1] = u;
            } else {
                if (c >= 0)
                    close(c);
                if (u >= 0)
                    close(u);
            }
        }
        for (int i = 0; i < PROXY_PAIRS; i++) {
            for (int k = 0; k < 2; k++) {
                struct pollfd *q = &pfd[2 + 2 * i + k];
                if (q->fd < 0 || !(q->revents & (POLLIN | POLLHUP | POLLERR)))
                    continue;
                ssize_t r = read(q->fd, buf, sizeof buf);
                if (r <= 0 || p->pairs[i][1 - k] < 0) {
                    close_pair(p, i);
                    break;
                }
                size_t off = 0;
                while (off < (size_t)r) {
                    ssize_t w = write(p->pairs[i][1 - k], buf + off, (size_t)r - off);
                    if (w <= 0)
                        break;
                    off += (size_t)w;
                }
            }
        }
    }
}

ct_proxy *ct_proxy_start(uint16_t upstream_port)
{
    ct_proxy *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    for (int i = 0; i < PROXY_PAIRS; i++)
        p->pairs[i][0] = p->pairs[i][1] = -1;
    p->upstream = upstream_port;
    p->listen_fd = listen_any(&p->port);
    if (p->listen_fd < 0 || pipe(p->wake) != 0) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_create(&p->thread, NULL, proxy_main, p);
    return p;
}

uint16_t ct_proxy_port(const ct_proxy *p) { return p->port; }

static void proxy_poke(ct_proxy *p)
{
    ssize_t w = write(p->wake[1], "x", 1);
    (void)w;
}

void ct_proxy_cut(ct_proxy *p)
{
    pthread_mutex_lock(&p->lock);
    p->cut = true;
    pthread_mutex_unlock(&p->lock);
    proxy_poke(p);
}

void ct_proxy_stop(ct_proxy *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_mutex_unlock(&p->lock);
    proxy_poke(p);
    pthread_join(p->thread, NULL);
    close(p->listen_fd);
    close(p->wake[0]);
    close(p->wake[1]);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* ---- fake servers ---- */

struct ct_fake {
    int listen_fd;
    uint16_t port;
    int wake[2];
    pthread_t thread;
    const void *reply;
    size_t len;
    bool close_after;
    char seen[16384]; /* every byte read from the client (NUL-terminated) */
    size_t nseen;
};

/* Reads what `c` has now into f->seen; false at EOF or an error. */
static bool fake_take(ct_fake *f, int c)
{
    if (f->nseen + 1 >= sizeof f->seen)
        return false;
    ssize_t r = read(c, f->seen + f->nseen, sizeof f->seen - 1 - f->nseen);
    if (r <= 0)
        return false;
    f->nseen += (size_t)r;
    f->seen[f->nseen] = '\0';
    return true;
}

static void *fake_main(void *arg)
{
    ct_fake *f = arg;
    struct pollfd pfd[2] = {{f->listen_fd, POLLIN, 0}, {f->wake[0], POLLIN, 0}};
    if (poll(pfd, 2, 15000) <= 0 || !(pfd[0].revents & POLLIN))
        return NULL;
    int c = accept(f->listen_fd, NULL, NULL);
    if (c < 0)
        return NULL;
    while (memchr(f->seen, '\n', f->nseen) == NULL) { /* one request line */
        struct pollfd q[2] = {{c, POLLIN, 0}, {f->wake[0], POLLIN, 0}};
        if (poll(q, 2, 15000) <= 0 || q[1].revents || !fake_take(f, c))
            break;
    }
    if (f->reply != NULL && f->len > 0) {
        ssize_t w = write(c, f->reply, f->len);
        (void)w;
    }
    if (!f->close_after) { /* stay silent until stopped, keeping what comes */
        bool open = true;
        for (;;) {
            struct pollfd q[2] = {{c, open ? POLLIN : 0, 0}, {f->wake[0], POLLIN, 0}};
            if (poll(q, 2, 15000) <= 0 || q[1].revents)
                break;
            if (q[0].revents)
                open = fake_take(f, c);
        }
        struct pollfd q = {c, POLLIN, 0};
        while (open && poll(&q, 1, 0) > 0 && fake_take(f, c)) /* what came just before the stop */
            ;
    }
    close(c);
    return NULL;
}

ct_fake *ct_fake_start(const void *reply, size_t len, bool close_after)
{
    ct_fake *f = calloc(1, sizeof *f);
    if (f == NULL)
        return NULL;
    f->listen_fd = listen_any(&f->port);
    if (f->listen_fd < 0 || pipe(f->wake) != 0) {
        free(f);
        return NULL;
    }
    f->reply = reply;
    f->len = len;
    f->close_after = close_after;
    pthread_create(&f->thread, NULL, fake_main, f);
    return f;
}

uint16_t ct_fake_port(const ct_fake *f) { return f->port; }

void ct_fake_stop(ct_fake *f)
{
    ct_fake_stop_seen(f, NULL, 0);
}

void ct_fake_stop_seen(ct_fake *f, char *seen, size_t cap)
{
    if (seen != NULL && cap > 0)
        seen[0] = '\0';
    if (f == NULL)
        return;
    ssize_t w = write(f->wake[1], "x", 1);
    (void)w;
    pthread_join(f->thread, NULL);
    if (seen != NULL && cap > 0)
        snprintf(seen, cap, "%s", f->seen);
    close(f->listen_fd);
    close(f->wake[0]);
    close(f->wake[1]);
    free(f);
}

/* ---- a clothd from before the handshake ---- */

struct ct_old {
    int listen_fd;
    uint16_t port;
    int wake[2];
    pthread_t thread;
    pthread_mutex_t lock;
    char seen[16384]; /* every line read (NUL-terminated) */
    size_t nseen;
};

/* The reply to one request line (`n` bytes, no newline) into out. */
static void old_reply(const char *line, size_t n, char *out, size_t cap)
{
    char text[1024];
    snprintf(text, sizeof text, "%.*s", (int)(n < sizeof text ? n : sizeof text - 1), line);
    const char *id = strstr(text, "\"id\":");
    long v = id != NULL ? strtol(id + 5, NULL, 10) : 0;
    if (strstr(text, "\"cmd\":\"hello\"") != NULL)
        snprintf(out, cap, "{\"id\":%ld,\"ok\":false,\"error\":{\"code\":\"unknown_command\","
                 "\"message\":\"unknown command \\\"hello\\\"\"}}\n", v);
    else if (strstr(text, "\"cmd\":\"ping\"") != NULL)
        snprintf(out, cap, "{\"id\":%ld,\"ok\":true,\"pong\":true}\n", v);
    else if (strstr(text, "\"cmd\":\"create\"") != NULL)
        snprintf(out, cap, "{\"id\":%ld,\"ok\":true,\"instance\":1,\"particles\":4,\"constraints\":5}\n", v);
    else if (strstr(text, "\"cmd\":\"step\"") != NULL)
        snprintf(out, cap, "{\"id\":%ld,\"ok\":true,\"stepped\":0}\n", v);
    else
        snprintf(out, cap, "{\"id\":%ld,\"ok\":true}\n", v);
}

static void *old_main(void *arg)
{
    ct_old *o = arg;
    for (;;) {
        struct pollfd pfd[2] = {{o->listen_fd, POLLIN, 0}, {o->wake[0], POLLIN, 0}};
        if (poll(pfd, 2, 15000) <= 0 || pfd[1].revents || !(pfd[0].revents & POLLIN))
            return NULL;
        int c = accept(o->listen_fd, NULL, NULL);
        if (c < 0)
            return NULL;
        char buf[8192];
        size_t have = 0;
        for (;;) {
            struct pollfd q[2] = {{c, POLLIN, 0}, {o->wake[0], POLLIN, 0}};
            if (poll(q, 2, 15000) <= 0 || q[1].revents) {
                close(c);
                return NULL;
            }
            ssize_t r = read(c, buf + have, sizeof buf - 1 - have);
            if (r <= 0)
                break;
            have += (size_t)r;
            char *nl;
            while ((nl = memchr(buf, '\n', have)) != NULL) {
                size_t n = (size_t)(nl - buf);
                pthread_mutex_lock(&o->lock);
                if (o->nseen + n + 2 < sizeof o->seen) {
                    memcpy(o->seen + o->nseen, buf, n + 1);
                    o->nseen += n + 1;
                    o->seen[o->nseen] = '\0';
                }
                pthread_mutex_unlock(&o->lock);
                char out[512];
                old_reply(buf, n, out, sizeof out);
                ssize_t w = write(c, out, strlen(out));
                (void)w;
                have -= n + 1;
                memmove(buf, nl + 1, have);
            }
            if (have == sizeof buf - 1)
                break; /* a line longer than it reads: give up on this connection */
        }
        close(c);
    }
}

ct_old *ct_old_start(void)
{
    ct_old *o = calloc(1, sizeof *o);
    if (o == NULL)
        return NULL;
    o->listen_fd = listen_any(&o->port);
    if (o->listen_fd < 0 || pipe(o->wake) != 0) {
        free(o);
        return NULL;
    }
    pthread_mutex_init(&o->lock, NULL);
    pthread_create(&o->thread, NULL, old_main, o);
    return o;
}

uint16_t ct_old_port(const ct_old *o) { return o->port; }

void ct_old_seen(ct_old *o, char *seen, size_t cap)
{
    pthread_mutex_lock(&o->lock);
    snprintf(seen, cap, "%s", o->seen);
    pthread_mutex_unlock(&o->lock);
}

void ct_old_stop(ct_old *o)
{
    if (o == NULL)
        return;
    ssize_t w = write(o->wake[1], "x", 1);
    (void)w;
    pthread_join(o->thread, NULL);
    pthread_mutex_destroy(&o->lock);
    close(o->listen_fd);
    close(o->wake[0]);
    close(o->wake[1]);
    free(o);
}
