/* python.h - run_python, the chat's tool (and rt_run_python's body).  */
#ifndef RT_LLM_PYTHON_H
#define RT_LLM_PYTHON_H

#include "common/util.h"

/* rt_run_python with @o's image, timeouts and Ctrl-C (@o->cancel_fd).  */
int rt_chat_run_python (rt_context *ctx, const rt_chat_opts *o, const char *code, const char *const *packages,
                        char **result_json, int64_t *charged_micros, rt_error **err);

#endif
