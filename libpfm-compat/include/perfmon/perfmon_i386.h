/*
 * <perfmon/perfmon_i386.h>: the register limits perfmon2 declares for 32-bit
 * x86, as libpfm 3.10 installed them. They are the x86-64 limits on purpose:
 * a 32-bit and a 64-bit program then pass bitvectors (and structures) of the
 * same size. <perfmon/perfmon.h> includes this file (through
 * <perfmon/perfmon_x86_64.h> on x86-64) and builds PFM_MAX_PMCS/PMDS on it.
 */
#ifndef PFMFS_PERFMON_PERFMON_I386_H
#define PFMFS_PERFMON_PERFMON_I386_H
#define _PERFMON_I386_H_	/* libpfm 3.10's guard, which programs may test */

/* 256 hardware registers, then 64 virtual ones, of each kind */
#define PFM_ARCH_MAX_PMCS	(256+64)
#define PFM_ARCH_MAX_PMDS	(256+64)

#endif /* PFMFS_PERFMON_PERFMON_I386_H */
