// pfmfs-test: run=no
/*
 * headers_c.c: the installed perfmon headers as a perfmon2 program sees them,
 * checked at compile time: the size and the offset of the fields of every
 * ABI structure (x86-64 layouts of libpfm 3.10, docs/libpfm-compat.md), the
 * constants, and the exact prototype of every call. The driver compiles it
 * (-c, -Wall -Wextra -Werror) as C99 and C11 (both -pedantic-errors) and as
 * GNU C11; headers_cxx.cpp includes this file to make the checks in C++.
 * Every header libpfm 3.10 installed on x86-64 is included, the three PEBS
 * formats together (libpfm 3.10's could not be). headers_bits.c checks the
 * bit positions of the register layouts, which only a running program sees.
 */
#include <perfmon/perfmon.h>
#include <perfmon/perfmon_v2.h>
#include <perfmon/perfmon_dfl_smpl.h>
#include <perfmon/pfmlib.h>

#include <perfmon/perfmon_x86_64.h>
#include <perfmon/perfmon_i386.h>
#include <perfmon/pfmlib_os.h>
#include <perfmon/pfmlib_comp.h>
#if defined(__x86_64__)
#include <perfmon/pfmlib_os_x86_64.h>   /* after pfmlib_os.h: a no-op */
#include <perfmon/pfmlib_comp_x86_64.h> /* after pfmlib_comp.h: a no-op */
#endif
#include <perfmon/pfmlib_gen_ia32.h>
#include <perfmon/pfmlib_core.h>
#include <perfmon/pfmlib_coreduo.h>
#include <perfmon/pfmlib_intel_atom.h>
#include <perfmon/pfmlib_intel_nhm.h>
#include <perfmon/pfmlib_amd64.h>
#include <perfmon/pfmlib_pentium4.h>
#include <perfmon/pfmlib_i386_p6.h>
#include <perfmon/perfmon_pebs_core_smpl.h>
#include <perfmon/perfmon_pebs_p4_smpl.h>
#include <perfmon/perfmon_pebs_smpl.h>

#include <stddef.h>

/* C99 has no _Static_assert: a negative array size fails the same way. */
#if defined(__cplusplus)
#define HDR_ASSERT(cond) static_assert(cond, #cond)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define HDR_ASSERT(cond) _Static_assert(cond, #cond)
#else
#define HDR_CAT2(a, b) a##b
#define HDR_CAT(a, b) HDR_CAT2(a, b)
#define HDR_ASSERT(cond) typedef char HDR_CAT(hdr_assert_line_, __LINE__)[(cond) ? 1 : -1]
#endif

#define SIZE(type, n) HDR_ASSERT(sizeof(type) == (n))
#define AT(type, field, off) HDR_ASSERT(offsetof(type, field) == (off))

/* Bitvectors: 5 u64 words on x86-64, for PMCs and PMDs alike. */
HDR_ASSERT(PFM_PMD_BV == 5);
HDR_ASSERT(PFM_PMC_BV == 5);
HDR_ASSERT(PFM_MAX_PMCS == 320 && PFM_MAX_PMDS == 320);
HDR_ASSERT(PFM_ARCH_MAX_PMCS == 320 && PFM_ARCH_MAX_PMDS == 320);
HDR_ASSERT(PFM_MAX_HW_PMDS == 256 && PFM_HW_PMD_BV == 4);

/* libpfm 3.10's include guards, which programs test */
#if !defined(__PERFMON_H__) || !defined(__PERFMON_V2_H__) || !defined(__PFMLIB_H__) ||                       \
	!defined(__PFMLIB_OS_H__) || !defined(__PFMLIB_COMP_H__) || !defined(_PERFMON_X86_64_H_) ||         \
	!defined(_PERFMON_I386_H_) || !defined(__PFMLIB_GEN_IA32_H__) || !defined(__PFMLIB_CORE_H__) ||     \
	!defined(__PFMLIB_COREDUO_H__) || !defined(__PFMLIB_INTEL_ATOM_H__) || !defined(__PFMLIB_NHM_H__) || \
	!defined(__PFMLIB_AMD64_H__) || !defined(__PFMLIB_PENTIUM4_H__) || !defined(__PFMLIB_I386_P6_H__)
#error "a libpfm 3.10 include guard is missing"
#endif
#if __PERFMON_DFL_SMPL_H__ != 1 || __PERFMON_PEBS_CORE_SMPL_H__ != 1 || __PERFMON_PEBS_P4_SMPL_H__ != 1 || \
	__PERFMON_PEBS_SMPL_H__ != 1
