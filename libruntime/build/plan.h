/* plan.h - a build's plan: its recipe (runtime.json) and flags turned
   into steps and an environment (build/plan.c).  */
#ifndef RT_BUILD_PLAN_H
#define RT_BUILD_PLAN_H

#include "build/build.h"

/* <@dir>/runtime.json, refused when it is not an object or has a key we
   do not know.  */
int rt_build_read_recipe (const char *dir, json_object **out, rt_error **err);
/* The steps of @recipe (may be NULL) and the flags, in their fixed order:
   files, apt, pip, npm, commands.  */
int rt_build_plan (struct build *b, json_object *recipe, rt_error **err);
/* b->env: @base's (the parent image's), then the recipe's, then --env;
   later names win.  */
int rt_build_merge_env (struct build *b, json_object *base, json_object *recipe, const char *const *flags,
                        rt_error **err);

#endif
