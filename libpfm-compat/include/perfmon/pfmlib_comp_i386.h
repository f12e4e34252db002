/*
 * <perfmon/pfmlib_comp_i386.h>: libpfm 3.10's compiler helpers for 32-bit
 * x86. Only <perfmon/pfmlib_comp.h> includes it, as in libpfm 3.10: included
 * directly, or for another architecture, it stops the build.
 */
#ifndef PFMFS_PERFMON_PFMLIB_COMP_I386_H
#define PFMFS_PERFMON_PFMLIB_COMP_I386_H
#define __PFMLIB_COMP_I386_P6_H__	/* libpfm 3.10's guard, which programs may test */

#ifndef __PFMLIB_COMP_H__
#error "<perfmon/pfmlib_comp_i386.h> is not to be included directly: include <perfmon/pfmlib_comp.h>"
#endif

#if !defined(__i386__)
#error "<perfmon/pfmlib_comp_i386.h> is for another architecture: this one is for 32-bit x86 only"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* the number of bits set in v */
static inline unsigned long
pfmlib_popcnt(unsigned long v)
{
	unsigned long n = 0;

	for (; v != 0; v &= v - 1)	/* clears the lowest set bit */
		n++;
	return n;
}

#ifdef __cplusplus
}
#endif

#endif /* PFMFS_PERFMON_PFMLIB_COMP_I386_H */
