/* channel.h - the host's end of the agent protocol (proto.h).  */
#ifndef RT_CHANNEL_H
#define RT_CHANNEL_H

#include "context.h"
#include "proto.h"

struct rt_channel
{
  int fd;
  int vm_pidfd;      /* readable when QEMU exits: the channel is then dead */
  uint32_t next_stream;
  struct rt_frame_reader *reader;
  uint8_t *out;      /* frames waiting to be written */
  size_t out_len, out_alloc;
};

/* Connects to the agent's socket and waits for its HELLO (the guest boots
   meanwhile).  startup_failed when QEMU exits or @timeout_ms passes.  */
int rt_channel_connect (struct rt_channel *ch, const char *sock, int vm_pidfd, int timeout_ms, rt_error **err);

/* Runs one command; see rt_sandbox_exec.  @env is the image's environment,
   to which opts->env is appended.  */
int rt_channel_exec (struct rt_channel *ch, char *const argv[], char *const *env, const char *cwd,
                     const rt_exec_opts *opts, rt_exec_result *res, rt_error **err);

/* Asks the guest to power off; does not wait.  */
int rt_channel_shutdown (struct rt_channel *ch, rt_error **err);

void rt_channel_close (struct rt_channel *ch);

#endif
