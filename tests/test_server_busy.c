/* The server's busy table: ids come from clients, so any 32-bit id must be
 * safe to look up (issue 9, item 2: `get` of instance 65535 during a step
 * read beyond the table). Run under ASan by unit_tests_san. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../server/internal.h"

Test(server_busy, ids_beyond_the_table_should_never_be_busy_nor_read_out_of_bounds)
{
    cd_server server;
    memset(&server, 0, sizeof server);
    server.opts.max_instances = 4;
    server.busy = calloc(server.opts.max_instances + 1u, 1);
    cr_assert_not_null(server.busy);
    cd_server_set_busy(&server, (3u << 16) | 4u, true);
    cr_assert(cd_server_is_busy(&server, (9u << 16) | 4u), "slot 4 is busy, whatever the generation");
    const cd_id foreign[] = {5u, 65535u, 0xFFFFFFFFu, (7u << 16) | 4000u};
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++)
        cr_assert_not(cd_server_is_busy(&server, foreign[i]), "id %u", foreign[i]);
    cd_server_set_busy(&server, 4u, false);
    cr_assert_eq(server.busy_count, 0u);
    free(server.busy);
}
