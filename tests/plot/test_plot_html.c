/* qkt_plot_html_page: one self-contained page; the caller's JSON cannot end the script
 * element that holds it ('<' as \u003c), the title is HTML-escaped, and the page's own
 * script and style are inside (no file or network fetched). */
#include <stdlib.h>
#include <string.h>

#include "qkt_plot.h"
#include "qkt_test.h"

int main(void) {
    size_t n = 0;
    char *p = qkt_plot_html_page("a <b> & c", "{\"title\":\"</script><script>alert(1)</script>\",\"charts\":[]}", &n);
    EXPECT(p && n == strlen(p), "length %zu, strlen %zu", n, p ? strlen(p) : 0);
    EXPECT(strstr(p, "<title>a &lt;b&gt; &amp; c</title>") != NULL, "title not escaped");
    EXPECT(strstr(p, "\\u003c/script>\\u003cscript>alert(1)\\u003c/script>") != NULL, "'<' of the data not escaped");
    EXPECT(!strstr(p, "alert(1)</script>"), "the data ends its script element");
    const char *data = strstr(p, "<script id=\"qkt-data\" type=\"application/json\">");
    EXPECT(data && strstr(data, "</script>\n<script>\n") && strstr(p, "<style>") && strstr(p, "window.qkt"), "page structure");
    EXPECT(!strstr(p, " src=") && !strstr(p, "<link") && !strstr(p, "fetch(") && !strstr(p, "XMLHttpRequest"), "fetches something");
    int scripts = 0;
    for (const char *s = p; (s = strstr(s, "</script>")); s++) scripts++;
    EXPECT(scripts == 2, "%d script elements end, expected 2 (the data, the page's script)", scripts);
    free(p);
    return qkt_test_finish();
}
