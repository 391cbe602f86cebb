/* files.c - a sandbox's files: content, listings, stat, mkdir/remove/
   rename, chunked uploads, archives.
   (no header of its own: handlers.h declares its routes).  */
#include "serve/handlers.h"

SRV_NOT_YET (srv_files_get)
SRV_NOT_YET (srv_files_put)
SRV_NOT_YET (srv_files_list)
SRV_NOT_YET (srv_files_stat)
SRV_NOT_YET (srv_files_verb)
SRV_NOT_YET (srv_upload_begin)
SRV_NOT_YET (srv_upload_chunk)
SRV_NOT_YET (srv_upload_verb)
SRV_NOT_YET (srv_archive_get)
SRV_NOT_YET (srv_archive_put)
