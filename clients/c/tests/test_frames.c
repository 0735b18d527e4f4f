/* Frame decoding against protocol/test_vectors.json (PROTOCOL.md's vectors,
 * read with the library's own JSON reader): every header field, and every
 * position, velocity and normal bit for bit after rounding to float32
 * (plain and quantized: this decoder computes in float64 as the rule says). Then frames that break the
 * layout must be refused with a reason (a shared-memory reference, flags
 * bit 3, is 56 bytes and not a frame to parse), and an unknown version
 * skipped. */
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"

static size_t unhex(const cdc_jdoc *d, int tok, unsigned char *out, size_t cap)
{
    char hex[4096];
    size_t n = 0;
    if (!cdc_jstr_copy(d, tok, hex, sizeof hex, &n))
        return 0;
    size_t k = 0;
    for (size_t i = 0; i + 1 < n && k < cap; i += 2)
        out[k++] = (unsigned char)strtoul((char[]){hex[i], hex[i + 1], 0}, NULL, 16);
    return k;
}

/* The channel `name` of a vector: decoded bit for bit, and within the
 * quantization (velocities: half their box's step; normals 1e-4) of what
 * was encoded; a vector without it is refused. */
static void check_channel(const cdc_jdoc *d, int v, const clothd_frame *f, const char *name, int index)
{
    float out[3 * 16];
    clothd_error err;
    const bool velocities = name[0] == 'v';
    clothd_code rc = velocities ? clothd_frame_decode_velocities(f, out, 16, &err)
                                : clothd_frame_decode_normals(f, out, 16, &err);
    int want = cdc_jget(d, cdc_jget(d, v, "decoded"), name);
    int orig = cdc_jget(d, cdc_jget(d, v, "original"), name);
    if (want < 0) {
        CHECK(rc == CLOTHD_E_USAGE, "vector %d has no %s: refused", index, name);
        return;
    }
    REQUIRE(rc == CLOTHD_OK, "vector %d %s: %s", index, name, err.message);
    int p = cdc_jfirst(d, want), o = cdc_jfirst(d, orig);
    for (uint32_t i = 0; i < f->count; i++, p = cdc_jnext(d, p), o = cdc_jnext(d, o)) {
        float w[3], original[3];
        CHECK(cdc_jvec3(d, p, w) && cdc_jvec3(d, o, original));
        for (int k = 0; k < 3; k++) {
            const float got = out[3 * i + (uint32_t)k];
            CHECK(got == w[k], "vector %d %s %u axis %d: %.9g, want %.9g", index, name, (unsigned)i, k,
                  (double)got, (double)w[k]);
            double tol = !f->quantized ? 0.0
                         : velocities  ? ((double)f->velocity_max[k] - f->velocity_min[k]) / 65535 / 2 + 1e-6
                                       : 1e-4;
            CHECK(fabs((double)got - original[k]) <= tol, "vector %d %s %u: off the original", index, name,
                  (unsigned)i);
        }
    }
}

static void decoder_should_match_every_test_vector(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/protocol/test_vectors.json", ct_repo());
    size_t len = 0;
    char *text = ct_read_file(path, &len);
    REQUIRE(text != NULL, "cannot read %s", path);
    cdc_jdoc d = {0};
    char msg[160];
    bool parsed = cdc_jparse(&d, text, len, msg, sizeof msg);
    CHECK(parsed, "test_vectors.json: %s", msg);
    int frames = cdc_jget(&d, 0, "frames");
    int checked = 0, quantized = 0, channels = 0;
    for (int v = cdc_jfirst(&d, frames); parsed && v >= 0 && v < (int)d.tok[frames].next; v = cdc_jnext(&d, v)) {
        unsigned char bytes[2048];
        size_t n = unhex(&d, cdc_jget(&d, v, "hex"), bytes, sizeof bytes);
        int dec = cdc_jget(&d, v, "decoded");
        clothd_frame f;
        clothd_error err;
        if (clothd_frame_parse(bytes, n, &f, &err) != CLOTHD_OK) {
            CHECK(false, "vector %d: %s", checked + 1, err.message);
            continue;
        }
        uint64_t inst = 0, frame = 0;
        double time = -1;
        cdc_juint(&d, cdc_jget(&d, dec, "instance"), UINT32_MAX, &inst);
        cdc_juint(&d, cdc_jget(&d, dec, "frame"), UINT64_MAX, &frame);
        cdc_jdouble(&d, cdc_jget(&d, dec, "time"), &time);
        CHECK(f.instance.id == inst && f.frame == frame && f.time == time, "vector %d header", checked + 1);
        int pos = cdc_jget(&d, dec, "positions");
        CHECK(f.count == d.tok[pos].count, "vector %d: count %u", checked + 1, (unsigned)f.count);
        bool q = false;
        cdc_jbool(&d, cdc_jget(&d, v, "quantized"), &q);
        CHECK(f.quantized == q, "vector %d: quantized flag", checked + 1);
        uint64_t flags = q ? 1 : 0;
        cdc_juint(&d, cdc_jget(&d, v, "flags"), 7, &flags);
        CHECK(f.flags == flags && f.has_velocities == ((flags & 2) != 0) && f.has_normals == ((flags & 4) != 0),
              "vector %d: flags %u", checked + 1, (unsigned)f.flags);
        check_channel(&d, v, &f, "velocities", checked + 1);
        check_channel(&d, v, &f, "normals", checked + 1);
        channels += (flags & 6) != 0;
        if (q) {
            quantized++;
            float lo[3], hi[3];
            CHECK(cdc_jvec3(&d, cdc_jget(&d, dec, "bboxMin"), lo) && cdc_jvec3(&d, cdc_jget(&d, dec, "bboxMax"), hi));
            for (int k = 0; k < 3; k++)
                CHECK(f.bbox_min[k] == lo[k] && f.bbox_max[k] == hi[k], "vector %d: bbox axis %d", checked + 1, k);
        }
        float out[3 * 16];
        float small[3];
        if (f.count > 1)
            CHECK(clothd_frame_decode(&f, small, 1, &err) == CLOTHD_E_USAGE, "a buffer too small is refused");
        REQUIRE(clothd_frame_decode(&f, out, 16, &err) == CLOTHD_OK, "%s", err.message);
        int orig = cdc_jget(&d, v, "original");
        if (flags & 6)
            orig = cdc_jget(&d, orig, "positions");
        int p = cdc_jfirst(&d, pos), o = cdc_jfirst(&d, orig);
        for (uint32_t i = 0; i < f.count; i++, p = cdc_jnext(&d, p)) {
            float want[3], original[3];
            CHECK(cdc_jvec3(&d, p, want));
            for (int k = 0; k < 3; k++)
                CHECK(out[3 * i + (uint32_t)k] == want[k], "vector %d particle %u axis %d: %.9g, want %.9g",
                      checked + 1, (unsigned)i, k, (double)out[3 * i + (uint32_t)k], (double)want[k]);
            if (o >= 0) { /* within half a quantization step of what was encoded */
                CHECK(cdc_jvec3(&d, o, original));
                for (int k = 0; k < 3; k++) {
                    double tol = ((double)f.bbox_max[k] - f.bbox_min[k]) / 65535 / 2 + 1e-6;
                    CHECK(fabs((double)out[3 * i + (uint32_t)k] - original[k]) <= tol, "vector %d: off the original",
                          checked + 1);
                }
                o = cdc_jnext(&d, o);
            }
        }
        checked++;
    }
    CHECK(checked == 14 && quantized == 7 && channels == 6, "%d vectors (%d quantized, %d with channels) checked",
          checked, quantized, channels);
    cdc_jdoc_free(&d);
    free(text);
}

