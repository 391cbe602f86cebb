/* runtime/admin.h - the host's administration: API tokens (one a tenant),
 * egress secrets, usage from the ledger.
 *
 * A part of <runtime.h>, which callers include (not this file) and whose
 * top comment tells the conventions: errors, handles, who frees what.  It
 * includes the parts it needs, so it also compiles alone.
 */
#ifndef RUNTIME_ADMIN_H
#define RUNTIME_ADMIN_H

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * rt_token_limits - what one API token may hold at once; 0 is no limit
 * @max_sandboxes:   live sandboxes (running or paused)
 * @max_vcpu:        vCPUs summed over its live sandboxes
 * @max_cost_micros: microdollars charged to it in all
 * @rate:            requests per second; 0 is the default, 50/s with a
 *                   burst of 100 (RT_TOKEN_DEFAULT_RATE, _BURST)
 * @max_snapshots:   snapshots it keeps at once; 0 is the default, 32
 *                   (RT_TOKEN_DEFAULT_SNAPSHOTS): each holds a VM's disk
 *                   and RAM on the host, so there is always a limit
 */
typedef struct rt_token_limits
{
  unsigned max_sandboxes;
  unsigned max_vcpu;
  int64_t max_cost_micros;
  unsigned rate;
  unsigned max_snapshots;
} rt_token_limits;

#define RT_TOKEN_DEFAULT_RATE 50      /* rt_token_limits.rate 0: requests a second */
#define RT_TOKEN_DEFAULT_BURST 100    /* and the burst the server allows */
#define RT_TOKEN_DEFAULT_SNAPSHOTS 32 /* rt_token_limits.max_snapshots 0 */

/**
 * rt_token_create - make an API token, which is a tenant of that name
 * @ctx:    the context (the host view)
 * @name:   the token's (and tenant's) name, as rt_context_set_tenant
 * @limits: its limits, or NULL for none
 * @token:  set to the token, "rt_" and 40 random base32 characters
 *          (free()); returned only here: <data>/tokens.json (0600) keeps
 *          its SHA-256
 * @err:    "invalid_request", "name_taken", "permission_denied" (a tenant
 *          context)
 * Return: 0, or <0 with @err set.
 */
int rt_token_create (rt_context *ctx, const char *name, const rt_token_limits *limits, char **token, rt_error **err);

/**
 * rt_token_list_json - the API tokens, never their hashes
 * @ctx:  the context (the host view)
 * @json: [{name, createdAt, maxSandboxes, maxVcpu, maxCostMicros, rate,
 *        maxSnapshots (0: the default), prefix (the token's first 7 characters)}] oldest first (free())
 * @err:  "permission_denied" (a tenant context), "internal"
 * Return: 0, or <0 with @err set.
 */
int rt_token_list_json (rt_context *ctx, char **json, rt_error **err);

/**
 * rt_token_remove - revoke an API token and stop its tenant's sandboxes
 * @ctx:  the context (the host view)
 * @name: the token's name
 * @err:  "not_found", "permission_denied" (a tenant context), or a
 *        sandbox's rt_sandbox_remove error
 *
 * Every sandbox of the tenant, paused ones included, stops as
 * rt_sandbox_stop does (its record written, its usage kept); then the
 * token goes: it no longer authenticates.
 * Return: 0, or <0 with @err set.
 */
int rt_token_remove (rt_context *ctx, const char *name, rt_error **err);

/**
 * rt_secret_set - store a secret bound to hosts
 * @ctx:     the context
 * @name:    [A-Za-z_][A-Za-z0-9_]*, the variable sandboxes see
 * @value:   the value (@len bytes, 1 to 8192, no NUL, no line break inside)
 * @len:     its length
 * @hosts:   NULL-terminated host names or *.domain patterns (1 to 16)
 * @header:  with @format: a header the proxy sets on those hosts, e.g.
 *           "Authorization" and "Bearer {value}", and the one header the
 *           value goes into; both NULL: the placeholder is swapped in the
 *           credential headers only (Authorization, X-Api-Key...:
 *           docs/secrets.md), and refused in any other
 * @format:  the header's value, holding {value} once, on one line
 * @placeholder: what sandboxes see (free()); kept when the value changes
 * @err:     "invalid_request" (a bad name, value, header or format),
 *           "usage" (not 1 to 16 hosts; @header without @format)
 *
 * The store (<data>/secrets.json) is mode 0600 and written atomically;
 * a store others can read is refused ("invalid_request").
 * Return: 0, or <0 with @err set.
 */
