/* tokens.h - API tokens, each a tenant (core/context.h), for `runtime
 * serve` and `runtime token`.
 *
 * <data>/tokens.json (mode 0600, written atomically under tokens.lock):
 * {"tokens": [{name, sha256 (hex of the whole token), prefix (its first 7
 * characters, for people), createdAt, maxSandboxes, maxVcpu,
 * maxCostMicros, rate, maxSnapshots}]}.  A token is "rt_" and 40 base32 characters
 * (200 bits from getrandom): a plain SHA-256 of it cannot be reversed, and
 * the token itself is written nowhere.
 */
#ifndef RT_SERVE_TOKENS_H
#define RT_SERVE_TOKENS_H

#include "core/context.h"

#define RT_TOKEN_PREFIX_LEN 7 /* "rt_" and 4 characters: shown by token ls */

/* What the server knows of the token a request came with.  */
struct rt_token_info
{
  char name[33];
  unsigned max_sandboxes, max_vcpu, rate, max_snapshots; /* max_snapshots 0: the default */
  int64_t max_cost_micros;
};

/* The token file as loaded.  */
struct rt_tokens;

/* Loads <data>/tokens.json (none yet is no token).  Errors: "internal"
   (unreadable), "invalid_request" (readable by others).  */
int rt_tokens_open (rt_context *ctx, struct rt_tokens **out, rt_error **err);
/* 1 and *info filled when @bearer is a valid token, 0 when not; re-reads
   the file first when its inode, size or mtime changed (a `token create`
   while the server runs works at once; `token rm` revokes at once).
   Hashes compare in constant time.  Called from one thread.  */
int rt_tokens_check (struct rt_tokens *t, const char *bearer, struct rt_token_info *info);
/* 1 and *info filled when a token named @name exists (re-read as
   rt_tokens_check does), 0 when not: for `runtime node`, whose requests
   name their tenant instead of carrying its token (cluster/nats.h).  Called
   from one thread.  */
int rt_tokens_named (struct rt_tokens *t, const char *name, struct rt_token_info *info);
void rt_tokens_free (struct rt_tokens *t);
/* The @i-th token of the file as loaded (NULL past the last): for the
   spend watch (serve/spend.c), which loads one of its own.  */
const struct rt_token_info *rt_tokens_at (const struct rt_tokens *t, size_t i);

/* The SHA-256 of @s, as tokens (and sessions, sessions.h) are kept.  */
void rt_token_hash (const char *s, unsigned char out[32]);
/* @nchars (at most 100) random base32 characters from getrandom, and a
   NUL, into @out; -1 with errno set when getrandom failed.  */
int rt_token_random (char *out, size_t nchars);

/* What a tenant holds and spent, for its limits: live sandboxes (running
   or paused), their vCPUs, and microdollars charged to it in all.  */
struct rt_tenant_usage
{
  unsigned sandboxes, vcpu;
  int64_t charged_micros;
};
int rt_tenant_usage_get (rt_context *ctx, const char *tenant, struct rt_tenant_usage *u, rt_error **err);

#endif
