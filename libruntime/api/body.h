/* body.h - what the route handlers share to read a JSON body's lists and
   maps into the library's NULL-terminated strings, naming every wrong
   entry (docs/API.md: details.issues).  */
#ifndef RT_SERVE_BODY_H
#define RT_SERVE_BODY_H

#include "serve/server.h"

/* Adds {"path": @path, "message": @msg} to @issues.  */
void srv_issue (json_object *issues, const char *path, const char *msg);
/* "k=v" of a JSON object of strings (@obj NULL: NULL); a value that is not
   a string is an issue at @field.k.  */
char **srv_pairs_of (json_object *obj, const char *field, json_object *issues);
/* The strings of a JSON array (@arr NULL: NULL), at most @max of them
   (0: no limit); an entry that is not a string, or one past @max, is an
   issue at @field[i].  */
char **srv_strings_of (json_object *arr, const char *field, size_t max, json_object *issues);
/* When @issues holds any: replies 400 invalid_request naming them all and
   returns true.  */
bool srv_reply_issues (struct srv_req *r, json_object *issues);
/* The items of @all (taken) whose string fields match the list filters
   of @r: @pairs is { query parameter, field, …, NULL }, and an item is
   kept when, for each parameter given, its field is that value.  */
json_object *srv_filter (struct srv_req *r, json_object *all, const char *const pairs[]);

#endif
