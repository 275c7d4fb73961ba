/* Picks the kernel path (kern_table.h) once per process: the widest instruction set the CPU
 * runs, or the one QKT_ISA names. The only state is the chosen table, written once
 * under pthread_once and read-only afterwards. */
#include "kern_table.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    const qkt__kern *table;
    const char *needs; /* the CPU features it needs, for the message when they are missing */
} kern_path;

#if QKT_KERN_DISPATCH
static const kern_path paths[] = { /* narrowest first */
    {"baseline", &qkt__kern_baseline, "x86-64"},
    {"avx2", &qkt__kern_avx2, "AVX2 and FMA"},
    {"avx512", &qkt__kern_avx512, "AVX-512 F, VL, BW and DQ"},
};
/* The features kern_<isa>.c's `#pragma GCC target` names; libgcc's checks include the
 * OS saving the vector registers (XGETBV). */
static bool cpu_runs(int i) {
    __builtin_cpu_init();
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                  __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
    return i == 0 || (i == 1 && avx2) || (i == 2 && avx2 && avx512);
}
#else
#ifdef QKT_NATIVE
static const kern_path paths[] = {{"native", &qkt__kern_single, "the build machine's instructions"}};
#define ONE_PATH_WHY "-DQKT_NATIVE=ON"
#else
static const kern_path paths[] = {{"baseline", &qkt__kern_single, "this build's target"}};
#define ONE_PATH_WHY "no per-ISA kernels for this compiler or target"
#endif
static bool cpu_runs(int i) { return i == 0; }
#endif
#define KNOWN_NAMES "baseline, avx2 or avx512" /* what QKT_ISA may say (kern_table.h) */
enum { n_paths = (int)(sizeof paths / sizeof paths[0]) };

/* The table of path `name` (what: how the caller names it, for the message). */
static const qkt__kern *lookup(const char *what, const char *name, qkt_err *err) {
    for (int i = 0; i < n_paths; i++) {
        if (strcmp(name, paths[i].name)) continue;
        if (cpu_runs(i)) return paths[i].table;
        char runs[64] = "";
        for (int j = 0; j < n_paths; j++)
            if (cpu_runs(j)) snprintf(runs + strlen(runs), sizeof runs - strlen(runs), "%s%s", runs[0] ? ", " : "", paths[j].name);
        qkt_err_set(err, "%s%s: this CPU lacks %s (it runs: %s)", what, name, paths[i].needs, runs);
        return NULL;
    }
#if !QKT_KERN_DISPATCH
    if (!strcmp(name, "baseline") || !strcmp(name, "avx2") || !strcmp(name, "avx512")) {
        qkt_err_set(err, "%s%s: this build has one kernel path, %s (%s)", what, name, paths[0].name, ONE_PATH_WHY);
        return NULL;
    }
#endif
    qkt_err_set(err, "%s%s: unknown kernel path (expected %s%s)", what, name, KNOWN_NAMES,
                QKT_KERN_DISPATCH ? "" : ", or native in a -DQKT_NATIVE=ON build");
    return NULL;
}

const qkt__kern *qkt__kern_named(const char *name, qkt_err *err) { return lookup("kernel path ", name, err); }

static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;
static const qkt__kern *chosen;
static qkt_err chosen_err;

static void choose(void) {
    const char *env = getenv("QKT_ISA");
    if (env && env[0]) {
        chosen = lookup("QKT_ISA=", env, &chosen_err);
        return;
    }
    for (int i = n_paths - 1; i >= 0 && !chosen; i--)
        if (cpu_runs(i)) chosen = paths[i].table;
}

const qkt__kern *qkt__kern_get(void) {
    pthread_once(&chosen_once, choose);
    if (!chosen) qkt_fatalf(QKT_FATAL_USAGE, "%s", chosen_err.msg);
    return chosen;
}

int qkt_isa_select(qkt_err *err) {
    pthread_once(&chosen_once, choose);
    return chosen ? 0 : qkt_err_set(err, "%s", chosen_err.msg);
}

const char *qkt_isa_name(void) { return qkt__kern_get()->name; }

int qkt_isa_check(const char *name, qkt_err *err) { return qkt__kern_named(name, err) ? 0 : -1; }
