/* The allocation counter of count_alloc.c. */
#ifndef CLOTHD_TESTS_COUNT_ALLOC_H
#define CLOTHD_TESTS_COUNT_ALLOC_H

#include <stdatomic.h>

extern atomic_int cd_alloc_counting; /* non-zero: count */
extern atomic_long cd_alloc_count;   /* calls to malloc, calloc, realloc, aligned allocs */

#endif
