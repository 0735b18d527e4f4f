/* clothd — the one list of status codes.
 *
 * The same codes appear in the solver's return values, in the protocol's
 * error replies ("code" is the wire name below) and in every client.
 * The solver itself only ever returns a subset (invalid_argument, not_found,
 * limit_exceeded, internal); the rest belong to the wire. */
#ifndef CLOTHD_ERRORS_H
#define CLOTHD_ERRORS_H

/* X(ENUM_SUFFIX, wire_name, default message) */
#define CD_STATUS_MAP(X)                                                        \
    X(PARSE_ERROR,      "parse_error",      "the line is not a JSON object")    \
    X(UNKNOWN_COMMAND,  "unknown_command",  "unknown command")                 \
    X(INVALID_ARGUMENT, "invalid_argument", "invalid argument")                \
    X(NOT_FOUND,        "not_found",        "no such object")                  \
    X(LIMIT_EXCEEDED,   "limit_exceeded",   "a configured limit was exceeded") \
    X(LINE_TOO_LONG,    "line_too_long",    "request line exceeds the limit")  \
    X(INTERNAL,         "internal",         "internal error")                  \
    X(UNAUTHORIZED,     "unauthorized",     "not allowed for this connection")

typedef enum cd_status {
    CD_OK = 0,
#define CD_STATUS_ENUM(name, wire, msg) CD_E_##name,
    CD_STATUS_MAP(CD_STATUS_ENUM)
#undef CD_STATUS_ENUM
    CD_STATUS_COUNT
} cd_status;

/* Wire name of a status ("ok" for CD_OK, "internal" for anything unknown). */
const char *cd_status_name(cd_status status);
/* A short human description of a status. */
const char *cd_status_message(cd_status status);

#endif