#error "a libpfm 3.10 sampling format guard is not 1"
#endif
#if defined(__x86_64__) && (!defined(__PFMLIB_OS_X86_64_H__) || !defined(__PFMLIB_COMP_X86_64_H__))
#error "pfmlib_os.h/pfmlib_comp.h did not take the x86-64 headers"
#endif

/* ---- perfmon2 (perfmon_v2.h) ---- */
SIZE(pfarg_ctx_t, 64);
AT(pfarg_ctx_t, ctx_flags, 0);
AT(pfarg_ctx_t, ctx_reserved1, 4);
AT(pfarg_ctx_t, ctx_reserved3, 8);

SIZE(pfarg_pmc_t, 48);
AT(pfarg_pmc_t, reg_num, 0);
AT(pfarg_pmc_t, reg_set, 2);
AT(pfarg_pmc_t, reg_flags, 4);
AT(pfarg_pmc_t, reg_value, 8);
AT(pfarg_pmc_t, reg_reserved2, 16);

SIZE(pfarg_pmd_t, 176);
AT(pfarg_pmd_t, reg_num, 0);
AT(pfarg_pmd_t, reg_set, 2);
AT(pfarg_pmd_t, reg_flags, 4);
AT(pfarg_pmd_t, reg_value, 8);
AT(pfarg_pmd_t, reg_long_reset, 16);
AT(pfarg_pmd_t, reg_short_reset, 24);
AT(pfarg_pmd_t, reg_last_reset_val, 32);
AT(pfarg_pmd_t, reg_ovfl_switch_cnt, 40);
AT(pfarg_pmd_t, reg_reset_pmds, 48);
AT(pfarg_pmd_t, reg_smpl_pmds, 88);
AT(pfarg_pmd_t, reg_smpl_eventid, 128);
AT(pfarg_pmd_t, reg_random_mask, 136);
AT(pfarg_pmd_t, reg_random_seed, 144);
AT(pfarg_pmd_t, reg_reserved2, 148);

SIZE(pfarg_load_t, 32);
AT(pfarg_load_t, load_pid, 0);
AT(pfarg_load_t, load_set, 4);
AT(pfarg_load_t, load_reserved1, 6);
AT(pfarg_load_t, load_reserved2, 8);

SIZE(pfarg_start_t, 32);
AT(pfarg_start_t, start_set, 0);
AT(pfarg_start_t, start_reserved1, 2);
AT(pfarg_start_t, start_reserved2, 4);
AT(pfarg_start_t, reserved3, 8);

SIZE(pfarg_setdesc_t, 64);
AT(pfarg_setdesc_t, set_id, 0);
AT(pfarg_setdesc_t, set_reserved1, 2);
AT(pfarg_setdesc_t, set_flags, 4);
AT(pfarg_setdesc_t, set_timeout, 8);
AT(pfarg_setdesc_t, reserved, 16);

SIZE(pfarg_setinfo_t, 200);
AT(pfarg_setinfo_t, set_id, 0);
AT(pfarg_setinfo_t, set_flags, 4);
AT(pfarg_setinfo_t, set_ovfl_pmds, 8);
AT(pfarg_setinfo_t, set_runs, 48);
AT(pfarg_setinfo_t, set_timeout, 56);
AT(pfarg_setinfo_t, set_act_duration, 64);
AT(pfarg_setinfo_t, set_avail_pmcs, 72);
AT(pfarg_setinfo_t, set_avail_pmds, 112);
AT(pfarg_setinfo_t, set_reserved3, 152);

/* ---- messages (perfmon.h): section 2.4's 64-byte record ---- */
SIZE(pfarg_msg_t, 64);
SIZE(pfarg_ovfl_msg_t, 64);
AT(pfarg_msg_t, type, 0);
AT(pfarg_ovfl_msg_t, msg_type, 0);
AT(pfarg_ovfl_msg_t, msg_ovfl_pid, 4);
AT(pfarg_ovfl_msg_t, msg_active_set, 8);
AT(pfarg_ovfl_msg_t, msg_ovfl_cpu, 10);
AT(pfarg_ovfl_msg_t, msg_ovfl_tid, 12);
AT(pfarg_ovfl_msg_t, msg_ovfl_ip, 16);
AT(pfarg_ovfl_msg_t, msg_ovfl_pmds, 24);
AT(pfarg_msg_t, pfm_ovfl_msg.msg_ovfl_ip, 16);

