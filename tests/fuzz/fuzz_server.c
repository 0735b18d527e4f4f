/* libFuzzer target: the real clothd (parser, dispatcher, world, worker pool)
 * on its own libuv loop in this process, fed through a real TCP connection.
 *
 * For every input:
 *   1. a fresh server starts on a thread (cd_server_parse_args +
 *      cd_server_run, the same entry points as main.c) on a loopback port,
 *      so ids start at 1 and no state leaks from one input to the next;
 *   2. the input is split into lines; each is sent, and its reply read back
 *      (frames and event lines in between are read and checked too). A line
 *      that starts with '@' goes to a second connection, sent before the
 *      first connection's pending reply is read: commands of two clients
 *      race each other (a destroy against a multi-instance step). Every
 *      reply must be exactly one line of valid JSON (cJSON), an object with
 *      a boolean "ok", an "error" {code, message} when ok is false, and the
 *      request's own "id" when it has one. A line that starts with 0x89 is
 *      a binary request (PROTOCOL.md "Binary requests"): it is sent as the
 *      server frames it, by the length in its header (its bytes may hold
 *      '\n'), its reply must carry the header's request id, and after a
 *      bad magic, like after line_too_long, the server closes;
 *   3. a second connection reads `status`, then `get`s every instance: an
 *      instance that is not reported unstable must hold only finite numbers
 *      (JSON cannot carry NaN: a NaN would show as null or as bad JSON);
 *   4. SIGTERM (handled by the server's own libuv signal watcher) stops the
 *      server, which must return 0; everything it allocated is freed by
 *      then, so libFuzzer's per-input leak check sees real leaks only.
 *
 * A violated check aborts with a message naming it: libFuzzer then reports
 * a crash and saves the input. Server flags keep each input cheap:
 * --max-particles 4096, --max-instances 16, --max-line 2048, and
 * --log-level error (no connect and close lines for every input). */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "../../server/server.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
    REPLY_TIMEOUT_MS = 50000, /* below run_fuzz.py's -timeout=60 */
    MAX_LINE = 2048,          /* the server's --max-line (start_server) */
    MAX_MESSAGE = 64 << 20,
};

