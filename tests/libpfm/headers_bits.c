// pfmfs-test: run=no
/*
 * headers_bits.c: the bit positions of the register layouts of the
 * model-specific headers (pfmlib_<model>.h), which no compile-time check
 * sees: a program sets a field and writes the register's whole value. Each
 * field is set alone, to all ones, and the value must be the field's bits
 * as the processor manuals place them (libpfm 3.10's layouts, LP64). Also
 * the format names, PFM_DFL_SMPL_UUID and pfmlib_popcnt(). HeaderTest
 * compiles it as C99 (-pedantic-errors) and as C++ and runs it: it needs
 * neither the library nor a mount. Prints each mismatch, exits 1 if any.
 */
#include <perfmon/perfmon_dfl_smpl.h>
#include <perfmon/perfmon_pebs_core_smpl.h>
#include <perfmon/perfmon_pebs_p4_smpl.h>
#include <perfmon/perfmon_pebs_smpl.h>
#include <perfmon/pfmlib.h>
#include <perfmon/pfmlib_amd64.h>
#include <perfmon/pfmlib_core.h>
#include <perfmon/pfmlib_coreduo.h>
#include <perfmon/pfmlib_gen_ia32.h>
#include <perfmon/pfmlib_i386_p6.h>
#include <perfmon/pfmlib_intel_atom.h>
#include <perfmon/pfmlib_intel_nhm.h>
#include <perfmon/pfmlib_pentium4.h>

#include <stdio.h>
#include <string.h>

static int failures;
/* all ones, from a variable: assigning it to a bit-field draws no warning */
static volatile unsigned long long ones = ~0ULL;

static void expect(const char *what, unsigned long long got, unsigned long long want)
{
	if (got != want) {
		printf("FAIL %s: 0x%016llx, not 0x%016llx\n", what, got, want);
		failures++;
	}
}

