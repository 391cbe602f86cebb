/* images.c - image builds from recipes, their logs, listing, removal.
   (no header of its own: handlers.h declares its routes).  */
#include "serve/handlers.h"

SRV_NOT_YET (srv_image_build)
SRV_NOT_YET (srv_image_list)
SRV_NOT_YET (srv_image_get)
SRV_NOT_YET (srv_image_logs)
SRV_NOT_YET (srv_image_verb)
