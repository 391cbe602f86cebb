/* store.h - the image store: the index of names, versions and tags, and
   the manifests.  The layout of <data>/images/ is described in
   image/store.c.  */
#ifndef RT_IMAGE_STORE_H
#define RT_IMAGE_STORE_H

#include "core/context.h"

/* The image a NULL or empty reference names.  */
#define RT_IMAGE_DEFAULT "runtime"

/* Whether @s is 64 lower-case hex digits.  */
bool rt_image_is_sha256 (const char *s);
/* An image name: 1-63 of [a-z0-9._-].  */
bool rt_image_name_valid (const char *name);

/* Makes @dir 0700 (its parents 0755 when missing).  One that exists must
   be the caller's; it is closed to 0700, and the files directly in it
   that others could read (an older version made them 0644) to 0600.  */
int rt_image_private_dir (const char *dir, rt_error **err);
/* rt_image_private_dir (@dir), then its lock (rt_lock_dir), the lock
   file 0600.  */
int rt_image_lock_dir (const char *dir, int *lockfd, rt_error **err);
/* The image store opened: rt_image_private_dir on <data>/images and its
   layers/, manifests/ and cache/, on <cache>/disks and <cache>/base.
   rt_image_read_index calls it, so every command that reads or changes
   the store does.  */
int rt_image_store_open (rt_context *ctx, rt_error **err);

/* The JSON object in @path; with @missing_ok, an empty one when there is
   no such file.  */
int rt_image_read_json (const char *path, bool missing_ok, json_object **out, rt_error **err);
/* Replaces @path (by rename) with @o, pretty-printed.  */
int rt_image_write_json (const char *path, json_object *o, rt_error **err);

/* <data>/images/index.json, empty when there is none yet; the store is
   opened (rt_image_store_open) first.  */
int rt_image_read_index (rt_context *ctx, json_object **index, rt_error **err);
/* Resolves an image reference: "name", "name:tag", "name@version", or an
   id or a prefix of one id of at least RT_IMAGE_MIN_PREFIX hex digits.
   NULL or "" is the default.  Return: the id (owned by @index), or NULL.  */
const char *rt_image_index_resolve (json_object *index, const char *ref);
#define RT_IMAGE_MIN_PREFIX 4
/* How many distinct ids @ref (hex, RT_IMAGE_MIN_PREFIX or more) starts,
   of the names @keep (when given) says yes to; the first in *id (owned by
   @index) when @id is given.  */
int rt_image_index_prefix (json_object *index, const char *ref, const char **id, bool (*keep) (const char *name, void *arg),
                           void *arg);
/* The error for a @ref that resolved to nothing: `ambiguous` when it is
   the start of several ids the context sees, else image_not_found.  */
int rt_image_unresolved (rt_context *ctx, json_object *index, const char *ref, rt_error **err);
/* The name of the image version @id in @index (its entry in *img_out,
   its version key in *version), or NULL.  */
const char *rt_image_index_find (json_object *index, const char *id, json_object **img_out, const char **version);
/* The version the next one of @name gets: one past the highest.  */
long rt_image_index_next (json_object *index, const char *name);
/* Adds one version to the index: @name's next, tagged @tag, and latest
   when @latest.  Return: its version.  */
long rt_image_index_add (json_object *index, const char *name, const char *id, const char *tag, bool latest);

/* The id of a manifest: SHA-256 of its plain JSON without "id".  */
int rt_image_manifest_id (json_object *m, char id[65], rt_error **err);
/* Writes <imgdir>/manifests/<id>.json: @m's fields with the id first.  */
int rt_image_manifest_write (const char *imgdir, json_object *m, const char *id, rt_error **err);
/* The stored manifest of @ref (no default image is built here).  */
int rt_image_manifest (rt_context *ctx, const char *ref, json_object **manifest, rt_error **err);
/* Adds a version of @name (tagged latest and @tag) whose manifest holds
   @fields (layers, env, workdir, …); its id in *id_out.  */
int rt_image_add (rt_context *ctx, const char *name, const char *tag, json_object *fields, char **id_out,
                  rt_error **err);

/* Fails with image_not_found for @ref, and a hint.  */
int rt_image_not_found (rt_error **err, const char *ref);

/* An image's removal, in two steps around what the caller checks uses it
   (public/image.c: live sandboxes, snapshots, templates, pools), under
   one hold of the index's lock: @ref's id, when this context may remove
   it ("permission_denied" for the default image in a tenant context),
   with the lock held in *@lockfd (the caller closes it after
   rt_image_forget, or to give up); then its versions and tags go from the
   index, its manifest, its boot disk and the layers no other image
   uses.  */
int rt_image_removable (rt_context *ctx, const char *ref, char id[65], int *lockfd, rt_error **err);
int rt_image_forget (rt_context *ctx, const char *id, rt_error **err);

/* The local driver (public/driver.h): these do what include/runtime.h
   says of their rt_ names, on this machine.  */
int rt_local_image_list_json (rt_context *ctx, char **json, rt_error **err);
int rt_local_image_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err);

#endif
