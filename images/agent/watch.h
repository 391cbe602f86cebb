/* watch.h - a directory watch on inotify, the guest's half of the API's
 * file watches (docs/API.md: not served yet; nothing in the agent's loop
 * calls it yet).  One inotify instance a watch, reading its root and,
 * when recursive, every directory below it (those made later too), and
 * turning what inotify says into the SDK's events (its products/watch.ts):
 * create, write (writes to one path in a row folded, with a count),
 * remove, rename (from and to paired by their cookie, with oldPath) and
 * chmod, each with its absolute path and isDir.
 *
 * Bounded, so that a flood in the sandbox costs the agent a fixed amount:
 * at most WATCH_MAX_DIRS directories followed (past that, a "limit"
 * notice once and no more), at most WATCH_MAX_EVENTS events queued until
 * taken (past that, events are counted as dropped and the next take
 * answers an "overflow" notice, as inotify's own IN_Q_OVERFLOW does,
 * which is answered so too with reason "kernel"), paths at most PATH_MAX.
 * The root removed or moved ends the watch ("root-removed").
 */
#ifndef AGENT_WATCH_H
#define AGENT_WATCH_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent.h"

#define WATCH_MAX_DIRS 4096
#define WATCH_MAX_EVENTS 1024

struct watch;

/* A watch of the directory @root (absolute), and of every directory below
   it when @recursive; 0, or a negative errno (-ENOTDIR, -ENOENT, -EMFILE
   when inotify refused, -EINVAL for a path not absolute).  */
int watch_open (const char *root, bool recursive, struct watch **out);
void watch_free (struct watch *w);
/* Its inotify descriptor (non-blocking), for poll().  */
int watch_fd (const struct watch *w);
/* Reads what inotify has queued into the watch's events: 0 (nothing more
   now), or a negative errno.  */
int watch_read (struct watch *w);
/* The events queued since the last take, oldest first, as
   {"k":"events","events":[…]} and, before it, any notice ({"k":
   "overflow","dropped":N,"reason":"rate"|"kernel"}, {"k":"limit",
   "watches":N}, {"k":"end","reason":"root-removed"}): a JSON array of
   those objects, the caller's; an empty array when nothing happened.  */
json_object *watch_take (struct watch *w);
/* The root went: nothing more will come.  */
bool watch_ended (const struct watch *w);

#endif
