/* oneshot.h - the benchmark modes: rt.cmd and rt.rawbench.  */
#ifndef AGENT_ONESHOT_H
#define AGENT_ONESHOT_H

#include <stdint.h>
#include <sys/types.h>

#include "agent.h"

/* Decodes base64 (standard or URL alphabet, padding optional) into out,
   which must hold strlen(in) bytes.  Return: length, or -1.  */
ssize_t b64_decode (const char *in, uint8_t *out);
void run_once (const char *b64, const char *proxy_url) __attribute__ ((noreturn));
void rawbench (const char *arg) __attribute__ ((noreturn));

#endif
