/* Error codes: their names (the wire's, generated in clothd/codes.h, and the
 * client's own), filling a clothd_error, and reading a reply's error. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

static const struct {
    clothd_code code;
    const char *name;
} names[] = {
    {CLOTHD_OK, "ok"},
#define CDC_WIRE_NAME(name, value, wire, text) {CLOTHD_E_##name, wire},
    CLOTHD_WIRE_CODES(CDC_WIRE_NAME)
#undef CDC_WIRE_NAME
    {CLOTHD_E_IO, "io"},
    {CLOTHD_E_CLOSED, "closed"},
    {CLOTHD_E_TIMEOUT, "timeout"},
    {CLOTHD_E_PROTOCOL, "protocol"},
    {CLOTHD_E_NOMEM, "nomem"},
    {CLOTHD_E_USAGE, "usage"},
    {CLOTHD_E_UNKNOWN, "unknown"},
    {CLOTHD_E_INCOMPATIBLE, "incompatible"},
};

const char *clothd_code_name(clothd_code code)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].code == code)
            return names[i].name;
    return "unknown";
}

clothd_code clothd_code_from_name(const char *name)
{
    for (size_t i = 0; name != NULL && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i].name, name) == 0)
            return names[i].code;
    return CLOTHD_E_UNKNOWN;
}

/* Keeps a message on one line: the framing of whatever prints it is safe. */
static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r')
            *s = ' ';
}

clothd_code cdc_fail(clothd_error *err, clothd_code code, const char *fmt, ...)
{
    if (err == NULL)
        return code;
    memset(err, 0, sizeof *err);
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    one_line(err->message);
    return code;
}

void cdc_ok(clothd_error *err)
{
    if (err != NULL) {
        err->code = CLOTHD_OK;
        err->reconnecting = false;
        err->wire_code[0] = '\0';
        err->message[0] = '\0';
    }
}

clothd_code cdc_reply_error(const cdc_jdoc *d, int root, clothd_error *err)
{
    int e = cdc_jget(d, root, "error");
    char wire[32] = "";
    if (!cdc_jstr_copy(d, cdc_jget(d, e, "code"), wire, sizeof wire, NULL))
        return cdc_fail(err, CLOTHD_E_PROTOCOL, "error reply without a string \"code\"");
    clothd_code code = clothd_code_from_name(wire);
    if (code == CLOTHD_OK || code >= CLOTHD_E_IO)
        code = CLOTHD_E_UNKNOWN; /* "ok" or a client-side name is never the server's */
    if (err == NULL)
        return code;
    memset(err, 0, sizeof *err);
    err->code = code;
    memcpy(err->wire_code, wire, sizeof wire);
    if (!cdc_jstr_copy(d, cdc_jget(d, e, "message"), err->message, sizeof err->message, NULL))
        err->message[0] = '\0';
    one_line(err->message);
    return code;
}
