/* channel.h - the host's end of the agent protocol (proto.h).  */
#ifndef RT_CHANNEL_H
#define RT_CHANNEL_H

#include "core/context.h"
#include "common/proto.h"
#include "vmm/console.h"

struct rt_channel
{
  int fd;
  int vm_pidfd;      /* readable when QEMU exits: the channel is then dead */
  struct rt_frame_reader *reader;
};

/* Connects to the agent's socket and waits for its HELLO (the guest boots
   meanwhile, its console drained into @con's log unless NULL).
   startup_failed when QEMU exits or @timeout_ms passes.  */
int rt_channel_connect (struct rt_channel *ch, const char *sock, int vm_pidfd, struct rt_console *con, int timeout_ms,
                        rt_error **err);

void rt_channel_close (struct rt_channel *ch);

#endif