/* ---- perfmon3-style (perfmon.h) ---- */
SIZE(pfarg_sinfo_t, 112);
AT(pfarg_sinfo_t, sif_avail_pmcs, 0);
AT(pfarg_sinfo_t, sif_avail_pmds, 40);
AT(pfarg_sinfo_t, sif_reserved, 80);

SIZE(pfarg_pmr_t, 16);
AT(pfarg_pmr_t, reg_num, 0);
AT(pfarg_pmr_t, reg_set, 2);
AT(pfarg_pmr_t, reg_flags, 4);
AT(pfarg_pmr_t, reg_value, 8);

SIZE(pfarg_pmd_attr_t, 208);
AT(pfarg_pmd_attr_t, reg_value, 8);
AT(pfarg_pmd_attr_t, reg_long_reset, 16);
AT(pfarg_pmd_attr_t, reg_short_reset, 24);
AT(pfarg_pmd_attr_t, reg_random_mask, 32);
AT(pfarg_pmd_attr_t, reg_smpl_pmds, 40);
AT(pfarg_pmd_attr_t, reg_reset_pmds, 80);
AT(pfarg_pmd_attr_t, reg_ovfl_swcnt, 120);
AT(pfarg_pmd_attr_t, reg_smpl_eventid, 128);
AT(pfarg_pmd_attr_t, reg_last_value, 136);
AT(pfarg_pmd_attr_t, reg_reserved, 144);

SIZE(pfarg_set_desc_t, 64);
AT(pfarg_set_desc_t, set_id, 0);
AT(pfarg_set_desc_t, set_flags, 4);
AT(pfarg_set_desc_t, set_timeout, 8);

SIZE(pfarg_set_info_t, 104);
AT(pfarg_set_info_t, set_id, 0);
AT(pfarg_set_info_t, set_ovfl_pmds, 8);
AT(pfarg_set_info_t, set_runs, 48);
AT(pfarg_set_info_t, set_timeout, 56);
AT(pfarg_set_info_t, set_duration, 64);
AT(pfarg_set_info_t, set_reserved3, 72);

/* ---- the default sampling format's types (perfmon_dfl_smpl.h) ---- */
SIZE(pfm_dfl_smpl_arg_t, 64);
AT(pfm_dfl_smpl_arg_t, res1, 12);	/* libpfm 3.10's name */
SIZE(pfm_dfl_smpl_hdr_t, 128);
SIZE(pfm_dfl_smpl_entry_t, 40);
AT(pfm_dfl_smpl_hdr_t, hdr_version, 40);
AT(pfm_dfl_smpl_entry_t, ip, 16);
AT(pfm_dfl_smpl_entry_t, tgid, 36);

/* ---- event encoding (pfmlib.h), LP64 ---- */
SIZE(pfmlib_regmask_t, 64);
SIZE(pfmlib_reg_t, 32);
AT(pfmlib_reg_t, reg_value, 0);
AT(pfmlib_reg_t, reg_addr, 8);
AT(pfmlib_reg_t, reg_num, 16);
AT(pfmlib_reg_t, reg_alt_addr, 24);
SIZE(pfmlib_event_t, 232);
AT(pfmlib_event_t, plm, 4);
AT(pfmlib_event_t, flags, 8);
AT(pfmlib_event_t, unit_masks, 16);
AT(pfmlib_event_t, num_masks, 208);
SIZE(pfmlib_input_param_t, 118912);
AT(pfmlib_input_param_t, pfp_events, 16);
AT(pfmlib_input_param_t, pfp_unavail_pmcs, 118800);
SIZE(pfmlib_output_param_t, 32832);
AT(pfmlib_output_param_t, pfp_pmcs, 8);
AT(pfmlib_output_param_t, pfp_pmds, 16392);
SIZE(pfmlib_options_t, 4);

