/* exec-result.h - how a command ended (rt_exec_result) read from JSON and
   written back: the agent's EXIT frame, the monitor's exit line and last
   session frame, the API's exit event.  The guest writes the first of
   these, so each reader goes through the one function and sees the same
   exit for the same frame.  */
#ifndef RT_EXEC_RESULT_H
#define RT_EXEC_RESULT_H

#include "common/util.h"

/* @o's exitCode, signal, timedOut and durationMs into @res, each checked:
   an exitCode is an integer 0..255, else 255 (128+signal when it is
   missing and a signal ended the command); a signal an integer 1..127 or
   a name ("KILL", "SIGKILL"), else 0; a timeout (timedOut true, or the
   API's state "timed_out") makes the exit 124; a duration below 0 is 0.
   @o may be NULL (a payload that was not a JSON object): exit 255.
   @res->interrupted is left as it is.  */
void rt_exec_result_from_json (json_object *o, rt_exec_result *res);
/* @res's exitCode, signal, timedOut and durationMs added to @o.  */
void rt_exec_result_to_json (const rt_exec_result *res, json_object *o);

#endif
