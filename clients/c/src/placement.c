/* Where a scene lives (PROTOCOL.md, "Sharding"): rendezvous (highest random
 * weight) hashing of the scene name over an endpoint list, with no
 * coordinator. The weight is 64-bit FNV-1a over the endpoint's bytes, one
 * zero byte and the scene's bytes, passed through MurmurHash3's fmix64 (FNV
 * alone mixes its last bytes poorly into the high bits); the Python and Node
 * clients compute the same numbers (protocol/placement_vectors.json). Pure
 * functions, no state. Also the scene-name rule and which commands take
 * "scene". */
#include "internal.h"

#include <string.h>

#define FNV64_OFFSET 0xcbf29ce484222325ull
#define FNV64_PRIME 0x100000001b3ull

static uint64_t fnv1a64(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= FNV64_PRIME;
    }
    return h;
}

static uint64_t fmix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

uint64_t clothd_rendezvous_weight(const char *endpoint, const char *scene)
{
    static const char zero = '\0';
    const char *e = endpoint ? endpoint : "";
    const char *s = scene ? scene : "";
    uint64_t h = fnv1a64(FNV64_OFFSET, e, strlen(e));
    h = fnv1a64(h, &zero, 1);
    return fmix64(fnv1a64(h, s, strlen(s)));
}

size_t clothd_place_scene(const char *const *endpoints, size_t count, const char *scene)
{
    if (endpoints == NULL || scene == NULL || count == 0)
        return (size_t)-1;
    size_t best = (size_t)-1;
    uint64_t best_weight = 0;
    for (size_t i = 0; i < count; i++) {
        if (endpoints[i] == NULL)
            continue;
        uint64_t w = clothd_rendezvous_weight(endpoints[i], scene);
        if (best == (size_t)-1 || w > best_weight ||
            (w == best_weight && strcmp(endpoints[i], endpoints[best]) < 0)) {
            best = i;
            best_weight = w;
        }
    }
    return best;
}

bool clothd_scene_name_valid(const char *name)
{
    if (name == NULL)
        return false;
    size_t n = strlen(name);
    if (n < 1 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                  ch == '.' || ch == '_' || ch == ':' || ch == '-';
        if (!ok)
            return false;
    }
    return true;
}

bool cdc_kind_takes_scene(cdc_kind kind)
{
    switch (kind) {
    case CDC_K_CREATE:
    case CDC_K_DESTROY:
    case CDC_K_PIN:
    case CDC_K_UNPIN:
    case CDC_K_WIND: /* with an instance: clothd_send_wind clears it for the global wind */
    case CDC_K_GRAVITY:
    case CDC_K_ADD_COLLIDER:
    case CDC_K_MOVE_COLLIDER:
    case CDC_K_REMOVE_COLLIDER:
    case CDC_K_ENABLE:
    case CDC_K_STEP:
    case CDC_K_GET:
    case CDC_K_SUBSCRIBE:
    case CDC_K_UNSUBSCRIBE:
    case CDC_K_STATUS:
    case CDC_K_SET:
    case CDC_K_TRANSFORM:
    case CDC_K_ATTACH:
    case CDC_K_TOPOLOGY:
    case CDC_K_SKIN:
    case CDC_K_TELEPORT:
    case CDC_K_SAVE:
    case CDC_K_RECORD:
    case CDC_K_SCENE:  /* given no name: the current scene's */
    case CDC_K_SCENES: /* given no name: only the current scene's entry */
        return true;
    default:
        return false;
    }
}
