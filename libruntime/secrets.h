/* secrets.h - what sandbox creation needs of the secrets store.  */
#ifndef RT_SECRETS_H
#define RT_SECRETS_H

#include "context.h"

/* "NAME=<placeholder>" for every secret, NULL-terminated (free each).  */
int rt_secret_env (rt_context *ctx, char ***env, rt_error **err);

#endif
