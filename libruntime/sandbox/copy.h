/* copy.h - the two ends of `cp` that do not depend on how the tar travels:
   the guarded extraction of a copy out and the archiver of a copy in,
   shared by the local copy (copy.c, through the monitor) and client mode
   (remote/files.c, over HTTP).  */
#ifndef RT_SANDBOX_COPY_H
#define RT_SANDBOX_COPY_H

#include "common/util.h"

/* A copy out under way: its extractor and where it lands.  */
struct rt_copy_sink;

/* Starts a copy out of sandbox path @src to host path @dst: a private
   temp dir beside the target, an extractor (sandbox/unpack.h) in it.  */
int rt_copy_out_start (const char *src, const char *dst, const rt_copy_opts *opts, struct rt_copy_sink **out,
                       rt_error **err);
/* An rt_output_fn taking the tar (stream 1) and the sender's complaints
   (stream 2); <0 once the extractor gave up.  */
int rt_copy_out_feed (void *sink, int stream, const char *buf, size_t len);
/* Ends the copy whatever @ret (the transfer's outcome) and @res say:
   lands it when whole, else leaves nothing; frees @sink.  */
int rt_copy_out_finish (struct rt_copy_sink *sink, int ret, const rt_exec_result *res, const char *src,
                        rt_copy_result *result, rt_error **err);

/* Host @src checked (a symlink only with @follow), resolved (*abs) and
   named (*name) as a copy in takes it.  */
int rt_copy_in_source (const char *src, bool follow, char **abs, char **name, rt_error **err);
/* Forks a child writing @abs (a file or a tree) as a tar whose names start
   at @name into @into (a FIFO, or a file); its complaint comes back on
   *errfd.  @into is removed on failure.  */
int rt_copy_in_archiver (const char *into, const char *abs, const char *name, int *errfd, pid_t *pid, rt_error **err);
/* Waits for such a child: its exit status, or 128 + its signal.  */
int rt_copy_wait_child (pid_t pid);

/* The local driver (public/driver.h): these do what include/runtime.h
   says of their rt_ names, on this machine.  */
int rt_local_sandbox_copy_in (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts, const char *user,
                              rt_error **err);
int rt_local_sandbox_copy_out (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts,
                               rt_copy_result *res, rt_error **err);

#endif