static _Noreturn void finding(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void stopped_from_outside(void);

static _Noreturn void finding(const char *fmt, ...)
{
    stopped_from_outside();
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "\nfuzz_server: FINDING: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

/* ---- the server on a thread ---------------------------------------------- */

typedef struct server_thread {
    pthread_t thread;
    cd_server_options opts;
    atomic_int exited; /* cd_server_run returned */
    int exit_code;
} server_thread;

static void *server_main(void *arg)
{
    server_thread *st = arg;
    st->exit_code = cd_server_run(&st->opts);
    atomic_store(&st->exited, 1);
    return NULL;
}

/* A loopback port that was free a moment ago (the server binds it next; if
 * another process takes it first, the start is retried). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        finding("harness: no free loopback port: %s", strerror(errno));
    close(fd);
    return ntohs(a.sin_port);
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        finding("harness: socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void sleep_us(long us)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = us * 1000};
    nanosleep(&ts, NULL);
}

/* Starts a server and returns a connection to it (the first client). */
static int start_server(server_thread *st)
{
    for (int attempt = 0; attempt < 20; attempt++) {
        char port[16];
        snprintf(port, sizeof port, "%d", free_port());
        char *args[] = {"clothd", "--bind", "127.0.0.1", "--port", port, "--workers", "2",
                        "--max-instances", "16", "--max-particles", "4096", "--max-line", "2048", /* MAX_LINE */
                        "--log-level", "error", NULL};
        memset(st, 0, sizeof *st);
        st->opts = cd_default_server_options();
        if (cd_server_parse_args((int)(sizeof args / sizeof *args) - 1, args, &st->opts, stderr,
                                 stderr) != 0)
            finding("harness: the server refused its flags");
        if (pthread_create(&st->thread, NULL, server_main, st) != 0)
            finding("harness: pthread_create: %s", strerror(errno));
        for (int wait = 0; wait < 20000; wait++) {
            if (atomic_load(&st->exited))
                break; /* port taken meanwhile: retry with another */
            int fd = connect_to(atoi(port));
            if (fd >= 0)
                return fd;
            sleep_us(50);
        }
        pthread_join(st->thread, NULL);
        if (!atomic_load(&st->exited))
            finding("harness: the server did not start listening within 1 s");
    }
    finding("harness: the server could not start 20 times in a row");
}

/* Signals. The server's libuv watchers take SIGINT and SIGTERM over when
 * it starts (and reset them to SIG_DFL when it stops), while libFuzzer's
 * own handlers print its statistics and exit. So once the server answers,
 * libFuzzer's handlers are put back: Ctrl-C or a SIGTERM from outside stop
 * the fuzzer as usual. To stop the server the harness gives SIGTERM back to
 * libuv for one kill(). */
static struct sigaction fuzzer_int, fuzzer_term, uv_term;
static bool fuzzer_handlers_saved;

static void give_signals_to_fuzzer(void)
{
    sigaction(SIGINT, &fuzzer_int, NULL);
    sigaction(SIGTERM, &fuzzer_term, NULL);
}

/* After the server answered a request (its watchers are installed). */
static void take_signals_from_server(void)
{
    sigaction(SIGTERM, NULL, &uv_term);
    give_signals_to_fuzzer();
}

/* The server of the current input, and whether the harness is stopping it. */
static server_thread *current;
static bool stopping;

/* Called before a finding is reported: the server stopped cleanly (exit
 * code 0) without the harness asking, i.e. a SIGINT or SIGTERM from
 * outside reached libuv's watchers before the harness had given the signals
 * back to libFuzzer (while the server starts). That is the user stopping the
 * fuzzer, not a finding: hand the interrupt to libFuzzer, which prints its
 * statistics and exits. */
static void stopped_from_outside(void)
{
    if (current == NULL || stopping || !atomic_load(&current->exited) || current->exit_code != 0)
        return;
    if (!fuzzer_handlers_saved)
        return;
    fprintf(stderr, "\nfuzz_server: the server was stopped by a signal from outside\n");
    give_signals_to_fuzzer();
    raise(SIGINT);
    _exit(130); /* only when libFuzzer's handler did not exit */
}

/* The server's own SIGTERM watcher stops it; its exit code must be 0. */
static void stop_server(server_thread *st)
{
    stopping = true;
    if (atomic_load(&st->exited))
        finding("the server stopped by itself (exit code %d)", st->exit_code);
    sigaction(SIGTERM, &uv_term, NULL);
    kill(getpid(), SIGTERM);
    pthread_join(st->thread, NULL);
    give_signals_to_fuzzer();
    if (st->exit_code != 0)
        finding("the server returned %d after SIGTERM", st->exit_code);
}

/* ---- reading what the server sends --------------------------------------- */

typedef struct reader {
    int fd;
    char *buf;
    size_t len, cap;
    bool eof;
    unsigned long frames, events;
} reader;

/* Reads more bytes; false at EOF or after the timeout. */
static bool fill(reader *r)
{
    if (r->cap - r->len < 65536) {
        r->cap = r->cap ? r->cap * 2 : 1 << 17;
        if (r->cap > (size_t)MAX_MESSAGE * 2)
            finding("more than %d MiB unread from the server", MAX_MESSAGE * 2 >> 20);
        r->buf = realloc(r->buf, r->cap);
        if (r->buf == NULL)
            finding("harness: out of memory");
    }
    struct pollfd p = {.fd = r->fd, .events = POLLIN};
    int n = poll(&p, 1, REPLY_TIMEOUT_MS);
    if (n == 0)
        finding("no reply within %d ms", REPLY_TIMEOUT_MS);
    ssize_t got = recv(r->fd, r->buf + r->len, r->cap - r->len, 0);
    if (got <= 0) {
        r->eof = true;
        return false;
    }
    r->len += (size_t)got;
    return true;
}

static void consume(reader *r, size_t n)
{
    memmove(r->buf, r->buf + n, r->len - n);
    r->len -= n;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Checks one binary frame at the start of the buffer and drops it. */
static bool take_frame(reader *r)
{
    while (r->len < 40)
        if (!fill(r))
            return false;
    const unsigned char *h = (const unsigned char *)r->buf;
    if (memcmp(h, "\x89" "CLF", 4) != 0)
        finding("a frame without its magic");
    unsigned version = h[4] | h[5] << 8, flags = h[6] | h[7] << 8;
    uint32_t length = le32(h + 8), count = le32(h + 32);
    /* PROTOCOL.md's length rule, written here from the document: positions,
     * then velocities (bit 1), then normals (bit 2). */
    const uint64_t xyz = (flags & 1) ? 24 + 6ull * count : 12ull * count;
    uint64_t want = 40 + xyz + ((flags & 2) ? xyz : 0) + ((flags & 4) ? ((flags & 1) ? 4ull : 12ull) * count : 0);
    if (flags & 8) /* a reference to a frame in shared memory ("shm"): 56 bytes */
        want = 56;
    if (version != 1 || (flags & ~15u) != 0 || length != want)
        finding("a bad frame header: version %u, flags %u, length %u for %u particles", version,
                flags, length, count);
    if (length > MAX_MESSAGE)
        finding("a frame of %u bytes", length);
    while (r->len < length)
        if (!fill(r))
            return false;
    consume(r, length);
    r->frames++;
    return true;
}

/* The next JSON line that is not an event (events are checked and skipped),
 * parsed; NULL at EOF. */
static cJSON *read_reply(reader *r)
{
    for (;;) {
        while (r->len == 0)
            if (!fill(r))
                return NULL;
        unsigned char first = (unsigned char)r->buf[0];
        if (first == 0x89) {
            if (!take_frame(r))
                return NULL;
            continue;
        }
        if (first != '{')
            finding("a message starting with byte 0x%02x (neither '{' nor a frame)", first);
        char *nl;
        size_t scanned = 0;
        while ((nl = memchr(r->buf + scanned, '\n', r->len - scanned)) == NULL) {
            scanned = r->len;
            if (!fill(r))
                finding("EOF inside a reply line");
        }
        size_t n = (size_t)(nl - r->buf);
        const char *end = NULL;
        cJSON *msg = cJSON_ParseWithLengthOpts(r->buf, n, &end, false);
        if (msg == NULL || end != r->buf + n)
            finding("a reply line that is not one JSON value: %.300s", r->buf);
        if (!cJSON_IsObject(msg))
            finding("a reply line that is not an object: %.300s", r->buf);
        consume(r, n + 1);
        if (cJSON_GetObjectItemCaseSensitive(msg, "event") != NULL) {
            if (cJSON_GetObjectItemCaseSensitive(msg, "ok") != NULL)
                finding("an event line with \"ok\"");
            r->events++;
            cJSON_Delete(msg);
            continue;
        }
        return msg;
    }
}

/* ---- checks on replies ---------------------------------------------------- */

static bool is_blank(const char *line, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
            return false;
    return true;
}

static bool valid_code(const char *code)
{
    if (code[0] == '\0')
        return false;
    for (const char *c = code; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || *c == '_'))
            return false;
    return true;
}

static const unsigned char binary_magic[4] = {0x89, 'C', 'L', 'R'};

static bool is_binary(const char *msg, size_t len)
{
    return len > 0 && (unsigned char)msg[0] == 0x89;
}

/* A binary request's reply has "id" = the header's request id, or none when
 * it is 0 or the message was refused before its header was read (a bad
 * magic; a length out of range, sent as its header alone). */
static void check_binary_id(const cJSON *rid, const char *msg, size_t len)
{
    const unsigned char *h = (const unsigned char *)msg;
    bool framed = len >= 32 && memcmp(h, binary_magic, 4) == 0 && le32(h + 8) == len;
    uint32_t want = framed ? le32(h + 20) : 0;
    if (want == 0 ? rid != NULL : !(cJSON_IsNumber(rid) && rid->valuedouble == (double)want))
        finding("a binary request's reply does not carry its id %u", (unsigned)want);
}

/* Returns the error code (or NULL for ok:true). */
static const char *check_reply(const cJSON *reply, const char *line, size_t len)
{
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(reply, "ok");
    if (!cJSON_IsBool(ok))
        finding("a reply without a boolean \"ok\" to %.*s", (int)(len > 300 ? 300 : len), line);
    const char *code = NULL;
    if (cJSON_IsFalse(ok)) {
        const cJSON *err = cJSON_GetObjectItemCaseSensitive(reply, "error");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(err, "code");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(err, "message");
        if (!cJSON_IsString(c) || !cJSON_IsString(m) || !valid_code(c->valuestring) ||
            m->valuestring[0] == '\0')
            finding("an error reply without a code and a message to %.*s",
                    (int)(len > 300 ? 300 : len), line);
        code = c->valuestring;
    }
    /* An id in the reply is the request's own: same type, same value. */
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(reply, "id");
    if (is_binary(line, len)) {
        check_binary_id(rid, line, len);
    } else if (rid != NULL) {
        cJSON *req = cJSON_ParseWithLength(line, len);
        const cJSON *qid = cJSON_GetObjectItemCaseSensitive(req, "id");
        bool same = qid != NULL &&
                    ((cJSON_IsNumber(qid) && cJSON_IsNumber(rid) &&
                      (qid->valuedouble == rid->valuedouble ||
                       fabs(qid->valuedouble - rid->valuedouble) <=
                           1e-15 * fabs(qid->valuedouble))) ||
                     (cJSON_IsString(qid) && cJSON_IsString(rid) &&
                      strcmp(qid->valuestring, rid->valuestring) == 0));
        if (!same)
            finding("a reply's id is not the request's: %.*s", (int)(len > 300 ? 300 : len), line);
        cJSON_Delete(req);
    }
    return code;
}

static void send_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* the server closed; the reader finds out */
        data += n;
        len -= (size_t)n;
    }
}

