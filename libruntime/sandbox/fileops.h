/* fileops.h - a sandbox's files as `runtime serve` handles them: entries
   with their mode and time, writes with a mode, mkdir, remove, rename, tar
   streams out and in.
 *
 * Each is a fixed script run by the guest's own tools (sh, find, tar) with
 * the caller's paths as its arguments, never inside the script.  Reads run
 * as root, as cat and files do (files.c); changes run as the sandbox's
 * user "runtime", as cp in does (copy.c), so that what a client writes its
 * programs may change.  The guest's answers are bounded and parsed, never
 * trusted for anything on the host.
 */
#ifndef RT_SANDBOX_FILEOPS_H
#define RT_SANDBOX_FILEOPS_H

#include "sandbox/handle.h"

/* The most entries a listing returns, and its deepest depth.  */
#define RT_LIST_MAX_ENTRIES 10000
#define RT_LIST_MAX_DEPTH 16

/* What rt_guest_entries describes.  */
enum rt_entry_what
{
  RT_ENTRY_BELOW,  /* the entries below the path, up to a depth (a
                      symlink named as the path is followed) */
  RT_ENTRY_SELF,   /* the path itself, a symlink as the link */
  RT_ENTRY_FOLLOW, /* the path itself, a symlink as what it points to */
};

/* FileEntry objects (docs/API.md): {name, path, type (file, directory,
   symlink, other), size, mode ("644"), modifiedAt, symlinkTarget?} in
   *@out, sorted by path; below a file, the file itself.  At most
   RT_LIST_MAX_ENTRIES and 16 MiB of the guest's output (*@truncated then),
   and RT_LIST_MAX_DEPTH levels.
   Errors: "usage", "file_not_found".  */
int rt_guest_entries (rt_sandbox *sb, const char *path, unsigned depth, enum rt_entry_what what, json_object **out,
                      bool *truncated, rt_error **err);

/* Adds to @arr a FileEntry for each record of find's "-printf '%y %s %m
   %T@ %p\\0%l\\0'" in @buf (@len bytes, from the guest: records that are
   not so are skipped), at most @max; true when more followed.  */
bool rt_guest_parse_entries (const char *buf, size_t len, size_t max, json_object *arr);

/* Writes a file of @size bytes with @mode (0–07777), its parents made,
   replacing what was there by a rename: from @data when not NULL, else
   from @fd (rt_exec_stdin_fd).  Nothing lands unless all @size bytes came.
   Errors: "usage", "is_a_directory", "file_not_found" (a parent is not a
   directory), "permission_denied".  */
int rt_guest_write (rt_sandbox *sb, const char *path, unsigned mode, const void *data, int fd, uint64_t size,
                    rt_error **err);

/* Errors: "conflict" (exists and not @parents), "file_not_found" (no
   parent), "permission_denied".  */
int rt_guest_mkdir (rt_sandbox *sb, const char *path, bool parents, rt_error **err);
/* *removed false when nothing was there.  Errors: "conflict" (a directory
   not empty and not @recursive), "permission_denied".  */
int rt_guest_remove (rt_sandbox *sb, const char *path, bool recursive, bool *removed, rt_error **err);
/* Errors: "file_not_found" (@from, or @to's directory), "conflict" (@to
   exists and not @overwrite, or is a directory not empty),
   "permission_denied".  */
int rt_guest_rename (rt_sandbox *sb, const char *from, const char *to, bool overwrite, rt_error **err);

/* A tar (gzip'd when @gzip) of @path to @opts->on_output (stream 1): a
   directory's entries relative to it (./…, as rt_guest_tar_in takes
   them back), or, when @named or @path is not a directory, named from
   its last component.  Errors: "usage", "file_not_found"; "internal"
   when tar failed (the bytes sent so far are a broken archive).  */
int rt_guest_tar_out (rt_sandbox *sb, const char *path, bool gzip, bool named, const rt_exec_opts *opts,
                      rt_error **err);
/* Unpacks the tar (gzip'd when @gzip) read from @fd under directory @path,
   made if missing.  Errors: "usage", "file_not_found", "invalid_request"
   (tar refused the archive), "permission_denied".  */
int rt_guest_tar_in (rt_sandbox *sb, const char *path, bool gzip, int fd, rt_error **err);

#endif
