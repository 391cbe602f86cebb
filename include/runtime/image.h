/* runtime/image.h - what sandboxes start from: image builds and the image
 * store, templates (warm), pools of spares, export and import, snapshots.
 *
 * A part of <runtime.h>, which callers include (not this file) and whose
 * top comment tells the conventions: errors, handles, who frees what.  It
 * includes the parts it needs, so it also compiles alone.
 */
#ifndef RUNTIME_IMAGE_H
#define RUNTIME_IMAGE_H

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * rt_build_opts - the image rt_image_build makes; steps run in this
 * order: @files, @apt, @pip, @npm, @run (each list in its own order)
 * @from:      the image to start from (default "runtime")
 * @apt, @pip, @npm: NULL-terminated package names (a version may follow:
 *             "pkg=1.2", "pkg==1.2", "pkg@1.2")
 * @run:       NULL-terminated shell commands, run as root with no network
 * @files:     NULL-terminated "SRC:DST" (a host file or folder, an absolute
 *             path in the image)
 * @env:       NULL-terminated "K=V" added to the image's environment
 * @workdir:   the image's working directory (default: the base's)
 * @name:      "NAME" or "NAME:TAG" (default "image")
 * @dir:       a folder holding runtime.json ({base, apt, pip, npm,
 *             commands, files, env, workdir}); its files' SRC are relative
 *             to it.  Its lists come before those of these fields.
 * @no_cache:  run every step even when a cached layer exists
 * @apt_mirror: a Debian mirror ("http[s]://HOST[/PATH]") that the apt steps
 *             use and are the only host they reach; NULL: the hosts of the
 *             default image's sources as this host built it.  Never the
 *             sources of the image being built: those are the guest's.
 * @log_fd:    where the steps' progress and output go (-1: nowhere)
 * @cancel_fd: when readable (a signalfd for SIGINT, say), the build stops:
 *             its sandbox is removed, its unfinished step leaves nothing
 *             (the finished ones stay cached) and it fails "interrupted";
 *             -1 or 0 for none
 */
typedef struct rt_build_opts
{
  const char *from;
  const char *const *apt;
  const char *const *pip;
  const char *const *npm;
  const char *const *run;
  const char *const *files;
  const char *const *env;
  const char *workdir;
  const char *name;
  const char *dir;
  bool no_cache;
  int log_fd;
  const char *apt_mirror;
  int cancel_fd;
} rt_build_opts;

/**
 * rt_image_build - build an image, one layer per step
 * @ctx:  the context
 * @opts: what to build
 * @id:  the new image's id (free())
 * @err: "build_failed" names the step and carries its last output lines;
 *       "invalid_request" for a bad package name, file or recipe, or an
 *       apt package the apt sources do not have;
 *       "interrupted" when @opts->cancel_fd fired
 *
 * Each step runs as root in a build sandbox whose network reaches only
 * what the step needs (Debian's archive for apt, PyPI for pip, the npm
 * registry for npm, nothing otherwise); a step whose parent, text and
 * inputs were built before reuses its layer without running.  A failed
 * build leaves no image.
 * Return: 0, or <0 with @err set.
 */
int rt_image_build (rt_context *ctx, const rt_build_opts *opts, char **id, rt_error **err);

/**
 * rt_image_list_json - every image version
 * @ctx:  the context
 * @json: set to [{id, name, version, tags, layers, env, workdir, created,
 *        sizeBytes}] (free()); "[]" when there are none
 * @err:  set on failure
 * Return: 0, or <0 with @err set.
 */
int rt_image_list_json (rt_context *ctx, char **json, rt_error **err);
/**
 * rt_image_get_json - one image, as in rt_image_list_json
 * @ctx:  the context
 * @ref:  id, name, name:tag, name@version, or an id prefix of 12+
 * @json: set to the object (free())
 * @err:  "image_not_found"
 * Return: 0, or <0 with @err set.
 */
int rt_image_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err);
/**
 * rt_image_remove - forget an image version, its boot disk and the layers
 * no other image uses
 * @ctx: the context
 * @ref: as for rt_image_get_json
 * @err: "image_not_found"; "invalid_request" while a live sandbox runs it
 * Return: 0, or <0 with @err set.
 */
int rt_image_remove (rt_context *ctx, const char *ref, rt_error **err);
/**
 * rt_image_warm - make the template that sandboxes of an image and shape
 * start from (they boot cold until it exists)
 * @ctx:        the context
 * @ref:        as for rt_image_get_json; NULL: "runtime"
 * @vcpu:       the shape's vCPUs (0: 2)
 * @memory_mib: its memory (0: 4096)
 * @json:       set to the template {key, imageId, vcpu, memoryMiB,
 *              createdAt, makeMs, sizeBytes, fresh} (free()); NULL allowed.
 *              "fresh" is false when it existed already
 * @err:        "image_not_found", "invalid_request" (a bad shape),
 *              "startup_failed" (the template VM did not boot or save)
 *
 * A template is a booted, warmed VM saved to disk: its RAM, device state
 * and disk overlay.  It is made again when any of its inputs changes (the
 * image, the shape, the kernel, the agent, QEMU).
 * Return: 0, or <0 with @err set.
 */
