/* The command examples of README.md, docs/ (*.md) and data/corpora/README.md against the
 * built program, so the docs cannot drift from it:
 *  1. every `qkt COMMAND ... --flag` anywhere in them (code blocks, inline code, tables)
 *     names a command of `qkt --help` and flags its `qkt COMMAND --help` lists;
 *  2. every line of a ```sh block that starts with `qkt ` (or `build/qkt `) runs, shrunk (--steps 2,
 *     --tokens 10, ... : shrink[] below), in a temp dir whose data/ is the repository's,
 *     and exits 0;
 *  3. every ``` block whose first line is `$ qkt ARGS` prints its body (stdout) exactly
 *     (scripts/update_doc_examples.py rewrites them).
 * It first plants a doc with a made-up flag, a failing command and a stale output to
 * show each check can fail. `test_doc_examples FILE.md ...` checks other files. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "qkt_io.h"
#include "qkt_test.h"

static const char *src, *tmp;
static char workdir[600]; /* of the file being checked: its examples' outputs */
static int problems;      /* found in the file being checked */

/* stdout of `sh -c cmd` (stderr to *err_out if given, else dropped); exit status or -1. */
static int run_sh(const char *cmd, char **out, char **err_out) {
    char full[16384], errf[512];
    snprintf(errf, sizeof errf, "%s/stderr.txt", tmp);
    snprintf(full, sizeof full, "cd '%s' && (QKT_THREADS=1 timeout 120 %s) 2>'%s'", workdir, cmd, errf);
    FILE *p = popen(full, "r");
    if (!p) return -1;
    size_t cap = 1 << 16, n = 0, k;
    char *b = malloc(cap);
    while ((k = fread(b + n, 1, cap - n - 1, p)) > 0)
        if ((n += k) + 1 >= cap) b = realloc(b, cap *= 2);
    b[n] = 0;
    int st = pclose(p);
    *out = b;
    if (err_out) {
        char *e = qkt_test_read_file(errf, NULL);
        *err_out = e ? e : strdup("");
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---------------------------------------------------------------- the commands and their flags */
#define MAX_CMDS 32
static char cmd_names[MAX_CMDS][32];
static char *cmd_help[MAX_CMDS];
static int n_cmds;

static char *qkt_path;

static void load_commands(void) {
    char cmd[4200], *out;
    snprintf(cmd, sizeof cmd, "%s --help", qkt_path);
    EXPECT(run_sh(cmd, &out, NULL) == 0, "qkt --help failed");
    const char *p = strstr(out, "commands:\n");
    EXPECT(p != NULL, "qkt --help lists no commands: %s", out);
    for (p = p ? strchr(p, '\n') + 1 : ""; *p == ' ' && n_cmds < MAX_CMDS;) {
        while (*p == ' ') p++;
        size_t n = strcspn(p, " \n");
        snprintf(cmd_names[n_cmds++], sizeof cmd_names[0], "%.*s", (int)n, p);
        p = strchr(p, '\n');
        if (!p) break;
        p++;
    }
    free(out);
    EXPECT(n_cmds >= 8, "only %d commands in qkt --help", n_cmds);
}

static int find_cmd(const char *w, size_t n) {
    for (int i = 0; i < n_cmds; i++)
        if (strlen(cmd_names[i]) == n && !strncmp(cmd_names[i], w, n)) return i;
    return -1;
}

/* Does `qkt CMD --help` list --name (as "--name " or "--name\n", its own or an alias)? */
static bool flag_known(int c, const char *name, size_t n) {
    if (n == 4 && !strncmp(name, "help", 4)) return true; /* every command */
    if (!cmd_help[c]) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "%s %s --help", qkt_path, cmd_names[c]);
        run_sh(cmd, &cmd_help[c], NULL);
    }
    for (const char *p = cmd_help[c]; (p = strstr(p, "--")) != NULL; p += 2)
        if (!strncmp(p + 2, name, n) && (p[2 + n] == ' ' || p[2 + n] == '\n' || p[2 + n] == '=' || p[2 + n] == ']' ||
                                         p[2 + n] == ','))
            return true;
    return false;
}

/* Check 1 on one (joined) line. */
static void check_flags(const char *file, int lineno, const char *line) {
    for (const char *p = line; (p = strstr(p, "qkt ")) != NULL; p += 4) {
        if (p > line && !strchr(" `/$(", p[-1])) continue; /* not the program: libqkt, qkt_... */
        int ticks = 0;
        for (const char *q = line; q < p; q++) ticks += *q == '`';
        const char *w = p + 4;
        size_t wn = strspn(w, "abcdefghijklmnopqrstuvwxyz_");
        const char *end = ticks % 2 ? strchr(w, '`') : NULL; /* inside inline code: to its end */
        if (!end) end = w + strcspn(w, "#`|");                /* a code line: to a comment */
        int c = find_cmd(w, wn);
        if (c < 0) {
            /* prose ("qkt trains ...") unless a flag follows: then a command that does not exist */
            const char *dash = strstr(w, " --");
            if (wn && dash && dash < end && (size_t)(dash - w) == wn) {
                problems++;
                fprintf(stderr, "%s:%d: 'qkt %.*s': no such command (qkt --help)\n", file, lineno, (int)wn, w);
            }
            continue;
        }
        for (const char *t = w + wn; t < end; t++) {
            if (t[0] != '-' || t[1] != '-' || (t > w && !strchr(" [(", t[-1]))) continue;
            const char *name = t + 2;
            size_t n = strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-");
            if (!n || !isalpha((unsigned char)name[0])) continue;
            if (!flag_known(c, name, n)) {
                problems++;
                fprintf(stderr, "%s:%d: qkt %s has no flag --%.*s (qkt %s --help)\n", file, lineno, cmd_names[c], (int)n, name,
                        cmd_names[c]);
            }
            t = name + n - 1;
        }
    }
}

