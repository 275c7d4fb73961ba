/* A planted library file for check_silent.cmake: two calls it must report, and words it
 * must not (comments, a string, a prefixed name), e.g. exit(1) or printf("x"). */
#include <stdio.h>
#include <stdlib.h>

void qkt_dist_abort(int code);

int loud(int x) {
    // fprintf(stderr, "a comment\n");
    const char *s = "see exit(2) and printf(3)";
    if (x) fprintf(stderr, "loud %s\n", s);
    if (x > 1) qkt_dist_abort(x); /* exit(x) */
    if (x > 2) exit(x);
    return 0;
}
