/* root.h - setting up the new root: mounts, host name, network, disk size.  */
#ifndef AGENT_ROOT_H
#define AGENT_ROOT_H

#include "agent.h"

/* A host name the agent accepts: 1-64 of [A-Za-z0-9.-], not starting
   with '-' or '.'.  */
bool hostname_valid (const char *s);
/* Creates or truncates @path (not through a link) with @text.  */
int write_file (const char *path, const char *text);
/* rt.net=GUEST,GATEWAY; sets ag->proxy_url.  */
void setup_net (struct agent *ag, const char *spec);
void setup_root (const struct agent *ag);
void grow_root (void);

#endif