/* ---------------------------------------------------------------- shrinking */
/* Flags whose value is replaced so an example runs in seconds (the step counts stay
 * consistent: warmup <= steps and <= lr-decay-steps). */
static const struct {
    const char *flag, *value;
} shrink[] = {
    {"steps", "2"},         {"max_iters", "2"},      {"lr_decay_iters", "2"}, {"warmup-steps", "1"},
    {"warmup_iters", "1"},  {"eval-every", "1"},     {"eval_interval", "1"},  {"eval-batches", "1"},
    {"eval_iters", "1"},    {"tokens", "10"},        {"log-every", "1"},      {"log_interval", "1"},
    {"seeds", "1"},         {"lr-steps", "2"},       {"lr-decay-steps", "2"},
};

/* `qkt ARGS` -> "QKT_BIN ARGS" with the shrink[] flags' values replaced. */
static void shrunk(const char *cmd, char *out, size_t n) {
    size_t k = (size_t)snprintf(out, n, "%s", qkt_path);
    const char *p = cmd + 3; /* after "qkt" */
    while (*p && k < n - 1) {
        if (p[0] == '-' && p[1] == '-' && p[-1] == ' ') {
            const char *name = p + 2;
            size_t nn = strcspn(name, "= ");
            int s = -1;
            for (size_t i = 0; i < sizeof shrink / sizeof *shrink; i++)
                if (strlen(shrink[i].flag) == nn && !strncmp(shrink[i].flag, name, nn)) s = (int)i;
            if (s >= 0 && (name[nn] == '=' || name[nn] == ' ')) {
                k += (size_t)snprintf(out + k, n - k, "--%s%c%s", shrink[s].flag, name[nn], shrink[s].value);
                p = name + nn + 1;
                p += strcspn(p, " "); /* the old value */
                continue;
            }
        }
        out[k++] = *p++;
        out[k] = 0;
    }
}

/* ---------------------------------------------------------------- one file */
static void check_file(const char *path, const char *label) {
    static int n_files;
    char mk[2048];
    snprintf(workdir, sizeof workdir, "%s/work%d", tmp, n_files++); /* each doc its own, with the repository's data/ */
    snprintf(mk, sizeof mk, "mkdir '%s' && ln -s '%s/data' '%s/data'", workdir, src, workdir);
    EXPECT(system(mk) == 0, "%s", mk);
    char *doc = qkt_test_read_file(path, NULL);
    EXPECT(doc != NULL, "cannot read %s", path);
    if (!doc) return;
    bool in_fence = false, sh = false, expect_block = false;
    char joined[16384] = "", expect_cmd[4096] = "";
    qkt_buf body = {0};
    int lineno = 0, start = 0;
    for (char *line = doc, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl) *nl = 0;
        lineno++;
        if (!strncmp(line, "```", 3)) {
            if (in_fence && expect_block) { /* check 3 */
                char full[8192], *out, *err;
                snprintf(full, sizeof full, "%s %s", qkt_path, expect_cmd);
                int rc = run_sh(full, &out, &err);
                if (rc != 0 || strcmp(out, body.s ? body.s : "")) {
                    problems++;
                    fprintf(stderr, "%s:%d: '$ qkt %s' prints something else now (exit %d; scripts/update_doc_examples.py "
                                    "rewrites it):\n%s%s", label, start, expect_cmd, rc, out, err);
                }
                free(out), free(err);
            }
            in_fence = !in_fence;
            sh = in_fence && !strcmp(line, "```sh");
            expect_block = false;
            free(body.s), body = (qkt_buf){0};
            if (in_fence && nl && !strncmp(nl + 1, "$ qkt ", 6)) {
                char *e = strchr(nl + 1, '\n');
                snprintf(expect_cmd, sizeof expect_cmd, "%.*s", e ? (int)(e - nl - 7) : 0, nl + 7);
                expect_block = e != NULL;
                start = lineno + 1;
                lineno++;
                nl = e; /* the command line is not part of the body */
            }
            continue;
        }
        if (expect_block) {
            qkt_buf_printf(&body, "%s\n", line);
            continue;
        }
        /* a line ending in a backslash continues on the next */
        size_t jl = strlen(joined);
        if (!jl) start = lineno;
        const char *text = jl ? line + strspn(line, " ") : line; /* a continuation's indent goes */
        size_t l = strlen(text);
        bool cont = l && text[l - 1] == '\\';
        snprintf(joined + jl, sizeof joined - jl, "%.*s", (int)(cont ? l - 1 : l), text);
        if (cont) continue;
        check_flags(label, start, joined);
        const char *q = !strncmp(joined, "build/qkt ", 10) ? joined + 6 : joined; /* README's build/qkt */
        if (in_fence && sh && !strncmp(q, "qkt ", 4)) { /* check 2 */
            char cmd[16384], *out, *err;
            shrunk(q, cmd, sizeof cmd);
            int rc = run_sh(cmd, &out, &err);
            if (rc != 0) {
                problems++;
                fprintf(stderr, "%s:%d: exit %d from the example, run shrunk as\n  %s\n%s%s", label, start, rc, cmd, out, err);
            }
            free(out), free(err);
        }
        joined[0] = 0;
    }
    free(body.s);
    free(doc);
}

