/*
 * headers_cxx.cpp: the checks of headers_c.c, made by a C++ compiler (the
 * driver builds it as C++11, C++17 and C++20, -Wall -Wextra -Werror
 * -pedantic-errors): the perfmon headers must declare the same layouts and
 * extern "C" calls to a C++ program. The list lives once, in headers_c.c.
 */
#include "headers_c.c"

#include <type_traits>

// C++ programs copy these structures with memcpy and keep them in arrays:
// they must stay plain C data.
static_assert(std::is_trivial<pfarg_pmd_t>::value && std::is_standard_layout<pfarg_pmd_t>::value,
	      "pfarg_pmd_t is plain data");
static_assert(std::is_trivial<pfarg_msg_t>::value, "pfarg_msg_t is plain data");
static_assert(std::is_trivial<pfmlib_input_param_t>::value, "pfmlib_input_param_t is plain data");
static_assert(std::is_trivial<pfarg_pmd_attr_t>::value, "pfarg_pmd_attr_t is plain data");
static_assert(std::is_trivial<pfm_nhm_sel_reg_t>::value && std::is_standard_layout<pfm_nhm_sel_reg_t>::value,
	      "pfm_nhm_sel_reg_t is plain data");
static_assert(std::is_trivial<pfmlib_amd64_input_param_t>::value &&
		      std::is_standard_layout<pfmlib_amd64_input_param_t>::value,
	      "pfmlib_amd64_input_param_t is plain data");
static_assert(std::is_trivial<pfm_pebs_core_smpl_hdr_t>::value &&
		      std::is_standard_layout<pfm_pebs_core_smpl_hdr_t>::value,
	      "pfm_pebs_core_smpl_hdr_t is plain data");
static_assert(std::is_trivial<pfm_pebs_smpl_hdr_t>::value && std::is_standard_layout<pfm_pebs_smpl_hdr_t>::value,
	      "pfm_pebs_smpl_hdr_t is plain data");
