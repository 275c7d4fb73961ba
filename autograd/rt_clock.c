/* The one clock of qkt's elapsed times (progress lines, logs, timings). */
#include "qkt_autograd.h"

#include <time.h>

double qkt_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
