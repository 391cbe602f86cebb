/* secrets.c - egress secrets: set, list (never a value), remove.
   (no header of its own: handlers.h declares its routes).  */
#include "serve/handlers.h"

SRV_NOT_YET (srv_secret_list)
SRV_NOT_YET (srv_secret_put)
SRV_NOT_YET (srv_secret_delete)