/* The reply to `line`, ok or not (the caller judges). */
static cJSON *try_request(reader *r, const char *line)
{
    send_all(r->fd, line, strlen(line));
    cJSON *reply = read_reply(r);
    if (reply == NULL)
        finding("the server closed the check connection after %s", line);
    return reply;
}

static bool reply_ok(const cJSON *reply)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"));
}

static cJSON *request(reader *r, const char *line)
{
    cJSON *reply = try_request(r, line);
    if (!reply_ok(reply))
        finding("check request failed: %s", line);
    return reply;
}

/* True when the scene named `scene` is listed as ephemeral in status's
 * `scenes`. */
static bool scene_ephemeral(const cJSON *status, const cJSON *scene)
{
    const cJSON *scenes = cJSON_GetObjectItemCaseSensitive(status, "scenes");
    if (!cJSON_IsString(scene) || !cJSON_IsArray(scenes))
        return false;
    for (const cJSON *s = scenes->child; s != NULL; s = s->next) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(s, "scene");
        if (cJSON_IsString(name) && strcmp(name->valuestring, scene->valuestring) == 0)
            return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "ephemeral"));
    }
    return false;
}

static bool finite_numbers(const cJSON *item)
{
    if (cJSON_IsNumber(item))
        return isfinite(item->valuedouble);
    if (cJSON_IsArray(item)) {
        for (const cJSON *e = item->child; e != NULL; e = e->next)
            if (!finite_numbers(e))
                return false;
        return true;
    }
    return false;
}

