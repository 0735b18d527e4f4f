/* Counts heap allocations while `cd_alloc_counting` is set: malloc and its
 * kin are defined here, in the test executable, so every call in the
 * process (the solver's, libc's own, the pool's) comes through them and is
 * forwarded to glibc's allocator. Built only into build/alloc_tests, never
 * with a sanitizer (which interposes the same functions). */
#include <stdatomic.h>
#include <stdlib.h>

#include "count_alloc.h"

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *p);

atomic_int cd_alloc_counting;
atomic_long cd_alloc_count;

static void note(void)
{
    if (atomic_load_explicit(&cd_alloc_counting, memory_order_relaxed))
        atomic_fetch_add_explicit(&cd_alloc_count, 1, memory_order_relaxed);
}

void *malloc(size_t size)
{
    note();
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    note();
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    note();
    return __libc_realloc(p, size);
}

void *aligned_alloc(size_t alignment, size_t size)
{
    note();
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **out, size_t alignment, size_t size)
{
    note();
    void *p = __libc_memalign(alignment, size);
    if (p == NULL)
        return 12; /* ENOMEM */
    *out = p;
    return 0;
}

void free(void *p)
{
    __libc_free(p);
}