/* reg.FIELD set alone must be bits SHIFT..SHIFT+WIDTH-1 of reg.val */
#define FIELD(type, reg, field, shift, width)                                                  \
	do {                                                                                   \
		type r_;                                                                       \
		memset(&r_, 0, sizeof(r_));                                                    \
		r_.reg.field = ones;                                                           \
		expect(#type "." #reg "." #field, r_.val, ((~0ULL) >> (64 - (width))) << (shift)); \
	} while (0)

/* IA32_PERFEVTSELx (architectural, Core, Core Duo, Atom, Nehalem core) */
#define PERFEVTSEL(type, event, umask, bit21, res2)     \
	do {                                            \
		FIELD(type, perfevtsel, event, 0, 8);   \
		FIELD(type, perfevtsel, umask, 8, 8);   \
		FIELD(type, perfevtsel, sel_usr, 16, 1); \
		FIELD(type, perfevtsel, sel_os, 17, 1); \
		FIELD(type, perfevtsel, sel_edge, 18, 1); \
		FIELD(type, perfevtsel, sel_pc, 19, 1); \
		FIELD(type, perfevtsel, sel_int, 20, 1); \
		FIELD(type, perfevtsel, bit21, 21, 1);  \
		FIELD(type, perfevtsel, sel_en, 22, 1); \
		FIELD(type, perfevtsel, sel_inv, 23, 1); \
		FIELD(type, perfevtsel, sel_cnt_mask, 24, 8); \
		FIELD(type, perfevtsel, res2, 32, 32);  \
	} while (0)

static void intel(void)
{
	PERFEVTSEL(pfm_gen_ia32_sel_reg_t, sel_event_select, sel_unit_mask, sel_any, sel_res2);
	PERFEVTSEL(pfm_core_sel_reg_t, sel_event_select, sel_unit_mask, sel_res1, sel_res2);
	PERFEVTSEL(pfm_coreduo_sel_reg_t, sel_event_select, sel_unit_mask, sel_res1, sel_res2);
	PERFEVTSEL(pfm_intel_atom_sel_reg_t, sel_event_select, sel_unit_mask, sel_any, sel_res2);
	PERFEVTSEL(pfm_nhm_sel_reg_t, sel_event, sel_umask, sel_anythr, sel_res2);

	FIELD(pfm_nhm_sel_reg_t, unc_perfevtsel, usel_event, 0, 8);
	FIELD(pfm_nhm_sel_reg_t, unc_perfevtsel, usel_umask, 8, 8);
	FIELD(pfm_nhm_sel_reg_t, unc_perfevtsel, usel_res1, 16, 1);
	FIELD(pfm_nhm_sel_reg_t, unc_perfevtsel, usel_occ, 17, 1);
	FIELD(pfm_nhm_sel_reg_t, unc_perfevtsel, usel_edge, 18, 1);
	FIELD(pfm_nhm_sel_reg_t, unc_perfevtsel, usel_res2, 19, 1);
	FIELD(pfm_nhm_sel_reg_t, unc_perfevtsel, usel_int, 20, 1);
	FIELD(pfm_nhm_sel_reg_t, unc_perfevtsel, usel_res3, 21, 1);
	FIELD(pfm_nhm_sel_reg_t, unc_perfevtsel, usel_en, 22, 1);
	FIELD(pfm_nhm_sel_reg_t, unc_perfevtsel, usel_inv, 23, 1);
	FIELD(pfm_nhm_sel_reg_t, unc_perfevtsel, usel_cnt_mask, 24, 8);
	FIELD(pfm_nhm_sel_reg_t, unc_perfevtsel, usel_res4, 32, 32);

	/* MSR_LBR_SELECT: the PFM_NHM_LBR_* filter bits are its bits */
	FIELD(pfm_nhm_sel_reg_t, lbr_select, cpl_eq0, 0, 1);
	FIELD(pfm_nhm_sel_reg_t, lbr_select, cpl_neq0, 1, 1);
	FIELD(pfm_nhm_sel_reg_t, lbr_select, jcc, 2, 1);
	FIELD(pfm_nhm_sel_reg_t, lbr_select, near_rel_call, 3, 1);
	FIELD(pfm_nhm_sel_reg_t, lbr_select, near_ind_call, 4, 1);
	FIELD(pfm_nhm_sel_reg_t, lbr_select, near_ret, 5, 1);
	FIELD(pfm_nhm_sel_reg_t, lbr_select, near_ind_jmp, 6, 1);
	FIELD(pfm_nhm_sel_reg_t, lbr_select, near_rel_jmp, 7, 1);
	FIELD(pfm_nhm_sel_reg_t, lbr_select, far_branch, 8, 1);
	FIELD(pfm_nhm_sel_reg_t, lbr_select, reserved1, 9, 23);
	FIELD(pfm_nhm_sel_reg_t, lbr_select, reserved2, 32, 32);

	FIELD(pfm_i386_p6_sel_reg_t, perfsel, sel_event_mask, 0, 8);
	FIELD(pfm_i386_p6_sel_reg_t, perfsel, sel_unit_mask, 8, 8);
	FIELD(pfm_i386_p6_sel_reg_t, perfsel, sel_usr, 16, 1);
	FIELD(pfm_i386_p6_sel_reg_t, perfsel, sel_os, 17, 1);
	FIELD(pfm_i386_p6_sel_reg_t, perfsel, sel_edge, 18, 1);
	FIELD(pfm_i386_p6_sel_reg_t, perfsel, sel_pc, 19, 1);
	FIELD(pfm_i386_p6_sel_reg_t, perfsel, sel_int, 20, 1);
	FIELD(pfm_i386_p6_sel_reg_t, perfsel, sel_res1, 21, 1);
	FIELD(pfm_i386_p6_sel_reg_t, perfsel, sel_en, 22, 1);
	FIELD(pfm_i386_p6_sel_reg_t, perfsel, sel_inv, 23, 1);
	FIELD(pfm_i386_p6_sel_reg_t, perfsel, sel_cnt_mask, 24, 8);
	FIELD(pfm_i386_p6_ctr_reg_t, perfctr, ctr_count, 0, 32);
	FIELD(pfm_i386_p6_ctr_reg_t, perfctr, ctr_res1, 32, 32);

	FIELD(pentium4_escr_value_t, bits, t1_usr, 0, 1);
	FIELD(pentium4_escr_value_t, bits, t1_os, 1, 1);
	FIELD(pentium4_escr_value_t, bits, t0_usr, 2, 1);
	FIELD(pentium4_escr_value_t, bits, t0_os, 3, 1);
	FIELD(pentium4_escr_value_t, bits, tag_enable, 4, 1);
	FIELD(pentium4_escr_value_t, bits, tag_value, 5, 4);
	FIELD(pentium4_escr_value_t, bits, event_mask, 9, 16);
	FIELD(pentium4_escr_value_t, bits, event_select, 25, 6);
	FIELD(pentium4_escr_value_t, bits, reserved, 31, 1);
	FIELD(pentium4_cccr_value_t, bits, reserved1, 0, 12);
	FIELD(pentium4_cccr_value_t, bits, enable, 12, 1);
	FIELD(pentium4_cccr_value_t, bits, escr_select, 13, 3);
	FIELD(pentium4_cccr_value_t, bits, active_thread, 16, 2);
	FIELD(pentium4_cccr_value_t, bits, compare, 18, 1);
	FIELD(pentium4_cccr_value_t, bits, complement, 19, 1);
	FIELD(pentium4_cccr_value_t, bits, threshold, 20, 4);
	FIELD(pentium4_cccr_value_t, bits, edge, 24, 1);
	FIELD(pentium4_cccr_value_t, bits, force_ovf, 25, 1);
	FIELD(pentium4_cccr_value_t, bits, ovf_pmi_t0, 26, 1);
	FIELD(pentium4_cccr_value_t, bits, ovf_pmi_t1, 27, 1);
	FIELD(pentium4_cccr_value_t, bits, reserved2, 28, 2);
	FIELD(pentium4_cccr_value_t, bits, cascade, 30, 1);
	FIELD(pentium4_cccr_value_t, bits, overflow, 31, 1);
}

static void amd(void)
{
	FIELD(pfm_amd64_sel_reg_t, perfsel, sel_event_mask, 0, 8);
	FIELD(pfm_amd64_sel_reg_t, perfsel, sel_unit_mask, 8, 8);
	FIELD(pfm_amd64_sel_reg_t, perfsel, sel_usr, 16, 1);
	FIELD(pfm_amd64_sel_reg_t, perfsel, sel_os, 17, 1);
	FIELD(pfm_amd64_sel_reg_t, perfsel, sel_edge, 18, 1);
	FIELD(pfm_amd64_sel_reg_t, perfsel, sel_pc, 19, 1);
	FIELD(pfm_amd64_sel_reg_t, perfsel, sel_int, 20, 1);
	FIELD(pfm_amd64_sel_reg_t, perfsel, sel_res1, 21, 1);
	FIELD(pfm_amd64_sel_reg_t, perfsel, sel_en, 22, 1);
	FIELD(pfm_amd64_sel_reg_t, perfsel, sel_inv, 23, 1);
	FIELD(pfm_amd64_sel_reg_t, perfsel, sel_cnt_mask, 24, 8);
	FIELD(pfm_amd64_sel_reg_t, perfsel, sel_event_mask2, 32, 4);
	FIELD(pfm_amd64_sel_reg_t, perfsel, sel_res2, 36, 4);
	FIELD(pfm_amd64_sel_reg_t, perfsel, sel_guest, 40, 1);
	FIELD(pfm_amd64_sel_reg_t, perfsel, sel_host, 41, 1);
	FIELD(pfm_amd64_sel_reg_t, perfsel, sel_res3, 42, 22);
	FIELD(pfm_amd64_ctr_reg_t, perfctr, ctr_count, 0, 48);
	FIELD(pfm_amd64_ctr_reg_t, perfctr, ctr_res1, 48, 16);

	FIELD(ibsfetchctl_t, reg, ibsfetchmaxcnt, 0, 16);
	FIELD(ibsfetchctl_t, reg, ibsfetchcnt, 16, 16);
	FIELD(ibsfetchctl_t, reg, ibsfetchlat, 32, 16);
	FIELD(ibsfetchctl_t, reg, ibsfetchen, 48, 1);
	FIELD(ibsfetchctl_t, reg, ibsfetchval, 49, 1);
	FIELD(ibsfetchctl_t, reg, ibsfetchcomp, 50, 1);
	FIELD(ibsfetchctl_t, reg, ibsicmiss, 51, 1);
	FIELD(ibsfetchctl_t, reg, ibsphyaddrvalid, 52, 1);
	FIELD(ibsfetchctl_t, reg, ibsl1tlbpgsz, 53, 2);
	FIELD(ibsfetchctl_t, reg, ibsl1tlbmiss, 55, 1);
	FIELD(ibsfetchctl_t, reg, ibsl2tlbmiss, 56, 1);
	FIELD(ibsfetchctl_t, reg, ibsranden, 57, 1);
	FIELD(ibsfetchctl_t, reg, reserved, 58, 6);

	FIELD(ibsopctl_t, reg, ibsopmaxcnt, 0, 16);
	FIELD(ibsopctl_t, reg, reserved1, 16, 1);
	FIELD(ibsopctl_t, reg, ibsopen, 17, 1);
	FIELD(ibsopctl_t, reg, ibsopval, 18, 1);
	FIELD(ibsopctl_t, reg, ibsopcntl, 19, 1);
	FIELD(ibsopctl_t, reg, reserved2, 20, 44);

	FIELD(ibsopdata_t, reg, ibscomptoretctr, 0, 16);
	FIELD(ibsopdata_t, reg, ibstagtoretctr, 16, 16);
	FIELD(ibsopdata_t, reg, ibsopbrnresync, 32, 1);
	FIELD(ibsopdata_t, reg, ibsopmispreturn, 33, 1);
	FIELD(ibsopdata_t, reg, ibsopreturn, 34, 1);
	FIELD(ibsopdata_t, reg, ibsopbrntaken, 35, 1);
	FIELD(ibsopdata_t, reg, ibsopbrnmisp, 36, 1);
	FIELD(ibsopdata_t, reg, ibsopbrnret, 37, 1);
	FIELD(ibsopdata_t, reg, reserved, 38, 26);

	FIELD(ibsopdata2_t, reg, nbibsreqsrc, 0, 3);
	FIELD(ibsopdata2_t, reg, reserved1, 3, 1);
	FIELD(ibsopdata2_t, reg, nbibsreqdstproc, 4, 1);
	FIELD(ibsopdata2_t, reg, nbibsreqcachehitst, 5, 1);
	FIELD(ibsopdata2_t, reg, reserved2, 6, 58);

	FIELD(ibsopdata3_t, reg, ibsldop, 0, 1);
	FIELD(ibsopdata3_t, reg, ibsstop, 1, 1);
	FIELD(ibsopdata3_t, reg, ibsdcl1tlbmiss, 2, 1);
	FIELD(ibsopdata3_t, reg, ibsdcl2tlbmiss, 3, 1);
	FIELD(ibsopdata3_t, reg, ibsdcl1tlbhit2m, 4, 1);
	FIELD(ibsopdata3_t, reg, ibsdcl1tlbhit1g, 5, 1);
	FIELD(ibsopdata3_t, reg, ibsdcl2tlbhit2m, 6, 1);
	FIELD(ibsopdata3_t, reg, ibsdcmiss, 7, 1);
	FIELD(ibsopdata3_t, reg, ibsdcmissacc, 8, 1);
	FIELD(ibsopdata3_t, reg, ibsdcldbnkcon, 9, 1);
	FIELD(ibsopdata3_t, reg, ibsdcstbnkcon, 10, 1);
	FIELD(ibsopdata3_t, reg, ibsdcsttoldfwd, 11, 1);
	FIELD(ibsopdata3_t, reg, ibsdcsttoldcan, 12, 1);
	FIELD(ibsopdata3_t, reg, ibsdcucmemacc, 13, 1);
	FIELD(ibsopdata3_t, reg, ibsdcwcmemacc, 14, 1);
	FIELD(ibsopdata3_t, reg, ibsdclockedop, 15, 1);
	FIELD(ibsopdata3_t, reg, ibsdcmabhit, 16, 1);
	FIELD(ibsopdata3_t, reg, ibsdclinaddrvalid, 17, 1);
	FIELD(ibsopdata3_t, reg, ibsdcphyaddrvalid, 18, 1);
	FIELD(ibsopdata3_t, reg, reserved1, 19, 13);
	FIELD(ibsopdata3_t, reg, ibsdcmisslat, 32, 16);
	FIELD(ibsopdata3_t, reg, reserved2, 48, 16);
}

static void names(void)
{
	static const unsigned char uuid[16] = PFM_DFL_SMPL_UUID;
	const char *p4 = sizeof(long) == 8 ? "pebs64_p4" : "pebs32_p4";

	expect("PFM_DFL_SMPL_NAME", strcmp(PFM_DFL_SMPL_NAME, "default") == 0, 1);
	expect("PFM_PEBS_CORE_SMPL_NAME", strcmp(PFM_PEBS_CORE_SMPL_NAME, "pebs_core") == 0, 1);
	expect("PFM_PEBS_P4_SMPL_NAME", strcmp(PFM_PEBS_P4_SMPL_NAME, p4) == 0, 1);
	expect("PFM_PEBS_SMPL_NAME", strcmp(PFM_PEBS_SMPL_NAME, "pebs") == 0, 1);
	expect("PFM_DFL_SMPL_UUID[0..3]", (unsigned long long)uuid[0] << 24 | uuid[1] << 16 | uuid[2] << 8 | uuid[3],
	       0xd139b29eULL);
	expect("PFM_DFL_SMPL_UUID[12..15]",
	       (unsigned long long)uuid[12] << 24 | uuid[13] << 16 | uuid[14] << 8 | uuid[15], 0x8792e937ULL);
	expect("pfmlib_popcnt(0)", pfmlib_popcnt(0), 0);
	expect("pfmlib_popcnt(0x5)", pfmlib_popcnt(0x5UL), 2);
	expect("pfmlib_popcnt(~0UL)", pfmlib_popcnt(~0UL), sizeof(unsigned long) * 8);
}

int main(void)
{
	intel();
	amd();
	names();
	printf("%s: %d mismatch(es)\n", failures ? "FAIL" : "ok", failures);
	return failures != 0;
}
