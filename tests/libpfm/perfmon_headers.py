# perfmon_headers.py: the C and C++ sources HeaderTest (test_libpfm.py)
# compiles against the installed <perfmon/*.h>, beside headers_c.c and
# headers_bits.c, and the compiler runs that build them:
# - each of the 23 headers libpfm 3.10 installed on x86-64, alone in a
#   program (the four per-architecture ones must refuse, as libpfm 3.10's did);
# - pfm_self_start/pfm_self_stop defined exactly once whatever headers a
#   program includes, and in whatever order, and not at all with
#   __PFMLIB_OS_COMPILE (a source may then define them itself);
# - the three PEBS formats' headers together, in every order.
import itertools
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

# What libpfm 3.10's `make install` put in include/perfmon on x86-64.
HEADERS = sorted([
    'perfmon.h', 'perfmon_v2.h', 'perfmon_dfl_smpl.h', 'perfmon_i386.h', 'perfmon_x86_64.h',
    'perfmon_pebs_core_smpl.h', 'perfmon_pebs_p4_smpl.h', 'perfmon_pebs_smpl.h',
    'pfmlib.h', 'pfmlib_os.h', 'pfmlib_os_i386.h', 'pfmlib_os_x86_64.h',
    'pfmlib_comp.h', 'pfmlib_comp_i386.h', 'pfmlib_comp_x86_64.h',
    'pfmlib_gen_ia32.h', 'pfmlib_core.h', 'pfmlib_coreduo.h', 'pfmlib_intel_atom.h', 'pfmlib_intel_nhm.h',
    'pfmlib_amd64.h', 'pfmlib_pentium4.h', 'pfmlib_i386_p6.h'])

# Included directly these stop the build (#error), as libpfm 3.10's did: the
# message names the header to include instead.
DIRECT_ONLY = {
    'pfmlib_os_x86_64.h': 'include <perfmon/pfmlib_os.h>',
    'pfmlib_os_i386.h': 'include <perfmon/pfmlib_os.h>',
    'pfmlib_comp_x86_64.h': 'include <perfmon/pfmlib_comp.h>',
    'pfmlib_comp_i386.h': 'include <perfmon/pfmlib_comp.h>',
}

# Header lists (in order) after which pfm_self_start/stop must be there,
# defined once: perfmon.h alone (as programs do), pfmlib.h alone (as
# libpfm 3.10's programs do), both in either order, and the headers that
# pull either in.
SELF_START_INCLUDES = [
    ('perfmon.h',), ('perfmon_v2.h',), ('pfmlib.h',), ('pfmlib_os.h',),
    ('perfmon.h', 'pfmlib.h'), ('pfmlib.h', 'perfmon.h'), ('perfmon_v2.h', 'pfmlib_os.h', 'perfmon.h'),
    ('pfmlib_os.h', 'perfmon_v2.h'), ('perfmon_dfl_smpl.h', 'pfmlib_core.h'),
    ('pfmlib_intel_nhm.h', 'perfmon_dfl_smpl.h'), ('perfmon_pebs_core_smpl.h', 'pfmlib_comp.h', 'pfmlib.h'),
    ('pfmlib_amd64.h', 'perfmon_pebs_p4_smpl.h', 'pfmlib_gen_ia32.h', 'perfmon.h'),
]

ASSERT = ('#ifdef __cplusplus\n#define SA(c) static_assert(c, #c)\n'
          '#else\n#define SA(c) _Static_assert(c, #c)\n#endif\n')


def includes(headers):
    return ''.join(f'#include <perfmon/{h}>\n' for h in headers)


def aloneSource(header):
    return includes([header]) + 'int main(void) { return 0; }\n'


def selfStartSource(headers):
    return includes(headers) + ('int use(int fd);\n'
                                'int use(int fd) { return pfm_self_start(fd) + pfm_self_stop(fd); }\n')


# With __PFMLIB_OS_COMPILE, pfmlib.h brings pfmlib_popcnt but not perfmon.h,
# and no header defines pfm_self_start/stop: the source defines them.
OS_COMPILE_SOURCE = '''#define __PFMLIB_OS_COMPILE
#include <perfmon/pfmlib.h>
#ifdef __PERFMON_H__
#error "pfmlib.h included perfmon.h under __PFMLIB_OS_COMPILE"
#endif
unsigned long bits(unsigned long v);
unsigned long bits(unsigned long v) { return pfmlib_popcnt(v); }
#include <perfmon/perfmon.h>
#include <perfmon/pfmlib_os.h>
int pfm_self_start(int fd);
int pfm_self_start(int fd) { return pfm_start(fd, NULL); }
int pfm_self_stop(int fd);
int pfm_self_stop(int fd) { return pfm_stop(fd); }
'''


