/* The repository speaks of the software, not of how it was made: README.md, every
 * docs/ Markdown file and every source file (comments and strings alike) are searched
 * for words about the work rather than the program (issue numbers, "today", "merged
 * build", a commit as the reference point, met/not-met targets, timing tools that are
 * not part of qkt). Each pattern first proves it can fire on a sample phrase, and a
 * planted file with one such phrase must be caught. */
#define _GNU_SOURCE
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_test.h"

/* Each pattern (POSIX ERE, case-insensitive) with a phrase it must match. */
static const struct {
    const char *re, *sample, *why;
} words[] = {
    {"\\bissues? #?[0-9]+", "as in issue 13", "an issue number"},
    {"(^|[ (])#[0-9]+\\b", "fixed in #13", "an issue number"},
    {"\\bthe issue\\b", "the issue and the study", "a reference to an issue"},
    {"\\btoday('s)?\\b", "today's build", "a date-relative word"},
    {"\\b(this|that) morning\\b", "122 s this morning", "a date-relative word"},
    {"\\b(this|earlier|other|another) sessions?\\b", "a machine of an earlier session", "the work's sessions"},
    {"\\bmerged build\\b", "with the merged build", "the work's history"},
    {"\\bas first merged\\b", "autograd as first merged", "the work's history"},
    {"\\b(on|at) (this )?commit\\b", "measured on this commit", "a commit as the reference point"},
    {"\\bat [0-9a-f]{7,40}\\b", "on main at 1f12dda", "a commit as the reference point"},
    {"\\bthe lead\\b", "ask the lead", "the work's roles"},
    {"\\b(planned|future) MPI\\b", "a future MPI allreduce", "plans, not the software"},
    {"\\bnot met\\b", "**not met**", "a target of the work"},
    {"\\bmet for\\b", "met for the same work", "a target of the work"},
    {"\\b[0-9]+-(minute|hour) (target|bound)\\b", "within the 5-minute target", "a target of the work"},
    {"\\b(the|performance|speed) targets\\b", "Against the targets", "a target of the work"},
    {"\\| target \\|", "| target | measured |", "a target of the work"},
    {"\\btargets? (was|were|is|are) (set|met)\\b", "targets were set", "a target of the work"},
    {"[0-9.%] is the target\\b", ">= 0.95 is the target", "a target of the work"},
    {"\\bfarm-bench\\b", "pairs with farm-bench", "a timing tool that is not part of qkt"},
};
#define N_WORDS ((int)(sizeof words / sizeof *words))

static regex_t re[N_WORDS];

/* The files searched: Markdown under docs/ (and README.md), sources under these folders. */
static const char *const src_dirs[] = {"autograd", "nn",      "optim", "data",  "io",    "plot",    "train", "experiments",
                                       "cli",      "include", "tests", "bench", "scripts", "examples", "cmake"};
static const char *const src_ext[] = {".c", ".h", ".def", ".cmake", ".sh", ".py", ".cpp", "CMakeLists.txt", ".in", "Makefile"};

static bool ends_with(const char *s, const char *e) {
    size_t n = strlen(s), m = strlen(e);
    return n >= m && !strcmp(s + n - m, e);
}

/* Every hit in one file: "path:line: phrase (why)" on stderr. Returns the count. */
static int scan_file(const char *path, const char *shown) {
    size_t n;
    char *text = qkt_test_read_file(path, &n);
    if (!text) return 0;
    int hits = 0, lineno = 1;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        for (int i = 0; i < N_WORDS; i++) {
            regmatch_t m;
            if (regexec(&re[i], line, 1, &m, 0) == 0) {
                fprintf(stderr, "%s:%d: '%.*s' (%s)\n", shown, lineno, (int)(m.rm_eo - m.rm_so), line + m.rm_so, words[i].why);
                hits++;
            }
        }
        if (!nl) break;
        line = nl + 1, lineno++;
    }
    free(text);
    return hits;
}

/* scan_file on each file of a walk (qkt_test_walk) that is Markdown (*(bool *)md) or a source;
 * this file is skipped. */
static int scan_wanted(const char *full, const char *rel, const char *name, void *md) {
    bool want = false;
    if (*(bool *)md) want = ends_with(name, ".md");
    else
        for (size_t k = 0; k < sizeof src_ext / sizeof *src_ext; k++) want |= ends_with(name, src_ext[k]);
    if (!strcmp(name, "test_doc_words.c")) want = false; /* its patterns and samples */
    return want ? scan_file(full, rel) : 0;
}

int main(void) {
    const char *root = getenv("QKT_SOURCE_DIR");
    if (!root) root = ".";
    for (int i = 0; i < N_WORDS; i++) {
        int rc = regcomp(&re[i], words[i].re, REG_EXTENDED | REG_ICASE);
        EXPECT(rc == 0, "pattern %s does not compile", words[i].re);
        if (rc) return qkt_test_finish();
    }
    /* each pattern fires on its sample, and on nothing of a plain sentence */
    for (int i = 0; i < N_WORDS; i++) {
        EXPECT(regexec(&re[i], words[i].sample, 0, NULL, 0) == 0, "pattern %s misses '%s'", words[i].re, words[i].sample);
        EXPECT(regexec(&re[i], "qkt trains a GPT in 5 minutes on 2 cores; targets -1 are ignored", 0, NULL, 0) != 0,
               "pattern %s fires on plain text", words[i].re);
    }
    /* a planted file: a clean line and a bad one, found at line 2 */
    const char *tmp = qkt_test_tmpdir("doc_words");
    const char *planted = qkt_test_path(tmp, "planted.md");
    FILE *f = fopen(planted, "w");
    EXPECT(f != NULL, "cannot write %s", planted);
    if (f) fputs("The cosine reaches min-lr at the last step.\nMeasured today on the merged build.\n", f), fclose(f);
    EXPECT(scan_file(planted, "planted.md") == 2, "the planted file's two phrases were not both found");
    /* the repository */
    int hits = 0;
    hits += scan_file(qkt_test_path(root, "README.md"), "README.md");
    hits += scan_file(qkt_test_path(root, "CHANGELOG.md"), "CHANGELOG.md");
    hits += scan_file(qkt_test_path(root, "CMakeLists.txt"), "CMakeLists.txt");
    hits += scan_file(qkt_test_path(root, "Makefile"), "Makefile");
    bool md = true, src = false;
    hits += qkt_test_walk(root, "docs", scan_wanted, &md);
    for (size_t k = 0; k < sizeof src_dirs / sizeof *src_dirs; k++) hits += qkt_test_walk(root, src_dirs[k], scan_wanted, &src);
    EXPECT(hits == 0, "%d phrase%s about how qkt was made rather than what it does (listed above)", hits, hits == 1 ? "" : "s");
    for (int i = 0; i < N_WORDS; i++) regfree(&re[i]);
    return qkt_test_finish();
}
