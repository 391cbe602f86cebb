/* state.h - a sandbox's state names compared through enum
   rt_sandbox_state (include/runtime/sandbox.h), whose names and parse are
   state.c's: a typo in a name is then a compile error, not a state that
   never matches.  */
#ifndef RT_CORE_STATE_H
#define RT_CORE_STATE_H

#include "runtime.h"

/* True when @name (NULL allowed) is the name of @state.  */
bool rt_state_is (const char *name, enum rt_sandbox_state state);

#endif
