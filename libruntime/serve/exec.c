/* exec.c - exec (JSON and NDJSON streams) and background processes.
   (no header of its own: handlers.h declares its routes).  */
#include "serve/handlers.h"

SRV_NOT_YET (srv_exec)
SRV_NOT_YET (srv_process_spawn)
SRV_NOT_YET (srv_process_list)
SRV_NOT_YET (srv_process_get)
SRV_NOT_YET (srv_process_output)
SRV_NOT_YET (srv_process_write)
SRV_NOT_YET (srv_process_signal)
