#include "errors.h"

static const char *const status_names[CD_STATUS_COUNT] = {
    [CD_OK] = "ok",
#define CD_STATUS_NAME(name, wire, msg) [CD_E_##name] = wire,
    CD_STATUS_MAP(CD_STATUS_NAME)
#undef CD_STATUS_NAME
};

static const char *const status_messages[CD_STATUS_COUNT] = {
    [CD_OK] = "success",
#define CD_STATUS_MSG(name, wire, msg) [CD_E_##name] = msg,
    CD_STATUS_MAP(CD_STATUS_MSG)
#undef CD_STATUS_MSG
};

const char *cd_status_name(cd_status status)
{
    if ((unsigned)status >= CD_STATUS_COUNT)
        return status_names[CD_E_INTERNAL];
    return status_names[status];
}

const char *cd_status_message(cd_status status)
{
    if ((unsigned)status >= CD_STATUS_COUNT)
        return status_messages[CD_E_INTERNAL];
    return status_messages[status];
}
