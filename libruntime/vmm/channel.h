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

/* Only connects (QEMU may still be creating the socket), by @deadline
   (rt_now_ms).  */
int rt_channel_open (struct rt_channel *ch, const char *sock, int vm_pidfd, struct rt_console *con, uint64_t deadline,
                     rt_error **err);
/* Reads what is there into the frame reader without blocking.  Return: 1,
   0 on EOF, <0 with @err set.  */
int rt_channel_read (struct rt_channel *ch, rt_error **err);
/* A control payload from the guest, if it is one JSON object; else NULL.  */
json_object *rt_channel_parse_json (const uint8_t *payload, uint32_t len);

void rt_channel_close (struct rt_channel *ch);

#endif
