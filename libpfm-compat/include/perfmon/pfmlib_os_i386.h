/*
 * <perfmon/pfmlib_os_i386.h>: the operating-system part of libpfm 3.10's
 * event-encoding header for 32-bit x86. Only <perfmon/pfmlib_os.h> includes
 * it, as in libpfm 3.10: included directly, or for another architecture, it
 * stops the build.
 */
#ifndef PFMFS_PERFMON_PFMLIB_OS_I386_H
#define PFMFS_PERFMON_PFMLIB_OS_I386_H
#define __PFMLIB_OS_I386_P6_H__	/* libpfm 3.10's guard, which programs may test */

#ifndef __PFMLIB_OS_H__
#error "<perfmon/pfmlib_os_i386.h> is not to be included directly: include <perfmon/pfmlib_os.h>"
#endif

#include "pfmlib_comp.h"

#if !defined(__i386__)
#error "<perfmon/pfmlib_os_i386.h> is for another architecture: this one is for 32-bit x86 only"
#endif

/*
 * The perfmon2 interface, with pfm_self_start(fd) and pfm_self_stop(fd):
 * inline shorthands of pfm_start(fd, NULL) and pfm_stop(fd) for a context
 * that monitors the calling thread (not for a system-wide one). libpfm 3.10
 * defined the two here; pfmfs defines them in <perfmon/perfmon_v2.h>, so
 * that a program that includes only <perfmon/perfmon.h> has them too, and
 * they are defined once whichever of the headers come first.
 *
 * With __PFMLIB_OS_COMPILE defined, nothing is included or defined: the
 * source file may then define the two as functions of its own.
 */
#ifndef __PFMLIB_OS_COMPILE
#include "perfmon.h"
#endif

#endif /* PFMFS_PERFMON_PFMLIB_OS_I386_H */
