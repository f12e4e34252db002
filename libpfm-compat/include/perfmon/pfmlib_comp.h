/*
 * <perfmon/pfmlib_comp.h>: compiler helpers of libpfm 3.10 (pfmlib_popcnt),
 * from the header of the architecture compiled for. <perfmon/pfmlib.h>
 * includes it; the per-architecture headers refuse to be included without it.
 *
 * pfmfs keeps the x86-64 interface on every architecture it builds on, so a
 * target that is not 32-bit x86 takes <perfmon/pfmlib_comp_x86_64.h> (libpfm
 * 3.10 had a header per architecture; it installed these two on x86-64).
 */
#ifndef PFMFS_PERFMON_PFMLIB_COMP_H
#define PFMFS_PERFMON_PFMLIB_COMP_H
#define __PFMLIB_COMP_H__	/* libpfm 3.10's guard, tested by the headers below */

#if defined(__i386__)
#include "pfmlib_comp_i386.h"
#else
#include "pfmlib_comp_x86_64.h"
#endif

#endif /* PFMFS_PERFMON_PFMLIB_COMP_H */
