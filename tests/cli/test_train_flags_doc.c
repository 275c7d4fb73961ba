/* docs/train.md's flag table is the program's: the block between its markers equals
 * `qkt train --flags-markdown` (made from the field table, train/train_fields.def), and
 * every flag of the table is in it. Rebuild the block with that command after changing a
 * field. */
#include <stdlib.h>
#include <string.h>

#include "qkt_test.h"
#include "qkt_train_fields.h"

#define BEGIN "tests/cli/test_train_flags_doc.c checks that it matches -->\n"
#define END "<!-- end of the generated table -->"

int main(void) {
    static char out[1 << 16];
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s train --flags-markdown", qkt_test_bin());
    int rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0 && !strncmp(out, "| flag | default | meaning |\n", 29), "(%d) %.200s", rc, out);
    const char *src = getenv("QKT_SOURCE_DIR");
    char *doc = qkt_test_read_file(qkt_test_path(src ? src : ".", "docs/train.md"), NULL);
    EXPECT(doc != NULL, "docs/train.md not found (QKT_SOURCE_DIR %s)", src ? src : "unset");
    char *a = doc ? strstr(doc, BEGIN) : NULL, *b = a ? strstr(a, END) : NULL;
    EXPECT(a && b, "docs/train.md has no generated flag table between the markers");
    if (a && b) {
        a += strlen(BEGIN);
        size_t n = (size_t)(b - a);
        EXPECT(n == strlen(out) && !memcmp(a, out, n),
               "docs/train.md's flag table differs from `qkt train --flags-markdown`; replace it with:\n%s", out);
    }
    for (int i = 0; i < qkt_train_field_count(); i++) {
        const qkt_train_field *f = qkt_train_field_at(i);
        if (!f->flag) continue;
        char row[128];
        snprintf(row, sizeof row, "| `--%s ", f->flag);
        EXPECT(strstr(out, row) != NULL, "--%s (field %s) is not in the table", f->flag, f->name);
    }
    free(doc);
    return qkt_test_finish();
}