def pebsSources():
    """The three PEBS headers in each order: the record types they share
    keep libpfm 3.10's x86-64 sizes whichever header declared them."""
    out = {}
    for order in itertools.permutations(['perfmon_pebs_core_smpl.h', 'perfmon_pebs_p4_smpl.h',
                                         'perfmon_pebs_smpl.h']):
        out['+'.join(order)] = includes(order) + ASSERT + (
            'SA(sizeof(pfm_pebs_core_smpl_entry_t) == 144);\n'
            'SA(sizeof(pfm_pebs_p4_smpl_entry_t) == (sizeof(long) == 8 ? 144 : 40));\n'
            'SA(sizeof(pfm_pebs_nhm_smpl_entry_t) == 176 && sizeof(pfm_pebs_p4_smpl_hdr_t) > 0);\n')
    return out


# The pfm_* functions libpfm 3.10's x86-64 libpfm.so.3 exported (every
# non-static definition of its lib/Makefile's x86_64 sources, at
# icl-utk-edu/papi 5a353fcb, src/libpfm-3.y), and the two libpfm-compat
# leaves out, which no installed header declared (docs/libpfm-compat.md,
# "The exported functions").
LIBPFM_3_10_EXPORTS = [
    'pfm_amd64_get_event_umask', 'pfm_attach', 'pfm_core_is_pebs', 'pfm_create', 'pfm_create_context',
    'pfm_create_evtsets', 'pfm_create_sets', 'pfm_delete_evtsets', 'pfm_dispatch_events', 'pfm_find_event',
    'pfm_find_event_bycode', 'pfm_find_event_bycode_next', 'pfm_find_event_byname', 'pfm_find_event_mask',
    'pfm_find_full_event', 'pfm_force_pmu', 'pfm_get_cycle_event', 'pfm_get_event_code',
    'pfm_get_event_code_counter', 'pfm_get_event_counters', 'pfm_get_event_description', 'pfm_get_event_mask_code',
    'pfm_get_event_mask_description', 'pfm_get_event_mask_name', 'pfm_get_event_name', 'pfm_get_full_event_name',
    'pfm_get_hw_counter_width', 'pfm_get_impl_counters', 'pfm_get_impl_pmcs', 'pfm_get_impl_pmds',
    'pfm_get_inst_retired_event', 'pfm_get_max_event_name_len', 'pfm_get_num_counters', 'pfm_get_num_event_masks',
    'pfm_get_num_events', 'pfm_get_num_pmcs', 'pfm_get_num_pmds', 'pfm_get_pmu_name', 'pfm_get_pmu_name_bytype',
    'pfm_get_pmu_type', 'pfm_get_version', 'pfm_getinfo_evtsets', 'pfm_getinfo_sets', 'pfm_init_syscalls',
    'pfm_initialize', 'pfm_intel_atom_has_pebs', 'pfm_is_pmu_supported', 'pfm_list_supported_pmus',
    'pfm_load_context', 'pfm_nhm_data_src_desc', 'pfm_nhm_is_pebs', 'pfm_nhm_is_uncore', 'pfm_read', 'pfm_read_pmds',
    'pfm_restart', 'pfm_set_options', 'pfm_set_state', 'pfm_start', 'pfm_stop', 'pfm_strerror', 'pfm_unload_context',
    'pfm_write', 'pfm_write_pmcs', 'pfm_write_pmds',
]
NOT_EXPORTED = ['pfm_amd64_get_event_umask', 'pfm_init_syscalls']

class Compiler:
    """Compiles sources (-c, ISO C99 or C++11, -pedantic-errors and the
    driver's warnings) against the installed headers, several at once."""

    def __init__(self, tmp, cflags, warnings):
        self.dir = os.path.join(tmp, 'perfmon-headers')
        os.makedirs(self.dir, exist_ok=True)
        self.cflags = list(cflags)
        self.warnings = list(warnings)

    def _one(self, job):
        name, source, lang = job
        base = os.path.join(self.dir, f'{name}.{lang}'.replace('/', '_').replace('+', '_'))
        ext = '.cpp' if lang == 'c++' else '.c'
        with open(base + ext, 'w') as f:
            f.write(source)
        if lang == 'c++':
            compiler, std = os.environ.get('CXX', 'c++'), 'c++11'
        else:
            compiler, std = os.environ.get('CC', 'cc'), 'c11' if 'SA(' in source else 'c99'  # _Static_assert
        return subprocess.run([compiler, f'-std={std}', '-pedantic-errors', *self.warnings, '-c', base + ext,
                               '-o', base + '.o', *self.cflags], capture_output=True, text=True)

    def compile(self, sources):
        """sources: {name: text}. Returns {(name, 'c' or 'c++'): CompletedProcess}."""
        jobs = [(name, text, lang) for name, text in sources.items() for lang in ('c', 'c++')]
        with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
            results = list(pool.map(self._one, jobs))
        return {(name, lang): p for (name, _, lang), p in zip(jobs, results)}