/* ---- model-specific parameters (pfmlib_<model>.h), LP64 ---- */
/* the event-select registers: one 64-bit word, the bitfields over it */
SIZE(pfm_gen_ia32_sel_reg_t, 8);
SIZE(pfm_core_sel_reg_t, 8);
SIZE(pfm_coreduo_sel_reg_t, 8);
SIZE(pfm_intel_atom_sel_reg_t, 8);
SIZE(pfm_nhm_sel_reg_t, 8);
SIZE(pfm_amd64_sel_reg_t, 8);
SIZE(pfm_amd64_ctr_reg_t, 8);
SIZE(ibsfetchctl_t, 8);
SIZE(ibsopctl_t, 8);
SIZE(ibsopdata_t, 8);
SIZE(ibsopdata2_t, 8);
SIZE(ibsopdata3_t, 8);
SIZE(pentium4_escr_value_t, 8); /* unsigned long: 4 bytes on 32-bit x86 */
SIZE(pentium4_cccr_value_t, 8);
SIZE(pfm_i386_p6_sel_reg_t, 8); /* unsigned long: 4 bytes on 32-bit x86 */
SIZE(pfm_i386_p6_ctr_reg_t, 8);
SIZE(pfm_i386_p6_cnt_mask_t, 4);

/* per-counter options: { unsigned long cnt_mask; unsigned int flags; } */
SIZE(pfmlib_gen_ia32_counter_t, 16);
AT(pfmlib_gen_ia32_counter_t, flags, 8);
SIZE(pfmlib_core_counter_t, 16);
AT(pfmlib_core_counter_t, flags, 8);
SIZE(pfm_coreduo_counter_t, 16);
AT(pfm_coreduo_counter_t, flags, 8);
SIZE(pfmlib_intel_atom_counter_t, 16);
AT(pfmlib_intel_atom_counter_t, flags, 8);
SIZE(pfmlib_nhm_counter_t, 16);
AT(pfmlib_nhm_counter_t, flags, 8);
SIZE(pfmlib_amd64_counter_t, 8); /* uint32_t cnt_mask */
AT(pfmlib_amd64_counter_t, flags, 4);
SIZE(pfmlib_i386_p6_counter_t, 8); /* an enum cnt_mask */
AT(pfmlib_i386_p6_counter_t, flags, 4);

SIZE(pfmlib_gen_ia32_input_param_t, 8224);
AT(pfmlib_gen_ia32_input_param_t, reserved, 8192);
SIZE(pfmlib_gen_ia32_output_param_t, 64);
SIZE(pfmlib_core_pebs_t, 4);
SIZE(pfmlib_core_input_param_t, 120);
AT(pfmlib_core_input_param_t, pfp_core_pebs, 80);
AT(pfmlib_core_input_param_t, reserved, 88);
SIZE(pfmlib_core_output_param_t, 64);
SIZE(pfmlib_coreduo_input_param_t, 64);
AT(pfmlib_coreduo_input_param_t, reserved, 32);
SIZE(pfmlib_intel_atom_input_param_t, 120);
AT(pfmlib_intel_atom_input_param_t, pfp_intel_atom_pebs_used, 80);
AT(pfmlib_intel_atom_input_param_t, reserved, 88);
SIZE(pfmlib_nhm_lbr_t, 12);
AT(pfmlib_nhm_lbr_t, lbr_plm, 4);
AT(pfmlib_nhm_lbr_t, lbr_filter, 8);
SIZE(pfmlib_nhm_pebs_t, 8);
AT(pfmlib_nhm_pebs_t, ld_lat_thres, 4);
SIZE(pfmlib_nhm_input_param_t, 312);
AT(pfmlib_nhm_input_param_t, pfp_nhm_pebs, 256);
AT(pfmlib_nhm_input_param_t, pfp_nhm_lbr, 264);
AT(pfmlib_nhm_input_param_t, reserved, 280);
SIZE(ibs_param_t, 8);
AT(ibs_param_t, options, 4);
SIZE(pfmlib_amd64_input_param_t, 80);
AT(pfmlib_amd64_input_param_t, flags, 48);
AT(pfmlib_amd64_input_param_t, reserved1, 52);
AT(pfmlib_amd64_input_param_t, ibsfetch, 56);
AT(pfmlib_amd64_input_param_t, ibsop, 64);
AT(pfmlib_amd64_input_param_t, reserved2, 72);
SIZE(pfmlib_amd64_output_param_t, 64);
AT(pfmlib_amd64_output_param_t, ibsop_base, 4);
AT(pfmlib_amd64_output_param_t, reserved, 8);
SIZE(pfmlib_i386_p6_input_param_t, 48);
AT(pfmlib_i386_p6_input_param_t, reserved, 16);
SIZE(pfmlib_i386_p6_output_param_t, 64);

