/* The kernels for any x86-64 (SSE2: what the portable build's flags give), or, in a
 * build with one path (kern.h: -DQKT_NATIVE=ON, clang, not x86-64), for the build's
 * flags. */
#include "kern.h"

#include "kern_attention.h"
#include "kern_ops.h"

#if QKT_KERN_DISPATCH
const qkt__kern qkt__kern_baseline = QKT__KERN_TABLE("baseline");
#elif defined(QKT_NATIVE)
const qkt__kern qkt__kern_single = QKT__KERN_TABLE("native");
#else
const qkt__kern qkt__kern_single = QKT__KERN_TABLE("baseline");
#endif
