/* clothd: the cloth and soft-body simulation server. */
#include <stdio.h>

#include "server.h"

int main(int argc, char **argv)
{
    cd_server_options opts = cd_default_server_options();
    int parsed = cd_server_parse_args(argc, argv, &opts, stdout, stderr);
    if (parsed == 1)
        return 0;
    if (parsed != 0)
        return 2;
    return cd_server_run(&opts);
}