/* Every instance not reported unstable holds finite positions. */
static void check_world(int port)
{
    int fd = connect_to(port);
    if (fd < 0)
        finding("cannot open the check connection");
    reader r = {.fd = fd};
    cJSON *status = request(&r, "{\"cmd\":\"status\"}\n");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(status, "instances");
    if (!cJSON_IsArray(list))
        finding("status without an instances list");
    for (const cJSON *e = list->child; e != NULL; e = e->next) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "instance");
        if (!cJSON_IsNumber(id))
            finding("status lists an instance without an id");
        char line[96];
        snprintf(line, sizeof line, "{\"cmd\":\"get\",\"instance\":%.0f}\n", id->valuedouble);
        cJSON *got = try_request(&r, line);
        if (!reply_ok(got)) {
            /* An ephemeral instance, or one of an ephemeral scene, goes
             * when the server handles its owner's close, which may come
             * between status and this get (the input's connections were
             * closed just before the check). */
            const cJSON *error = cJSON_GetObjectItemCaseSensitive(got, "error");
            const cJSON *code = cJSON_GetObjectItemCaseSensitive(error, "code");
            const bool may_go =
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "ephemeral")) ||
                scene_ephemeral(status, cJSON_GetObjectItemCaseSensitive(e, "scene"));
            if (!may_go || !cJSON_IsString(code) || strcmp(code->valuestring, "not_found") != 0)
                finding("check request failed: %s", line);
            cJSON_Delete(got);
            continue;
        }
        bool unstable = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(got, "unstable"));
        const char *fields[] = {"positions", "time", "wind", "gravity"};
        for (size_t i = 0; i < sizeof fields / sizeof *fields && !unstable; i++) {
            const cJSON *f = cJSON_GetObjectItemCaseSensitive(got, fields[i]);
            if (f != NULL && !finite_numbers(f))
                finding("instance %.0f is not unstable but its %s holds a non-number (NaN?)",
                        id->valuedouble, fields[i]);
        }
        cJSON_Delete(got);
    }
    cJSON_Delete(status);
    close(fd);
    free(r.buf);
}