int rt_secret_set (rt_context *ctx, const char *name, const char *value, size_t len, const char *const *hosts,
                   const char *header, const char *format, char **placeholder, rt_error **err);

/* Where and when the egress proxy swaps a secret in (rt_secret_set_opts).  */
typedef struct rt_secret_opts
{
  const char *const *hosts; /* as rt_secret_set's @hosts */
  const char *header;       /* as rt_secret_set's @header, or NULL */
  const char *format;       /* as rt_secret_set's @format, or NULL */
  bool in_url;              /* also in the request line (path, query); else headers only */
  const char *const *rules; /* "METHOD:/path-glob" (METHOD may be *), NULL-terminated, at most
                               RT_MAX_SECRET_RULES; NULL or none: every request to @hosts */
} rt_secret_opts;

/**
 * rt_secret_set_opts - store a secret, with where and when it is swapped in
 * @ctx:     the context
 * @name:    as for rt_secret_set
 * @value:   as for rt_secret_set
 * @len:     its length
 * @opts:    hosts, header and format as for rt_secret_set; in_url and rules
 * @placeholder: what sandboxes see (free()); kept when the value changes
 * @err:     as for rt_secret_set, and "invalid_request" for a bad rule,
 *           "usage" for too many
 *
 * A value is swapped into the headers where its placeholder appears (and
 * into @opts->header), never into the request line unless @opts->in_url;
 * answers from the hosts have every occurrence of the value replaced by
 * the placeholder before the sandbox sees them.
 * Return: 0, or <0 with @err set.
 */
int rt_secret_set_opts (rt_context *ctx, const char *name, const char *value, size_t len, const rt_secret_opts *opts,
                        char **placeholder, rt_error **err);
/**
 * rt_secret_list_json - the stored secrets, never a value
 * @ctx:  the context
 * @json: set to [{name, hosts, header, format, placeholder, rules, inUrl,
 *        createdAt, updatedAt}] (free(); the times null in a store from before)
 * @err:  "invalid_request" (a store others can read)
 * Return: 0, or <0 with @err set.
 */
int rt_secret_list_json (rt_context *ctx, char **json, rt_error **err);
/**
 * rt_secret_remove - forget a secret
 * @ctx:  the context
 * @name: its name
 * @err:  "not_found" when there is none
 * Return: 0, or <0 with @err set.
 */
int rt_secret_remove (rt_context *ctx, const char *name, rt_error **err);

/**
 * rt_usage_json - what was used and charged, from the ledger
 * @ctx:  the context
 * @json: {trialHoursLeft, chargedMicros, chargedUsd, sandboxes: [{resourceId,
 *        name, kind, state, funding, createdAt, vcpu, memoryMiB, runningSeconds,
 *        activeCpuSeconds, memoryGiBSeconds, chargedUsd}]} newest first, at
 *        most 100 (free()); each camelCase key also under its old snake_case
 *        name (trial_hours_left, …), deprecated, gone in the next release
 * @err:  set on failure (an unreadable ledger)
 * Return: 0, or <0 with @err set.
 */
int rt_usage_json (rt_context *ctx, char **json, rt_error **err);

/**
 * rt_doctor_json - what this host gives sandboxes, for a bug report
 * @ctx:  the context (its accelerator is not probed)
 * @json: set to a JSON object (free() it): version, caller {uid,
 *        canManage, why}, mode ("local" or "client"), apiUrl,
 *        directories {state, data, cache}, qemu {path, version}, kernel
 *        {host, guest}, accelerator {name, why}, caches {kernel,
 *        baseRootfs, bootDisks, overlays, templates, images, snapshots,
 *        sandboxes: {path, bytes}; spares: a count}, defaultImage {name,
 *        id, built}, trial {hoursLeft, running}, jail {on, uidRange, uids,
 *        uidsInUse, cgroup ("v1", "v2", "none")}, host {cpus, memoryTotalMiB,
 *        memoryAvailableMiB, diskFreeMiB, defaultShape {vcpu, memoryMiB,
 *        diskMiB}, fitsDefaultShape}, unreadable ["what: why", …]; a value
 *        it could not read is null and said in unreadable.
 * @err:  set on failure
 *
 * Works for any caller, root or not: it reads the directories root's
 * commands use (those RUNTIME_*_DIR does not set), boots nothing, fetches
 * nothing and writes nothing (but the trial's lock file, as root).
 * Errors: "internal" (out of memory).
 * Return: 0, or <0 with @err set.
 */
int rt_doctor_json (rt_context *ctx, char **json, rt_error **err);

#ifdef __cplusplus
}
#endif

#endif