static void broken_frames_should_be_refused_with_a_reason(void)
{
    /* Vector 1 as the base. */
    unsigned char good[64] = {0x89, 0x43, 0x4c, 0x46, 1, 0, 0, 0, 64, 0, 0, 0, 1, 0, 0, 0};
    good[32] = 2;
    clothd_frame f;
    clothd_error err;
    CHECK(clothd_frame_parse(good, sizeof good, &f, &err) == CLOTHD_OK, "%s", err.message);
    unsigned char bad[64];

    memcpy(bad, good, sizeof bad);
    bad[3] = 'X';
    CHECK(clothd_frame_parse(bad, sizeof bad, &f, &err) == CLOTHD_E_PROTOCOL && strstr(err.message, "magic"),
          "%s", err.message);
    memcpy(bad, good, sizeof bad);
    bad[32] = 3; /* three particles in 64 bytes */
    CHECK(clothd_frame_parse(bad, sizeof bad, &f, &err) == CLOTHD_E_PROTOCOL && strstr(err.message, "particles"),
          "%s", err.message);
    CHECK(clothd_frame_parse(good, 63, &f, &err) == CLOTHD_E_PROTOCOL && strstr(err.message, "64"), "%s",
          err.message);
    CHECK(clothd_frame_parse(good, 20, &f, &err) == CLOTHD_E_PROTOCOL, "shorter than a header");
    memcpy(bad, good, sizeof bad);
    bad[4] = 2; /* version 2 */
    CHECK(clothd_frame_parse(bad, sizeof bad, &f, &err) == CLOTHD_E_PROTOCOL && strstr(err.message, "version"),
          "%s", err.message);
    memcpy(bad, good, sizeof bad);
    bad[6] = 0x10; /* an unknown flag */
    CHECK(clothd_frame_parse(bad, sizeof bad, &f, &err) == CLOTHD_E_PROTOCOL && strstr(err.message, "flags 0x0010"),
          "flag bit 4: %s", err.message);
    bad[6] = 8; /* a shared-memory reference is 56 bytes, never 64 */
    CHECK(clothd_frame_parse(bad, sizeof bad, &f, &err) == CLOTHD_E_PROTOCOL &&
              strstr(err.message, "reference (flags bit 3) of 64 bytes, not 56"),
          "%s", err.message);
    bad[8] = 56; /* a reference: only a client holding the ring resolves it */
    CHECK(clothd_frame_parse(bad, 56, &f, &err) == CLOTHD_E_PROTOCOL &&
              strstr(err.message, "a shared-memory reference (flags bit 3), not a frame") && f.count == 0,
          "%s", err.message);
    memcpy(bad, good, sizeof bad);
    bad[6] = 2; /* velocities announced, none there: the length is wrong */
    CHECK(clothd_frame_parse(bad, sizeof bad, &f, &err) == CLOTHD_E_PROTOCOL && strstr(err.message, "particles"),
          "%s", err.message);
    CHECK(clothd_frame_parse(NULL, 0, &f, &err) == CLOTHD_E_USAGE);
}

const ct_test ct_frame_tests[] = {
    {"frames: every PROTOCOL.md test vector decodes exactly", decoder_should_match_every_test_vector, 0},
    {"frames: broken frames are refused with a reason", broken_frames_should_be_refused_with_a_reason, 0},
    {NULL, NULL, 0},
};