/* ---- the PEBS sampling formats' types, LP64 ---- */
SIZE(pfm_pebs_core_smpl_arg_t, 72);
AT(pfm_pebs_core_smpl_arg_t, buf_size, 8);
AT(pfm_pebs_core_smpl_arg_t, intr_thres, 16);
AT(pfm_pebs_core_smpl_arg_t, reserved, 24);
SIZE(pfm_ds_area_core_t, 72);
AT(pfm_ds_area_core_t, bts_intr_thres, 24);
AT(pfm_ds_area_core_t, pebs_buf_base, 32);
AT(pfm_ds_area_core_t, pebs_cnt_reset, 64);
SIZE(pfm_pebs_core_smpl_hdr_t, 144); /* size_t buf_size, start_offs */
AT(pfm_pebs_core_smpl_hdr_t, buf_size, 8);
AT(pfm_pebs_core_smpl_hdr_t, start_offs, 16);
AT(pfm_pebs_core_smpl_hdr_t, version, 24);
AT(pfm_pebs_core_smpl_hdr_t, reserved1, 28);
AT(pfm_pebs_core_smpl_hdr_t, reserved2, 32);
AT(pfm_pebs_core_smpl_hdr_t, ds, 72);
SIZE(pfm_pebs_core_smpl_entry_t, 144); /* 18 u64 words */
AT(pfm_pebs_core_smpl_entry_t, ip, 8);
AT(pfm_pebs_core_smpl_entry_t, esp, 72);
AT(pfm_pebs_core_smpl_entry_t, r8, 80);
AT(pfm_pebs_core_smpl_entry_t, r15, 136);

SIZE(pfm_pebs_p4_smpl_arg_t, 72); /* 64 on 32-bit x86 (size_t) */
AT(pfm_pebs_p4_smpl_arg_t, buf_size, 8);
AT(pfm_pebs_p4_smpl_arg_t, intr_thres, 16);
AT(pfm_pebs_p4_smpl_arg_t, reserved, 24);
SIZE(pfm_ds_area_p4_t, 72); /* 40 on 32-bit x86 (unsigned long) */
AT(pfm_ds_area_p4_t, pebs_buf_base, 32);
AT(pfm_ds_area_p4_t, pebs_cnt_reset, 64);
SIZE(pfm_pebs_p4_smpl_hdr_t, 144); /* 104 on 32-bit x86 */
AT(pfm_pebs_p4_smpl_hdr_t, version, 24);
AT(pfm_pebs_p4_smpl_hdr_t, reserved2, 32);
AT(pfm_pebs_p4_smpl_hdr_t, ds, 72);
SIZE(pfm_pebs_p4_smpl_entry_t, 144); /* 40 on 32-bit x86 (no r8-r15) */
AT(pfm_pebs_p4_smpl_entry_t, esp, 72);
AT(pfm_pebs_p4_smpl_entry_t, r8, 80);
AT(pfm_pebs_p4_smpl_entry_t, r15, 136);

SIZE(pfm_pebs_smpl_arg_t, 256);
AT(pfm_pebs_smpl_arg_t, cnt_reset, 8);
AT(pfm_pebs_smpl_arg_t, reserved2, 72);
SIZE(pfm_pebs_smpl_hdr_t, 128);
AT(pfm_pebs_smpl_hdr_t, count, 8);
AT(pfm_pebs_smpl_hdr_t, buf_size, 16);
AT(pfm_pebs_smpl_hdr_t, pebs_size, 24);
AT(pfm_pebs_smpl_hdr_t, version, 32);
AT(pfm_pebs_smpl_hdr_t, entry_size, 36);
AT(pfm_pebs_smpl_hdr_t, reserved2, 40);
SIZE(pfm_pebs_nhm_smpl_entry_t, 176);
AT(pfm_pebs_nhm_smpl_entry_t, r15, 136);
AT(pfm_pebs_nhm_smpl_entry_t, ia32_perf_global_status, 144);
AT(pfm_pebs_nhm_smpl_entry_t, daddr, 152);
AT(pfm_pebs_nhm_smpl_entry_t, dsrc_enc, 160);
AT(pfm_pebs_nhm_smpl_entry_t, latency, 168);