int rt_image_warm (rt_context *ctx, const char *ref, unsigned vcpu, unsigned memory_mib, char **json, rt_error **err);
/**
 * rt_pool_set - keep @spares paused clones of an image and shape ready
 * @ctx:        the context
 * @ref:        an image, as for rt_image_get_json; NULL: "runtime"
 * @spares:     how many (0 to 64; 0 keeps the pool but stops its spares)
 * @vcpu:       the shape's vCPUs (0: 2)
 * @memory_mib: its memory (0: 4096)
 * @json:       set to {image, imageId, vcpu, memoryMiB, spares, ready}
 *              (free()); NULL allowed
 * @err:        "image_not_found", "invalid_request", "quota_exceeded" (all
 *              spares together may hold at most RUNTIME_POOL_MAX_MIB,
 *              default a tenth of the host's RAM)
 *
 * A create of exactly that image and shape (and no secrets) claims a
 * spare: its rules, env, name, lease and funding apply before it resumes.
 * Spares use no CPU and are not billed; a claimed one is replaced in the
 * background, and after a reboot the next create of the shape makes
 * them again.  Returns once the template and the spares are made.
 * Return: 0, or <0 with @err set.
 */
int rt_pool_set (rt_context *ctx, const char *ref, unsigned spares, unsigned vcpu, unsigned memory_mib, char **json,
                 rt_error **err);
/**
 * rt_pool_list_json - the pools
 * @ctx:  the context
 * @json: set to [{image, imageId, vcpu, memoryMiB, spares, ready}] (free())
 * @err:  set on failure
 * Return: 0, or <0 with @err set.
 */
int rt_pool_list_json (rt_context *ctx, char **json, rt_error **err);
/**
 * rt_pool_remove - forget the pools of an image and stop their spares
 * @ctx: the context
 * @ref: the image, as for rt_pool_set
 * @err: "not_found" when it has no pool, "image_not_found"
 * Return: 0, or <0 with @err set.
 */
int rt_pool_remove (rt_context *ctx, const char *ref, rt_error **err);
/**
 * rt_image_export - write an image as a portable tar: manifest.json and
 * layers/<sha256>.tar.zst (written under a temporary name, then renamed)
 * @ctx:  the context
 * @ref:  as for rt_image_get_json
 * @path: the tar file to write
 * @err:  "image_not_found", "internal" (cannot write @path)
 * Return: 0, or <0 with @err set.
 */
int rt_image_export (rt_context *ctx, const char *ref, const char *path, rt_error **err);
/**
 * rt_image_import - add an exported image; every layer is checked against
 * its digest and the manifest against its id, every layer's entries for
 * unsafe paths, device nodes and writes through symlinks ("invalid_request"
 * if not: the store is left as it was).  The image becomes its name's next
 * version, tagged latest only when it is newer than the name's latest.
 * @ctx:  the context
 * @path: the tar rt_image_export wrote
 * @id:   set to the image's id (free())
 * @err:  "file_not_found", "invalid_request"
 * Return: 0 imported, 1 already in the store (left as it was), or a
 * negative errno-style value with @err set.
 */
int rt_image_import (rt_context *ctx, const char *path, char **id, rt_error **err);

/**
 * rt_snapshot_list_json - every snapshot as a JSON array of
 * rt_snapshot_get_json objects, oldest first ("[]" when none)
 * @ctx:  the context
 * @json: set to the text (free it)
 * @err:  set on failure
 * Return: 0, or <0 with @err set.
 */
int rt_snapshot_list_json (rt_context *ctx, char **json, rt_error **err);

/**
 * rt_snapshot_get_json - one snapshot: {id, kind: "snapshot", name,
 * labels, state ("ready"), sourceSandboxId, image, shape {vcpu,
 * memoryMiB, diskMiB}, storedBytes (on disk), memoryBytes (its saved RAM,
 * compressed), memoryDataBytes (that RAM's non-zero pages), diskBytes,
 * createdAt, path, tenant (only when a tenant's sandbox was its source)}
 * @ctx:  the context (a tenant's sees only its own: rt_context_set_tenant)
 * @ref:  its id or name
 * @json: set to the text (free it)
 * @err:  "not_found"
 * Return: 0, or <0 with @err set.
 */
int rt_snapshot_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err);

/**
 * rt_snapshot_remove - delete a snapshot; sandboxes made from it run on
 * @ctx: the context
 * @ref: its id or name
 * @err: "not_found"
 * Return: 0, or <0 with @err set.
 */
int rt_snapshot_remove (rt_context *ctx, const char *ref, rt_error **err);

#ifdef __cplusplus
}
#endif

#endif
