/*
 * <perfmon/perfmon_x86_64.h>: the register limits perfmon2 declares for
 * x86-64, as libpfm 3.10 installed them: those of <perfmon/perfmon_i386.h>,
 * which both architectures share. <perfmon/perfmon.h> includes it.
 */
#ifndef PFMFS_PERFMON_PERFMON_X86_64_H
#define PFMFS_PERFMON_PERFMON_X86_64_H
#define _PERFMON_X86_64_H_	/* libpfm 3.10's guard, which programs may test */

#include "perfmon_i386.h"

#endif /* PFMFS_PERFMON_PERFMON_X86_64_H */
