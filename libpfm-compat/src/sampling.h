// perfmon2's sampling formats on pfmfs (pfmfs(5), SAMPLING;
// docs/libpfm-compat.md, "Sampling"): the format argument of
// pfm_create_context and pfm_create, checked before the session is made,
// and the mapping of the session's buffer that mmap(2) of a context's
// descriptor returns (mmap_interpose.cpp).
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "context_ops.h"

namespace pfmcompat {

class Context;

// The format of a create call into `o`: none when name, arg and size are
// all absent; else the name (written to the session's smpl_fmt, where the
// mount decides whether the format exists) with the default format's
// argument. -EINVAL for what perfmon2 refused before looking at the name:
// an argument or size without a name, a name without an argument, a size
// other than sizeof(pfm_dfl_smpl_arg_t), reserved fields that are not 0, and
// a name the mount's smpl_fmt could not carry (not 1 to 64 of
// A-Z a-z 0-9 _ . : -).
int samplingOptions(const char* name, const void* arg, size_t size, CreateOptions* o);

// mmap(addr, len, prot, flags, <c's descriptor>, off): the session's
// sampling buffer, mapped read-only and shared (whatever MAP_PRIVATE or
// MAP_SHARED asked), at addr if MAP_FIXED said so. Into *out, or -errno:
// EACCES for PROT_WRITE or PROT_EXEC, or a session that is not the
// caller's; EINVAL for an offset, a length of 0 or above the buffer's
// pages, a mapping type that is neither shared nor private, or a context
// without a format; ENODEV where the daemon offers no way to map it (no
// fast-path socket: x86) or hands out something that is not the buffer.
int mapSampleBuffer(const Context& c, void* addr, size_t len, int prot, int flags, off_t off, void** out);

}  // namespace pfmcompat