/* ---- libFuzzer entry points ---------------------------------------------- */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* The server prints its banner on stdout at every start. */
    if (freopen("/dev/null", "w", stdout) == NULL)
        finding("harness: cannot silence stdout");
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

/* One client connection of an input: its reader and the request lines
 * still waiting for their replies (replies come in request order). */
typedef struct client {
    reader r;
    bool open;
    char **pending;
    size_t *pending_len;
    size_t head, tail;
} client;

static void client_open(client *c, int fd, size_t max_lines)
{
    memset(c, 0, sizeof *c);
    c->r.fd = fd;
    c->open = true;
    c->pending = calloc(max_lines + 1, sizeof *c->pending);
    c->pending_len = calloc(max_lines + 1, sizeof *c->pending_len);
    if (c->pending == NULL || c->pending_len == NULL)
        finding("harness: out of memory");
}

/* Reads the reply to every line sent on `c` so far. */
static void client_drain(client *c)
{
    while (c->head < c->tail) {
        const char *line = c->pending[c->head];
        size_t len = c->pending_len[c->head];
        cJSON *reply = read_reply(&c->r);
        if (reply == NULL)
            finding("the server closed the connection without a reply to %.*s",
                    (int)(len > 300 ? 300 : len), line);
        c->head++;
        const char *code = check_reply(reply, line, len);
        /* A binary request with a bad magic is parse_error, and the server
         * closes after it as after line_too_long (PROTOCOL.md "Binary
         * requests"). */
        const bool closes = code != NULL && (strcmp(code, "line_too_long") == 0 ||
                                             (is_binary(line, len) && strcmp(code, "parse_error") == 0));
        if (closes) {
            /* The server closes after this reply: nothing else may come. */
            while (!c->r.eof) {
                if (read_reply(&c->r) != NULL)
                    finding("a reply after %s", code);
            }
            c->head = c->tail; /* later lines get no reply */
            c->open = false;
        }
        cJSON_Delete(reply);
    }
}

