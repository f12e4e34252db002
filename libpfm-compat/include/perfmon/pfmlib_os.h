/*
 * <perfmon/pfmlib_os.h>: what libpfm 3.10's event-encoding header takes from
 * the operating system, from the header of the architecture compiled for:
 * <perfmon/perfmon.h>, with pfm_self_start() and pfm_self_stop().
 * <perfmon/pfmlib.h> includes it; the per-architecture headers refuse to be
 * included without it.
 *
 * A source file that defines __PFMLIB_OS_COMPILE before including it gets
 * neither perfmon.h nor the two inline calls (libpfm 3.10 compiled its own
 * sources so); see <perfmon/pfmlib_os_x86_64.h>.
 *
 * pfmfs keeps the x86-64 interface on every architecture it builds on, so a
 * target that is not 32-bit x86 takes <perfmon/pfmlib_os_x86_64.h>.
 */
#ifndef PFMFS_PERFMON_PFMLIB_OS_H
#define PFMFS_PERFMON_PFMLIB_OS_H
#define __PFMLIB_OS_H__	/* libpfm 3.10's guard, tested by the headers below */

#if defined(__i386__)
#include "pfmlib_os_i386.h"
#else
#include "pfmlib_os_x86_64.h"
#endif

#endif /* PFMFS_PERFMON_PFMLIB_OS_H */
