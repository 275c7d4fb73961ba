/* The parts of README.md and docs/ that scripts write from runs: every section opened by
 * "<!-- NAME: written by scripts/SCRIPT -->" is closed by "<!-- NAME end -->", once, names
 * a script that exists in scripts/, and holds text (a section left empty means its
 * script was never run, and the doc would show no figures where it promises them). A
 * planted file with an empty, an unclosed and a scriptless section must fail all three. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_io.h"
#include "qkt_test.h"

static const char *root;

/* The problems of one file's sections, each printed; their count. */
static int check_file(const char *path, const char *shown) {
    size_t n;
    qkt_err err;
    char *text = qkt_read_file(path, &n, &err);
    if (!text) return 0;
    int bad = 0;
    const char *tag = ": written by scripts/";
    for (const char *p = strstr(text, "<!-- "); p; p = strstr(p + 1, "<!-- ")) {
        const char *close = strstr(p, " -->"), *w = strstr(p, tag);
        if (!close || !w || w > close) continue; /* another comment */
        char name[128], script[256], end[200], file[1200];
        snprintf(name, sizeof name, "%.*s", (int)(w - p - 5), p + 5);
        snprintf(script, sizeof script, "%.*s", (int)(close - w - strlen(tag)), w + strlen(tag));
        snprintf(file, sizeof file, "%s/scripts/%s", root, script);
        if (!qkt_file_exists(file)) fprintf(stderr, "%s: section %s: scripts/%s does not exist\n", shown, name, script), bad++;
        snprintf(end, sizeof end, "<!-- %s end -->", name);
        const char *e = strstr(close, end);
        if (!e) {
            fprintf(stderr, "%s: section %s is not closed (%s)\n", shown, name, end), bad++;
            continue;
        }
        const char *body = close + 4;
        bool text_in = false;
        for (const char *q = body; q < e; q++) text_in |= *q != '\n' && *q != ' ';
        if (!text_in) fprintf(stderr, "%s: section %s is empty: run scripts/%s\n", shown, name, script), bad++;
        if (strstr(e + 1, end)) fprintf(stderr, "%s: section %s is closed twice\n", shown, name), bad++;
    }
    free(text);
    return bad;
}

/* check_file on each Markdown file of a walk (qkt_test_walk). */
static int check_md(const char *full, const char *rel, const char *name, void *ctx) {
    (void)ctx;
    size_t k = strlen(name);
    return k > 3 && !strcmp(name + k - 3, ".md") ? check_file(full, rel) : 0;
}

int main(void) {
    root = getenv("QKT_SOURCE_DIR");
    if (!root) root = ".";
    /* planted: a good section, an empty one, one naming no script of the project, one unclosed */
    const char *tmp = qkt_test_tmpdir("doc_sections");
    const char *planted = qkt_test_path(tmp, "planted.md");
    FILE *f = fopen(planted, "w");
    EXPECT(f != NULL, "cannot write %s", planted);
    if (f) {
        fputs("<!-- a: written by scripts/readme_demo.py -->\nfigures\n<!-- a end -->\n"
              "<!-- b: written by scripts/readme_demo.py -->\n\n<!-- b end -->\n"
              "<!-- c: written by scripts/nosuch.py -->\nx\n<!-- c end -->\n"
              "<!-- d: written by scripts/readme_demo.py -->\nx\n",
              f);
        fclose(f);
    }
    EXPECT(check_file(planted, "planted.md") == 3, "the planted file's three bad sections were not all found");
    int bad = check_file(qkt_test_path(root, "README.md"), "README.md") + qkt_test_walk(root, "docs", check_md, NULL);
    EXPECT(bad == 0, "%d section%s written by scripts are wrong (listed above)", bad, bad == 1 ? "" : "s");
    return qkt_test_finish();
}