/* The repository's docs: README.md, docs/ (*.md), data/corpora/README.md. */
static int check_repo(void) {
    int total = 0;
    char path[2048], label[512];
    const char *top[] = {"README.md", "data/corpora/README.md"};
    for (size_t i = 0; i < sizeof top / sizeof *top; i++) {
        snprintf(path, sizeof path, "%s/%s", src, top[i]);
        problems = 0;
        check_file(path, top[i]);
        EXPECT(problems == 0, "%s: %d example problem(s), listed above", top[i], problems);
        total++;
    }
    snprintf(path, sizeof path, "%s/docs", src);
    struct dirent **ents;
    int n = scandir(path, &ents, NULL, alphasort);
    EXPECT(n > 0, "cannot list %s", path);
    for (int i = 0; i < n; i++) {
        const char *name = ents[i]->d_name;
        size_t l = strlen(name);
        if (l > 3 && !strcmp(name + l - 3, ".md")) {
            snprintf(path, sizeof path, "%s/docs/%s", src, name);
            snprintf(label, sizeof label, "docs/%s", name);
            problems = 0;
            check_file(path, label);
            EXPECT(problems == 0, "%s: %d example problem(s), listed above", label, problems);
            total++;
        }
        free(ents[i]);
    }
    free(n > 0 ? ents : NULL);
    return total;
}

/* A doc with one of each fault: each check must report it. */
static void planted(void) {
    char path[600];
    snprintf(path, sizeof path, "%s/planted.md", tmp);
    FILE *f = fopen(path, "w");
    fprintf(f, "Inline: `qkt sample --ckpt X --no-such-flag 3`, and `qkt nosuchcmd --x`.\n\n"
               "```sh\nqkt train --data mqar --n-layer 1 --n-embd 16 --n-head 2 --block-size 32 --batch-size 4 \\\n"
               "          --steps 500 --made-up 1 --out planted\n"
               "qkt train --data mqar --n-layer 1 --n-embd 16 --n-head 2 --block-size 32 --batch-size 4 --steps 3 "
               "--eval-batches 1 --out planted2\n"
               "qkt train --data mqar --n-layer 1 --n-embd 16 --n-head 2 --block-size 32 --batch-size 4 --steps 3 "
               "--eval-batches 1 --out planted2\n"
               "```\n\n```\n$ qkt data --show mqar --count 1\nnot what it prints\n```\n");
    fclose(f);
    fprintf(stderr, "--- planted faults (expected to be reported):\n");
    problems = 0;
    check_file(path, "planted.md");
    fprintf(stderr, "--- end of planted faults\n");
    /* --no-such-flag, nosuchcmd, --made-up (named) and its run's exit 2, the second
     * run into planted2 (it holds a run: exit 2), the stale output: 6 */
    EXPECT(problems == 6, "the planted doc gave %d problems, expected 6", problems);
}

int main(int argc, char **argv) {
    const char *s = getenv("QKT_SOURCE_DIR");
    char *src_abs = realpath(s && *s ? s : "..", NULL); /* the work dirs link to its data/ */
    EXPECT(src_abs != NULL, "no source directory %s", s && *s ? s : "..");
    if (!src_abs) return qkt_test_finish();
    src = src_abs;
    const char *bin = qkt_test_bin();
    qkt_path = realpath(bin, NULL);
    EXPECT(qkt_path != NULL, "no qkt program at %s", bin);
    if (!qkt_path) return qkt_test_finish();
    tmp = qkt_test_tmpdir("docs");
    snprintf(workdir, sizeof workdir, "%s", tmp);
    load_commands();
    if (argc > 1) {
        for (int i = 1; i < argc; i++) {
            problems = 0;
            check_file(argv[i], argv[i]);
            EXPECT(problems == 0, "%s: %d example problem(s), listed above", argv[i], problems);
        }
    } else {
        planted();
        int files = check_repo();
        EXPECT(files >= 10, "only %d docs checked", files);
    }
    free(qkt_path), free(src_abs);
    return qkt_test_finish();
}
