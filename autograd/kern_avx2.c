/* The kernels for AVX2 with FMA (Haswell, Zen 1 and later): 8 floats a vector. */
#include "kern_table.h"

#if QKT_KERN_DISPATCH
/* Before the kernels (and the inline helpers of kern_simd.h) are defined, so all of them
 * are compiled for it. kern_select.c checks the CPU has both before using the table. */
#pragma GCC target("avx2,fma")
#pragma GCC optimize("no-trapping-math") /* kern_table.h: why */
#include "kern_attention.h"
#include "kern_gemm_avx512.h"
#include "kern_ops.h"

const qkt__kern qkt__kern_avx2 = QKT__KERN_TABLE("avx2");
#endif