/* ---- constants ---- */
HDR_ASSERT(PFM_FL_NOTIFY_BLOCK == 0x01 && PFM_FL_SYSTEM_WIDE == 0x02 && PFM_FL_OVFL_NO_MSG == 0x80);
HDR_ASSERT(PFM_FL_SMPL_FMT == 0x04);
HDR_ASSERT(PFM_REGFL_OVFL_NOTIFY == 0x1 && PFM_REGFL_RANDOM == 0x2 && PFM_REGFL_NO_EMUL64 == 0x4);
HDR_ASSERT(PFM_SETFL_OVFL_SWITCH == 0x01 && PFM_SETFL_TIME_SWITCH == 0x02);
HDR_ASSERT(PFM_MSG_OVFL == 1 && PFM_MSG_END == 2);
HDR_ASSERT(PFM_PLM0 == 1 && PFM_PLM1 == 2 && PFM_PLM2 == 4 && PFM_PLM3 == 8);
HDR_ASSERT(PFM_RW_PMD == 1 && PFM_RW_PMC == 2 && PFM_RW_PMD_ATTR == 3);
HDR_ASSERT(PFM_ST_START == 1 && PFM_ST_STOP == 2 && PFM_ST_RESTART == 3);
HDR_ASSERT(PFM_NO_TARGET == -1);
HDR_ASSERT(PFMLIB_VERSION == (3 << 16 | 10));
HDR_ASSERT(PFMLIB_MAX_PMCS == 512 && PFMLIB_MAX_PMDS == 512);
HDR_ASSERT(PFMLIB_SUCCESS == 0 && PFMLIB_ERR_NOTSUPP == -1 && PFMLIB_ERR_INVAL == -2);
HDR_ASSERT(PFMLIB_ERR_NOINIT == -3 && PFMLIB_ERR_NOTFOUND == -4 && PFMLIB_ERR_NOASSIGN == -5);
HDR_ASSERT(PFMLIB_ERR_FULL == -6 && PFMLIB_ERR_TOOMANY == -12 && PFMLIB_ERR_NOMEM == -23);
HDR_ASSERT(PFMLIB_PFP_SYSTEMWIDE == 0x1);
HDR_ASSERT(PMU_GEN_IA32_MAX_COUNTERS == 512 && PMU_GEN_IA32_COUNTER_WIDTH == 32);
HDR_ASSERT(PFM_GEN_IA32_SEL_INV == 1 && PFM_GEN_IA32_SEL_EDGE == 2 && PFM_GEN_IA32_SEL_ANYTHR == 4);
HDR_ASSERT(PMU_CORE_NUM_FIXED_COUNTERS == 3 && PMU_CORE_NUM_GEN_COUNTERS == 2 && PMU_CORE_NUM_COUNTERS == 5);
HDR_ASSERT(PFM_CORE_SEL_INV == 1 && PFM_CORE_SEL_EDGE == 2);
HDR_ASSERT(PMU_COREDUO_NUM_COUNTERS == 2 && PFM_COREDUO_SEL_INV == 1 && PFM_COREDUO_SEL_EDGE == 2);
HDR_ASSERT(PMU_INTEL_ATOM_NUM_COUNTERS == 5);
HDR_ASSERT(PFM_INTEL_ATOM_SEL_INV == 1 && PFM_INTEL_ATOM_SEL_EDGE == 2 && PFM_INTEL_ATOM_SEL_ANYTHR == 4);
HDR_ASSERT(PMU_NHM_NUM_COUNTERS == 16);
HDR_ASSERT(PFM_NHM_SEL_INV == 1 && PFM_NHM_SEL_EDGE == 2 && PFM_NHM_SEL_ANYTHR == 4 && PFM_NHM_SEL_OCC_RST == 8);
HDR_ASSERT(PFM_NHM_LBR_JCC == 0x4 && PFM_NHM_LBR_NEAR_REL_CALL == 0x8 && PFM_NHM_LBR_NEAR_IND_CALL == 0x10);
HDR_ASSERT(PFM_NHM_LBR_NEAR_RET == 0x20 && PFM_NHM_LBR_NEAR_IND_JMP == 0x40 && PFM_NHM_LBR_NEAR_REL_JMP == 0x80);
HDR_ASSERT(PFM_NHM_LBR_FAR_BRANCH == 0x100 && PFM_NHM_LBR_ALL == 0x1fc);
HDR_ASSERT(PMU_AMD64_MAX_COUNTERS == 6);
HDR_ASSERT(PFM_AMD64_SEL_INV == 1 && PFM_AMD64_SEL_EDGE == 2 && PFM_AMD64_SEL_GUEST == 4 && PFM_AMD64_SEL_HOST == 8);
HDR_ASSERT(IBS_OPTIONS_RANDEN == 1 && IBS_OPTIONS_UOPS == 1);
HDR_ASSERT(PFMLIB_AMD64_USE_IBSFETCH == 1 && PFMLIB_AMD64_USE_IBSOP == 2);
HDR_ASSERT(PMD_IBSFETCHCTL == 0 && PMD_IBSFETCHLINAD == 1 && PMD_IBSFETCHPHYSAD == 2);
HDR_ASSERT(PMD_IBSOPCTL == 0 && PMD_IBSOPRIP == 1 && PMD_IBSOPDATA == 2 && PMD_IBSOPDATA2 == 3);
HDR_ASSERT(PMD_IBSOPDATA3 == 4 && PMD_IBSDCLINAD == 5 && PMD_IBSDCPHYSAD == 6);
HDR_ASSERT(EVENT_MASK_BITS == 16 && EVENT_SELECT_BITS == 6);
HDR_ASSERT(PMU_I386_P6_NUM_COUNTERS == 2 && PMU_I386_P6_NUM_PERFSEL == 2 && PMU_I386_P6_NUM_PERFCTR == 2);
HDR_ASSERT(PMU_I386_P6_COUNTER_WIDTH == 32 && PFM_I386_P6_SEL_INV == 1 && PFM_I386_P6_SEL_EDGE == 2);
HDR_ASSERT(PFM_I386_P6_CNT_MASK_0 == 0 && PFM_I386_P6_CNT_MASK_1 == 1 && PFM_I386_P6_CNT_MASK_2 == 2 &&
	   PFM_I386_P6_CNT_MASK_3 == 3);
