/* The kernels for AVX-512 (F, VL, BW, DQ: Skylake-X, Ice Lake, Zen 4 and later):
 * 16 floats a vector, 32 vector registers. */
#include "kern_table.h"

#if QKT_KERN_DISPATCH
/* Before the kernels (and the inline helpers of kern_simd.h) are defined, so all of them
 * are compiled for it. kern_select.c checks the CPU has every feature named here. */
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")
#pragma GCC optimize("no-trapping-math") /* kern_table.h: why */
#include "kern_attention.h"
#include "kern_gemm_avx512.h"
#include "kern_ops.h"

const qkt__kern qkt__kern_avx512 = QKT__KERN_TABLE("avx512");
#endif
