/* runtime/files.h - files in a sandbox: cat, listing, copies in and out.
 *
 * A part of <runtime.h>, which callers include (not this file) and whose
 * top comment tells the conventions: errors, handles, who frees what.  It
 * includes the parts it needs, so it also compiles alone.
 */
#ifndef RUNTIME_FILES_H
#define RUNTIME_FILES_H

#include "exec.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * rt_sandbox_cat - stream a file's bytes out of the sandbox
 * @sb:   the sandbox
 * @path: absolute path in the sandbox
 * @opts: on_output/data receive the bytes (stream 1); cancel_fd as for exec
 * @err:  "usage" (relative path), "file_not_found", "is_a_directory"
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_cat (rt_sandbox *sb, const char *path, const rt_exec_opts *opts, rt_error **err);

/**
 * rt_sandbox_files_json - list a directory (or one file) in the sandbox
 * @sb:    the sandbox
 * @path:  absolute path
 * @depth: how many levels below @path (1: its entries)
 * @json:  set to a JSON array of {type ("d"|"l"|"-"), size, path}, sorted
 * @err:   "usage" (relative path), "file_not_found"
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_files_json (rt_sandbox *sb, const char *path, unsigned depth, char **json, rt_error **err);

/* The default of rt_copy_opts.max_size: 10 GiB.  */
#define RT_COPY_MAX_SIZE_DEFAULT (10ULL << 30)

/**
 * rt_copy_opts - how to copy; all-zero (or NULL) means the defaults
 * @cancel_fd:  when readable, the copy stops and leaves nothing
 *              ("interrupted"); -1 (or 0) for none
 * @follow:     in: a symlink named as the source is copied as what it
 *              points to (refused otherwise)
 * @keep_links: out: the copied item may itself be a symlink (refused
 *              otherwise); symlinks inside it must stay inside it either way
 * @max_size:   out: at most this many bytes land, counted as the archive
 *              does (file bytes plus 512 per entry); 0 means
 *              RT_COPY_MAX_SIZE_DEFAULT
 */
typedef struct rt_copy_opts
{
  int cancel_fd;
  bool follow;
  bool keep_links;
  uint64_t max_size;
} rt_copy_opts;

/**
 * rt_copy_result - what a copy out wrote, and what it left out
 * @bytes:     file bytes written
 * @skipped:   entries not written: the sum of the counts below
 * @devices:   block and character device nodes
 * @fifos:     FIFOs
 * @links:     symlinks whose target leaves the copied tree (absolute ones
 *             always do)
 * @hardlinks: hard links to anything but a file copied before them
 * @others:    entries outside the copied item, unsafe names, other types
 */
typedef struct rt_copy_result
{
  uint64_t bytes;
  unsigned skipped;
  unsigned devices;
  unsigned fifos;
  unsigned links;
  unsigned hardlinks;
  unsigned others;
} rt_copy_result;

/**
 * rt_sandbox_copy_in - copy a host file or directory into the sandbox
 * @sb:   the sandbox
 * @src:  host path (a directory is copied whole, modes kept; symlinks in
 *        it are copied as symlinks)
 * @dst:  absolute sandbox path; an existing directory receives @src by name
 * @opts: cancel_fd, follow; NULL for the defaults
 * @err:  "usage", "file_not_found" (either side), "invalid_request" (@src
 *        is a symlink and @opts->follow is not set), "interrupted"
 * Streamed as a tar archive; the copy lands under its name only when whole.
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_copy_in (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts, rt_error **err);

/**
 * rt_sandbox_copy_in_as - rt_sandbox_copy_in, written in the sandbox by @user
 * @sb:   as rt_sandbox_copy_in's
 * @src:  as rt_sandbox_copy_in's
 * @dst:  as rt_sandbox_copy_in's
 * @opts: as rt_sandbox_copy_in's
 * @user: "runtime" (NULL: the default, as rt_sandbox_copy_in) or "root"
 * @err:  as rt_sandbox_copy_in's
 * A directory @user may not write is "permission_denied", before anything
 * is sent; "root" through a server is "unsupported_remote".  Since
 * LIBRUNTIME_0.2 (rt_copy_opts stays as 0.1 laid it out).
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_copy_in_as (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts,
                           const char *user, rt_error **err);

/**
 * rt_sandbox_copy_out - copy a sandbox file or directory to the host
 * @sb:   the sandbox
 * @src:  absolute sandbox path
 * @dst:  host path; an existing directory receives @src by name
 * @opts: cancel_fd, keep_links, max_size; NULL for the defaults
 * @res:  filled with the bytes written and the entries skipped; may be NULL
 * @err:  "usage", "file_not_found", "download_incomplete" (cut short,
 *        larger than @opts->max_size, or no room on the host's disk),
 *        "invalid_request" (@src is a symlink and @opts->keep_links is
 *        not set), "interrupted"
 * The guest is not trusted: only regular files, directories and symlinks
 * that stay inside the copy are written, without setuid, setgid or sticky
 * bits and within the caller's umask; the rest is skipped and counted in
 * @res.  Written into a private directory and renamed when complete: a
 * copy that fails never appears under @dst.
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_copy_out (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts,
                         rt_copy_result *res, rt_error **err);

#ifdef __cplusplus
}
#endif

#endif
