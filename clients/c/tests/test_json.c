/* The library's own JSON reader and writer: strict where the wire is strict
 * (a reader that accepted what the server never sends would hide a broken
 * stream), bounded nesting, escapes and UTF-8 both ways, and numbers read
 * and written in the C format whatever the locale. */
#include "harness.h"

#include <locale.h>
#include <math.h>
#include <string.h>

#include "buf.h"
#include "json_read.h"
#include "json_write.h"

static bool parses(const char *text)
{
    cdc_jdoc d = {0};
    char msg[160];
    bool ok = cdc_jparse(&d, text, strlen(text), msg, sizeof msg);
    cdc_jdoc_free(&d);
    return ok;
}

static void reader_should_accept_what_the_server_sends(void)
{
    const char *line = "{\"id\":7,\"ok\":true,\"instance\":1,\"type\":\"cloth\",\"time\":0.5,"
                       "\"positions\":[0,2,-0,0.492144167,1.91457629e-3,-1E+2],\"pinned\":[],"
                       "\"colliders\":[{\"collider\":1,\"radius\":0.3}],\"text\":\"a\\nb\\u00e9\\ud83d\\ude00\"}";
    cdc_jdoc d = {0};
    char msg[160] = "";
    REQUIRE(cdc_jparse(&d, line, strlen(line), msg, sizeof msg), "%s", msg);
    uint64_t id = 0;
    CHECK(cdc_juint(&d, cdc_jget(&d, 0, "id"), UINT32_MAX, &id) && id == 7);
    bool ok = false;
    CHECK(cdc_jbool(&d, cdc_jget(&d, 0, "ok"), &ok) && ok);
    CHECK(cdc_jstr_eq(&d, cdc_jget(&d, 0, "type"), "cloth"));
    int pos = cdc_jget(&d, 0, "positions");
    CHECK(d.tok[pos].count == 6);
    float v[6];
    int i = cdc_jfirst(&d, pos);
    for (int k = 0; k < 6; k++, i = cdc_jnext(&d, i))
        CHECK(cdc_jfloat(&d, i, &v[k]), "element %d", k);
    CHECK(v[3] == 0.492144167f && v[4] == 1.91457629e-3f && v[5] == -100.0f);
    CHECK(signbit(v[2]), "-0 keeps its sign");
    CHECK(cdc_jfirst(&d, cdc_jget(&d, 0, "pinned")) == -1, "an empty array has no first element");
    int col = cdc_jfirst(&d, cdc_jget(&d, 0, "colliders"));
    float r = 0;
    CHECK(cdc_jfloat(&d, cdc_jget(&d, col, "radius"), &r) && r == 0.3f);
    char text[32];
    size_t n = 0;
    CHECK(cdc_jstr_copy(&d, cdc_jget(&d, 0, "text"), text, sizeof text, &n));
    CHECK(n == 9 && memcmp(text, "a\nb\xc3\xa9\xf0\x9f\x98\x80", 9) == 0, "escapes decoded to UTF-8 (%zu bytes)", n);
    CHECK(cdc_jstr_size(&d, cdc_jget(&d, 0, "text")) == 9);
    char cut[6]; /* "a\nb" and the 2-byte e-acute fit; the 4-byte emoji does not: cut before it */
    CHECK(cdc_jstr_copy(&d, cdc_jget(&d, 0, "text"), cut, sizeof cut, &n) && n == 5 && cut[5] == '\0');
    CHECK(cdc_jget(&d, 0, "missing") == -1);
    cdc_jdoc_free(&d);
}

