/* intercept.h - TLS interception for hosts bound to a secret.
 *
 * The egress proxy terminates TLS only where a secret may be swapped in:
 * toward the guest it presents a certificate for the host, minted here and
 * signed by a per-install CA that every sandbox with secrets trusts; toward
 * the real server it is an ordinary client that verifies the server's
 * certificate for that name against the host's own trust (OpenSSL's
 * defaults: the system bundle, or $SSL_CERT_FILE / $SSL_CERT_DIR).  A value
 * therefore only ever reaches a server that proved to be the bound host.
 *
 * The CA lives in <data>/ca/: egress-ca.pem, and egress-ca.key (mode 0600),
 * made at first use.
 */
#ifndef RT_INTERCEPT_H
#define RT_INTERCEPT_H

#include <openssl/ssl.h>

#include "core/context.h"
#include "common/proto.h"
#include "net/secrets.h"

/* The CA's certificate (PEM, malloc'd), made now when there is none.  */
int rt_egress_ca_ensure (rt_context *ctx, char **pem, rt_error **err);

struct rt_intercept;

/* For one sandbox; @given: its secrets as NAME=placeholder (borrowed: it
   must outlive the interceptor).  */
struct rt_intercept *rt_intercept_new (rt_context *ctx, char *const *given, rt_error **err);
void rt_intercept_free (struct rt_intercept *ic);

/* The bindings for @host now (see rt_secret_bindings); none: tunnel it
   untouched.  */
int rt_intercept_bindings (struct rt_intercept *ic, const char *host, struct rt_secret_binding **b, size_t *n,
                           rt_error **err);

/* The guest's side: a server SSL presenting a certificate for @host.  */
SSL *rt_intercept_guest_ssl (struct rt_intercept *ic, const char *host);
/* The real server's side: SNI @host, the certificate checked for @host.  */
SSL *rt_intercept_server_ssl (struct rt_intercept *ic, const char *host);

#endif