static void client_close(client *c)
{
    if (c->r.fd >= 0)
        close(c->r.fd);
    free(c->pending);
    free(c->pending_len);
    free(c->r.buf);
}

/* Lines go to connection A; a line that starts with '@' goes (without the
 * '@') to a second connection B. After sending a line the harness reads
 * its reply at once, unless the next line goes to the other connection:
 * then that line is sent while the first is still being served (a step on
 * A, a destroy on B: the race of issue 9, item 1). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    server_thread st;
    if (!fuzzer_handlers_saved) { /* libFuzzer's, installed after Initialize */
        sigaction(SIGINT, NULL, &fuzzer_int);
        sigaction(SIGTERM, NULL, &fuzzer_term);
        fuzzer_handlers_saved = true;
    }
    int fd = start_server(&st);
    int port = st.opts.port;
    current = &st;
    stopping = false;
    {
        /* One answered request: the server's loop runs, its watchers are set. */
        int probe = connect_to(port);
        if (probe < 0)
            finding("cannot open a second connection to the server");
        reader pr = {.fd = probe};
        cJSON_Delete(request(&pr, "{\"cmd\":\"status\"}\n"));
        close(probe);
        free(pr.buf);
        take_signals_from_server();
    }
    size_t max_lines = 1; /* requests: at most one per '\n' or binary message */
    for (size_t i = 0; i < size; i++)
        max_lines += data[i] == '\n' || data[i] == 0x89;
    client clients[2];
    client_open(&clients[0], fd, max_lines);
    client_open(&clients[1], -1, max_lines);
    char *copy = malloc(size + 1);
    if (copy == NULL)
        finding("harness: out of memory");
    memcpy(copy, data, size);

    size_t pos = 0;
    while (pos < size) {
        char *line = copy + pos;
        char *nl = memchr(line, '\n', size - pos);
        size_t len = nl ? (size_t)(nl - line) : size - pos;
        pos += len + 1;
        client *c = &clients[0];
        if (len > 0 && line[0] == '@') {
            c = &clients[1];
            line++;
            len--;
            if (c->r.fd < 0 && (c->r.fd = connect_to(port)) < 0)
                finding("cannot open the second connection");
        }
        if (!c->open)
            continue;
        if (is_binary(line, len) && len >= 4 && memcmp(line, binary_magic, 4) == 0) {
            /* The server frames it by its header, not by lines. */
            size_t rest = size - (size_t)(line - copy);
            uint32_t length = rest >= 32 ? le32((const unsigned char *)line + 8) : 0;
            bool refused = rest >= 32 && (length < 32 || length > MAX_LINE); /* line_too_long on the header */
            if (!refused && (rest < 32 || length > rest)) {
                send_all(c->r.fd, line, rest); /* incomplete: the server waits, no reply */
                pos = size;
                continue;
            }
            size_t n = refused ? 32 : length;
            send_all(c->r.fd, line, n);
            pos = (size_t)(line - copy) + n;
            c->pending[c->tail] = line;
            c->pending_len[c->tail] = n;
            c->tail++;
            bool next_other = pos < size && (copy[pos] == '@') != (c == &clients[1]);
            if (!next_other)
                client_drain(c);
            continue;
        }
        char save = line[len];
        line[len] = '\n';
        send_all(c->r.fd, line, len + 1);
        line[len] = save;
        if (!is_blank(line, len)) {
            c->pending[c->tail] = line;
            c->pending_len[c->tail] = len;
            c->tail++;
        }
        /* Wait for the replies unless the next line is for the other one. */
        bool next_other = false;
        if (pos < size) {
            bool next_b = copy[pos] == '@';
            next_other = next_b != (c == &clients[1]);
        }
        if (!next_other)
            client_drain(c);
    }
    client_drain(&clients[0]);
    client_drain(&clients[1]);
    client_close(&clients[0]);
    client_close(&clients[1]);
    check_world(port);
    stop_server(&st);
    current = NULL;
    free(copy);
    return 0;
}
