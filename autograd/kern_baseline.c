/* The kernels for any x86-64 (SSE2: what the portable build's flags give), or, in a
 * build with one path (kern_table.h: -DQKT_NATIVE=ON, clang, not x86-64), for the build's
 * flags. */
#include "kern_table.h"

#if !QKT_KERN_DISPATCH && defined(QKT_NATIVE) && defined(__GNUC__) && !defined(__clang__)
/* As the avx2 and avx512 paths (kern_table.h: why): without it a -march=native build on a CPU
 * without AVX-512 leaves GELU and the other exp loops scalar. Not on the dispatching
 * build's baseline, which keeps the old default build's code. */
#pragma GCC optimize("no-trapping-math")
#endif
#include "kern_attention.h"
#include "kern_gemm_avx512.h"
#include "kern_ops.h"

#if QKT_KERN_DISPATCH
const qkt__kern qkt__kern_baseline = QKT__KERN_TABLE("baseline");
#elif defined(QKT_NATIVE)
const qkt__kern qkt__kern_single = QKT__KERN_TABLE("native");
#else
const qkt__kern qkt__kern_single = QKT__KERN_TABLE("baseline");
#endif
