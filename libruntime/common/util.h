/* util.h - small file, process and JSON helpers of the library; includes
   the parts the guest agent shares (cleanup.h, clock.h, strutil.h, sys.h).  */
#ifndef RT_UTIL_H
#define RT_UTIL_H

#include <dirent.h>
#include <json-c/json.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include "runtime.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/strutil.h"
#include "common/sys.h"

static inline void
cleanup_errorp (rt_error **e)
{
  rt_error_free (*e);
}

#define cleanup_error __attribute__ ((cleanup (cleanup_errorp)))

/* error.c */
int rt_error_set (rt_error **err, int status, const char *code, const char *fmt, ...) RT_PRINTF (4, 5);
/* Sets a hint on an error already set; returns err's status negated.  */
int rt_error_hint (rt_error **err, const char *fmt, ...) RT_PRINTF (2, 3);
int rt_error_oom (rt_error **err);

/* util.c */
/* Reads a whole file; *out is NUL-terminated.  */
int rt_read_file (const char *path, char **out, size_t *len, rt_error **err);
/* Writes a file through a temp name and rename, so readers never see half.  */
int rt_write_file_atomic (const char *path, const void *data, size_t len, mode_t mode, rt_error **err);
/* rt_write_file_atomic of @o pretty-printed, mode 0600 (a umask only
   takes bits away): the stores holding values (secrets, tokens).  */
int rt_write_json_private (const char *path, json_object *o, rt_error **err);
int rt_mkdir_p (const char *path, mode_t mode, rt_error **err);
/* Copies @src to the new file @dst (0600, O_EXCL) by copy_file_range.  */
int rt_copy_file (const char *src, const char *dst, rt_error **err);
/* Removes a tree; missing is fine.  */
int rt_rm_rf (const char *path, rt_error **err);

/* A listing of the directory @fd through a descriptor of its own (@fd
   stays the caller's, its position untouched).  Return: the DIR, or NULL
   with errno set.  */
DIR *rt_opendir_at (int fd);
/* Finds an executable in $PATH; NULL when absent.  */
char *rt_find_program (const char *name);
/* Runs argv with stdout+stderr captured into *output (may be NULL); returns
   the exit status (>= 0) or a negative errno when it could not run.  */
/* Starts @argv (PATH searched) with stdin from /dev/null and stdout and
   stderr into one pipe, whose read end is *@out_fd (O_CLOEXEC); the caller
   reads it, closes it and reaps *@pid.  */
int rt_spawn_piped (char *const argv[], pid_t *pid, int *out_fd, rt_error **err);
/* Forks a detached process for background work: a double fork (nobody's
   child), its own session, stdio on /dev/null, none of the caller's other
   fds, an environment of PATH and the few variables the library reads
   later (RUNTIME_RESOLVE, RUNTIME_POOL_MAX_MIB, the CA paths), not dumpable, SIGINT, SIGHUP and
   SIGPIPE ignored.  Return: 0 in that process
   (which must _exit), 1 in the caller, -1 when fork failed.  */
int rt_detach (void);
int rt_run_capture (char *const argv[], char **output, rt_error **err);
/* Last `lines` lines of a text file, for error messages.  */
char *rt_file_tail (const char *path, int lines);
/* The start time of a process (clock ticks since boot, /proc/PID/stat
   field 22), 0 when it does not exist: with the pid it names a process
   uniquely, where a pid alone may be reused.  0 for a zombie too.  */
unsigned long long rt_proc_starttime (pid_t pid);
/* Opens (creating) and flocks @path exclusively; *out is the held fd.  */
int rt_lock_file (const char *path, int *out, rt_error **err);
/* A close-on-exec unix stream socket listening at @path (a stale socket
   there is replaced); @flags: 0 or SOCK_NONBLOCK.  Return: the fd, or <0
   with @err set ("startup_failed").  */
int rt_listen_unix (const char *path, int flags, rt_error **err);

/* The highest capability this kernel knows (/proc/sys/kernel/cap_last_cap),
   CAP_LAST_CAP of our headers when /proc does not say: what the jail
   (vmm/jail.c) and the monitor (vmm/privs.c) drop from the bounding
   set.  */
unsigned rt_cap_last (void);
/* Makes @dir and locks @dir/.lock.  */
int rt_lock_dir (const char *dir, int *out, rt_error **err);
/* Removes the entries of @dir matching the fnmatch @pattern: leftovers of
   a process that died in a slow step.  Call with the dir's lock held.  */
void rt_remove_matching (const char *dir, const char *pattern);
/* The reason phrase of HTTP @status (RFC 9110, and 429 of RFC 6585),
   what the server and the monitor send: libevent knows none past 417.  */
const char *rt_http_reason (int status);
/* The string at @key of a JSON object, or NULL.  */
const char *rt_json_str (json_object *o, const char *key);
/* @o's integer member @key, or 0 when it is missing or not an integer.  */
int64_t rt_json_i64 (json_object *o, const char *key);
/* {"error":{"code","message","hint"}} (the API's and the sync pipe's
   shape) into @err; returns -EIO, or 0 when @o holds no error.  */
int rt_error_from_json (json_object *o, rt_error **err);
/* Hex SHA-256 of a file.  */
int rt_sha256_file (const char *path, char out[65], rt_error **err);
/* @n bytes as 2n lower-case hex digits and a NUL.  */
void rt_hex (const unsigned char *bytes, size_t n, char *out);
void rt_sha256_hex (const void *data, size_t len, char out[65]);

#endif
