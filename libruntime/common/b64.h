/* b64.h - base64 (RFC 4648's alphabet, padded, no line breaks): what the
   API, the monitor's lines and its saved state carry bytes in.  */
#ifndef RT_B64_H
#define RT_B64_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The characters of @n bytes encoded, without the NUL.  */
#define RT_B64_ENCODED_LEN(n) (4 * (((size_t) (n) + 2) / 3))
/* The most bytes @n characters decode to: the room rt_b64_decode needs.  */
#define RT_B64_DECODED_MAX(n) ((size_t) (n) / 4 * 3)

/* @len bytes of @data (NULL when @len is 0) into @out, which has room for
   RT_B64_ENCODED_LEN (@len) + 1, with a NUL.  Return: the characters
   written, without the NUL.  */
size_t rt_b64_encode_into (char *out, const void *data, size_t len);
/* The same as a new string; NULL without memory.  */
char *rt_b64_encode (const void *data, size_t len);
/* The same as a JSON string; NULL without memory.  */
json_object *rt_b64_json (const void *data, size_t len);
/* @n characters of @s decoded into @out (room for RT_B64_DECODED_MAX
   (@n)).  Only the alphabet, a length that is a multiple of 4 and at most
   two '=' at the end are base64: nothing else is taken (no whitespace, no
   '=' inside).  Return: the bytes decoded, or -1 when @s is not base64.  */
ssize_t rt_b64_decode (const char *s, size_t n, void *out);
/* The same into a new buffer in *@out (free it; one spare byte past
   *@len).  Return: 0, -EINVAL when @s is not base64, -ENOMEM.  */
int rt_b64_decode_alloc (const char *s, size_t n, uint8_t **out, size_t *len);

#endif
