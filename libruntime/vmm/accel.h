/* accel.h - the accelerator guests run on, and what the host's CPU must
   tell them.  rt_context_accel (runtime.h) decides KVM or TCG.  */
#ifndef RT_ACCEL_H
#define RT_ACCEL_H

/* The host's TSC frequency in kHz, 0 when unknown.  Guests under TCG hang
   at random without it (docs/ARCHITECTURE.md).  */
unsigned long rt_host_tsc_khz (void);

#endif