HDR_ASSERT(PFM_DFL_SMPL_VERSION == 0x10000 && PFM_PEBS_CORE_SMPL_VERSION == 0x10000);
HDR_ASSERT(PFM_PEBS_P4_SMPL_VERSION == 0x10000 && PFM_PEBS_SMPL_VERSION == 0x10000);
HDR_ASSERT(PFM_PEBS_NUM_CNT_RESET == 8);

/*
 * Every call with libpfm 3.10's exact type: a program that stores one in a
 * function pointer (or was compiled against the real headers) must build.
 * Initializing a pointer of a different type is an error in C++ and, with
 * -Werror, in C. Returns a sum so nothing here is unused.
 */
int headers_signatures(void);
int headers_signatures(void)
{
	os_err_t (*create_context)(pfarg_ctx_t *, char *, void *, size_t) = pfm_create_context;
	os_err_t (*write_pmcs)(int, pfarg_pmc_t *, int) = pfm_write_pmcs;
	os_err_t (*write_pmds)(int, pfarg_pmd_t *, int) = pfm_write_pmds;
	os_err_t (*read_pmds)(int, pfarg_pmd_t *, int) = pfm_read_pmds;
	os_err_t (*load_context)(int, pfarg_load_t *) = pfm_load_context;
	os_err_t (*start)(int, pfarg_start_t *) = pfm_start;
	os_err_t (*stop)(int) = pfm_stop;
	os_err_t (*restart)(int) = pfm_restart;
	os_err_t (*create_evtsets)(int, pfarg_setdesc_t *, int) = pfm_create_evtsets;
	os_err_t (*getinfo_evtsets)(int, pfarg_setinfo_t *, int) = pfm_getinfo_evtsets;
	os_err_t (*delete_evtsets)(int, pfarg_setdesc_t *, int) = pfm_delete_evtsets;
	os_err_t (*unload_context)(int) = pfm_unload_context;
	os_err_t (*create)(int, pfarg_sinfo_t *, ...) = pfm_create;
	os_err_t (*write_regs)(int, int, int, void *, size_t) = pfm_write;
	os_err_t (*read_regs)(int, int, int, void *, size_t) = pfm_read;
	os_err_t (*set_state)(int, int, int) = pfm_set_state;
	os_err_t (*create_sets)(int, int, pfarg_set_desc_t *, size_t) = pfm_create_sets;
	os_err_t (*getinfo_sets)(int, int, pfarg_set_info_t *, size_t) = pfm_getinfo_sets;
	os_err_t (*attach)(int, int, int) = pfm_attach;

	pfm_err_t (*set_options)(pfmlib_options_t *) = pfm_set_options;
	pfm_err_t (*initialize)(void) = pfm_initialize;
	char *(*strerror_fn)(int) = pfm_strerror;
	pfm_err_t (*find_event)(const char *, unsigned int *) = pfm_find_event;
	pfm_err_t (*find_full_event)(const char *, pfmlib_event_t *) = pfm_find_full_event;
	pfm_err_t (*cycle_event)(pfmlib_event_t *) = pfm_get_cycle_event;
	pfm_err_t (*inst_retired_event)(pfmlib_event_t *) = pfm_get_inst_retired_event;
	pfm_err_t (*full_event_name)(pfmlib_event_t *, char *, size_t) = pfm_get_full_event_name;
	pfm_err_t (*event_name)(unsigned int, char *, size_t) = pfm_get_event_name;
	pfm_err_t (*max_event_name_len)(size_t *) = pfm_get_max_event_name_len;
	pfm_err_t (*num_events)(unsigned int *) = pfm_get_num_events;
	pfm_err_t (*num_counters)(unsigned int *) = pfm_get_num_counters;
	pfm_err_t (*num_pmcs)(unsigned int *) = pfm_get_num_pmcs;
	pfm_err_t (*num_pmds)(unsigned int *) = pfm_get_num_pmds;
	pfm_err_t (*impl_pmcs)(pfmlib_regmask_t *) = pfm_get_impl_pmcs;
	pfm_err_t (*impl_pmds)(pfmlib_regmask_t *) = pfm_get_impl_pmds;
	pfm_err_t (*impl_counters)(pfmlib_regmask_t *) = pfm_get_impl_counters;
	pfm_err_t (*counter_width)(unsigned int *) = pfm_get_hw_counter_width;
	pfm_err_t (*pmu_name)(char *, int) = pfm_get_pmu_name;
	pfm_err_t (*dispatch)(pfmlib_input_param_t *, void *, pfmlib_output_param_t *, void *) =
		pfm_dispatch_events;

	os_err_t (*self_start)(int) = pfm_self_start;
	os_err_t (*self_stop)(int) = pfm_self_stop;
	unsigned long (*popcnt)(unsigned long) = pfmlib_popcnt;
	int (*core_is_pebs)(pfmlib_event_t *) = pfm_core_is_pebs;
	int (*atom_has_pebs)(pfmlib_event_t *) = pfm_intel_atom_has_pebs;
	int (*nhm_is_pebs)(pfmlib_event_t *) = pfm_nhm_is_pebs;
	int (*nhm_is_uncore)(pfmlib_event_t *) = pfm_nhm_is_uncore;
	int (*nhm_data_src_desc)(unsigned int, char **) = pfm_nhm_data_src_desc;
	pfmlib_regmask_t mask = {{0}};
	unsigned int weight = 0;

	/* the inline helpers compile (and work) in every language mode */
	pfm_regmask_set(&mask, 3);
	pfm_regmask_weight(&mask, &weight);

	return (create_context != 0) + (write_pmcs != 0) + (write_pmds != 0) + (read_pmds != 0) +
	       (load_context != 0) + (start != 0) + (stop != 0) + (restart != 0) +
	       (create_evtsets != 0) + (getinfo_evtsets != 0) + (delete_evtsets != 0) +
	       (unload_context != 0) + (create != 0) + (write_regs != 0) + (read_regs != 0) +
	       (set_state != 0) + (create_sets != 0) + (getinfo_sets != 0) + (attach != 0) +
	       (set_options != 0) + (initialize != 0) + (strerror_fn != 0) + (find_event != 0) +
	       (find_full_event != 0) + (cycle_event != 0) + (inst_retired_event != 0) +
	       (full_event_name != 0) + (event_name != 0) + (max_event_name_len != 0) +
	       (num_events != 0) + (num_counters != 0) + (num_pmcs != 0) + (num_pmds != 0) +
	       (impl_pmcs != 0) + (impl_pmds != 0) + (impl_counters != 0) + (counter_width != 0) +
	       (pmu_name != 0) + (dispatch != 0) + pfm_regmask_isset(&mask, 3) + (int)weight +
	       (self_start != 0) + (self_stop != 0) + (int)popcnt(0x5UL) + (core_is_pebs != 0) +
	       (atom_has_pebs != 0) + (nhm_is_pebs != 0) + (nhm_is_uncore != 0) + (nhm_data_src_desc != 0);
}
