/* The float32 build runs the same forward paths as the float64 gradient checks and
 * agrees with them within float tolerance (outputs dumped by test_gc_ops). */
#include <stdlib.h>

#include "op_cases.h"
#include "qkt_test.h"

int main(void) {
    const char *dir = getenv("QKT_BUILD_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/op_forward_f64.bin", dir ? dir : ".");
    FILE *f = fopen(path, "rb");
    EXPECT(f != NULL, "missing %s (written by test_gc_ops)", path);
    if (!f) return qkt_test_finish();
    static double ref[1 << 14], got[1 << 14];
    for (int i = 0; i < N_OP_CASES; i++) {
        int64_t n = 0;
        if (fread(&n, sizeof n, 1, f) != 1 || n > (1 << 14) || fread(ref, sizeof(double), (size_t)n, f) != (size_t)n) {
            EXPECT(0, "%s: truncated reference file", path);
            break;
        }
        int64_t m = qkt_gc_forward(&op_cases[i], 1000 + (uint64_t)i, got, 1 << 14);
        EXPECT(m == n, "%s: %lld outputs in float32, %lld in float64", op_cases[i].name, (long long)m, (long long)n);
        /* Inputs are rounded to float32 (rel 6e-8) and every op adds rounding: relative
         * to the output's scale, 1e-5 is float precision with room for a few ops. */
        double scale = 1e-3, worst = 0;
        for (int64_t j = 0; j < n; j++) scale = fabs(ref[j]) > scale ? fabs(ref[j]) : scale;
        for (int64_t j = 0; j < n && j < m; j++) {
            double e = fabs(got[j] - ref[j]) / scale;
            if (!(e <= worst)) worst = e;
        }
        EXPECT(worst <= 1e-5, "%s: float32 differs from float64 by %.3g (relative to max |y|)", op_cases[i].name, worst);
    }
    fclose(f);
    return qkt_test_finish();
}