static void reader_should_refuse_what_json_does_not_allow(void)
{
    const char *bad[] = {
        "",  "{", "{\"a\":1,}", "[1,2,]", "{\"a\" 1}", "01", "-", "1.", ".5", "1e", "+1", "NaN",
        "Infinity", "tru", "nul", "\"abc", "\"a\tb\"", "\"\\x\"", "\"\\u12\"", "\"\\u0000\"",
        "\"\\ud800\"", "\"\\udc00x\"", "\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "{} {}", "{}x",
        "{\"a\":1}}", "[1 2]", "{1:2}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(!parses(bad[i]), "accepted %s", bad[i]);
    CHECK(parses(" {\"a\" : [ 1 , {\"b\":null} ] }\r\n"), "whitespace between tokens");
    /* Nesting is bounded: 31 levels pass, 33 do not. */
    char deep[80];
    memset(deep, '[', 31);
    memset(deep + 31, ']', 31);
    deep[62] = '\0';
    CHECK(parses(deep));
    memset(deep, '[', 33);
    memset(deep + 33, ']', 33);
    deep[66] = '\0';
    CHECK(!parses(deep), "33 levels of nesting accepted");
    char longnum[200];
    memset(longnum, '1', 150);
    longnum[150] = '\0';
    CHECK(!parses(longnum), "a 150-digit number accepted");
}

static void reader_should_read_integers_exactly_and_refuse_fractions(void)
{
    const char *text = "[4294967295,4294967296,2.0,2.5,-1,1e3,18446744073709551615,-0]";
    cdc_jdoc d = {0};
    char msg[100];
    REQUIRE(cdc_jparse(&d, text, strlen(text), msg, sizeof msg));
    int i = cdc_jfirst(&d, 0);
    uint64_t v = 0;
    CHECK(cdc_juint(&d, i, UINT32_MAX, &v) && v == 4294967295u);
    i = cdc_jnext(&d, i);
    CHECK(!cdc_juint(&d, i, UINT32_MAX, &v), "2^32 is beyond a uint32");
    i = cdc_jnext(&d, i);
    CHECK(cdc_juint(&d, i, 10, &v) && v == 2, "2.0 is the integer 2");
    i = cdc_jnext(&d, i);
    CHECK(!cdc_juint(&d, i, 10, &v), "2.5 is no integer");
    i = cdc_jnext(&d, i);
    CHECK(!cdc_juint(&d, i, 10, &v), "-1 is not unsigned");
    i = cdc_jnext(&d, i);
    CHECK(cdc_juint(&d, i, 5000, &v) && v == 1000);
    i = cdc_jnext(&d, i);
    CHECK(cdc_juint(&d, i, UINT64_MAX, &v) && v == UINT64_MAX, "2^64-1 read exactly");
    i = cdc_jnext(&d, i);
    CHECK(cdc_juint(&d, i, 10, &v) && v == 0, "-0 is 0");
    cdc_jdoc_free(&d);
}

static void writer_should_escape_and_refuse_what_json_cannot_carry(void)
{
    cdc_buf b = {0};
    cdc_jw w;
    cdc_jw_init(&w, &b);
    cdc_jw_object_open(&w);
    cdc_jw_key(&w, "s");
    cdc_jw_string(&w, "q\"b\\n\nt\t\x01\xc3\xa9", 11);
    cdc_jw_key(&w, "a");
    cdc_jw_array_open(&w);
    cdc_jw_float(&w, 0.1f);
    cdc_jw_float(&w, -2.5f);
    cdc_jw_u64(&w, 18446744073709551615u);
    cdc_jw_i64(&w, -7);
    cdc_jw_bool(&w, false);
    cdc_jw_array_close(&w);
    cdc_jw_object_close(&w);
    CHECK(w.fault == CDC_JW_OK);
    const char *want = "{\"s\":\"q\\\"b\\\\n\\nt\\t\\u0001\xc3\xa9\",\"a\":[0.100000001,-2.5,18446744073709551615,-7,false]}";
    CHECK(b.len == strlen(want) && memcmp(b.data, want, b.len) == 0, "wrote %.*s", (int)b.len, b.data);
    CHECK(parses(want), "what the writer writes, the reader reads");

    cdc_buf_clear(&b);
    cdc_jw_init(&w, &b);
    cdc_jw_key(&w, "dt");
    cdc_jw_float(&w, NAN);
    CHECK(w.fault == CDC_JW_NOT_FINITE && strcmp(w.last_key, "dt") == 0);
    cdc_jw_init(&w, &b);
    cdc_jw_string(&w, "\xff", 1);
    CHECK(w.fault == CDC_JW_BAD_STRING);
    cdc_buf_free(&b);
}

static void numbers_should_ignore_a_decimal_comma_locale(void)
{
    const char *locales[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "ru_RU.UTF-8", NULL};
    const char *found = NULL;
    for (int i = 0; locales[i] != NULL && found == NULL; i++)
        if (setlocale(LC_NUMERIC, locales[i]) != NULL)
            found = locales[i];
    if (found == NULL) {
        printf("     (no decimal-comma locale installed: checked in the C locale only)\n");
    }
    cdc_buf b = {0};
    cdc_jw w;
    cdc_jw_init(&w, &b);
    cdc_jw_float(&w, 1.5f);
    CHECK(b.len == 3 && memcmp(b.data, "1.5", 3) == 0, "wrote %.*s under %s", (int)b.len, b.data,
          found ? found : "C");
    cdc_jdoc d = {0};
    char msg[100];
    float v = 0;
    CHECK(cdc_jparse(&d, "2.25", 4, msg, sizeof msg) && cdc_jfloat(&d, 0, &v) && v == 2.25f, "read %g", (double)v);
    cdc_jdoc_free(&d);
    cdc_buf_free(&b);
    setlocale(LC_NUMERIC, "C");
}

const ct_test ct_json_tests[] = {
    {"json: reader accepts what the server sends", reader_should_accept_what_the_server_sends, 0},
    {"json: reader refuses what JSON does not allow", reader_should_refuse_what_json_does_not_allow, 0},
    {"json: integers exact, fractions refused", reader_should_read_integers_exactly_and_refuse_fractions, 0},
    {"json: writer escapes, refuses NaN and bad UTF-8", writer_should_escape_and_refuse_what_json_cannot_carry, 0},
    {"json: numbers in C format under a decimal-comma locale", numbers_should_ignore_a_decimal_comma_locale, 0},
    {NULL, NULL, 0},
};
