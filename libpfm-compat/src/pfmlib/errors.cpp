// pfm_strerror(): one sentence per PFMLIB_ERR_* code of pfmlib.h.
#include "library.h"

namespace {

// Indexed by -code.
const char* const kMessages[] = {
    "success",                                             // PFMLIB_SUCCESS
    "not supported (no pfmfs mount, or not on this PMU)",  // PFMLIB_ERR_NOTSUPP
    "invalid argument",                                    // PFMLIB_ERR_INVAL
    "library not initialized (call pfm_initialize)",       // PFMLIB_ERR_NOINIT
    "no such event",                                       // PFMLIB_ERR_NOTFOUND
    "events cannot be assigned to counters",               // PFMLIB_ERR_NOASSIGN
    "buffer too small",                                    // PFMLIB_ERR_FULL
    "event given more than once",                          // PFMLIB_ERR_EVTMANY
    "invalid model-specific magic number",                 // PFMLIB_ERR_MAGIC
    "model-specific features do not combine",              // PFMLIB_ERR_FEATCOMB
    "event sets do not go together",                       // PFMLIB_ERR_EVTSET
    "events do not go together",                           // PFMLIB_ERR_EVTINCOMP
    "more events or unit masks than counters",             // PFMLIB_ERR_TOOMANY
    "code range too large",                                // PFMLIB_ERR_IRRTOOBIG
    "code range empty",                                    // PFMLIB_ERR_IRREMPTY
    "code range invalid",                                  // PFMLIB_ERR_IRRINVAL
    "too many code ranges",                                // PFMLIB_ERR_IRRTOOMANY
    "data range invalid",                                  // PFMLIB_ERR_DRRINVAL
    "too many data ranges",                                // PFMLIB_ERR_DRRTOOMANY
    "not supported by the host CPU",                       // PFMLIB_ERR_BADHOST
    "code range misaligned",                               // PFMLIB_ERR_IRRALIGN
    "code range lacks flags",                              // PFMLIB_ERR_IRRFLAGS
    "unit mask invalid or missing",                        // PFMLIB_ERR_UMASK
    "out of memory",                                       // PFMLIB_ERR_NOMEM
};
constexpr int kCount = static_cast<int>(sizeof kMessages / sizeof kMessages[0]);
static_assert(kCount == -PFMLIB_ERR_NOMEM + 1, "one message per code");

}  // namespace

// A static string (never freed, never written: char * only because libpfm
// declared it so). Positive and unknown codes: "unknown error code".
PFMLIB_EXPORT char* pfm_strerror(int code) {
  if (code > 0 || code <= -kCount) return const_cast<char*>("unknown error code");
  return const_cast<char*>(kMessages[-code]);
}
