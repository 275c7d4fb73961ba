/* The report page (report.html): one self-contained HTML file, its style and script
 * (plot/html/page.css, page.js, compiled in by cmake/embed.cmake) around the caller's
 * JSON data. Works from file:// with no network. */
#include <string.h>

#include "qkt_html_css.h"
#include "qkt_html_js.h"
#include "qkt_plot.h"

/* Appends s to out[*n]; out NULL: only counts. */
static void put(char *out, size_t *n, const char *s) {
    size_t k = strlen(s);
    if (out) memcpy(out + *n, s, k);
    *n += k;
}

/* The page in two passes: count, then write. The title is HTML-escaped; the JSON is the
 * caller's (its '<' written as \u003c, so it cannot close the script element). */
static size_t page(char *out, const char *title, const char *json) {
    size_t n = 0;
    put(out, &n, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>");
    for (const char *c = title; *c; c++) {
        char one[2] = {*c, 0};
        put(out, &n, *c == '<' ? "&lt;" : *c == '>' ? "&gt;" : *c == '&' ? "&amp;" : one);
    }
    put(out, &n, "</title>\n<style>\n");
    put(out, &n, qkt_html_css);
    put(out, &n, "</style></head>\n<body><div id=\"qkt-root\"></div><div id=\"qkt-tip\"></div>\n"
                 "<script id=\"qkt-data\" type=\"application/json\">");
    for (const char *c = json; *c; c++) {
        char one[2] = {*c, 0};
        put(out, &n, *c == '<' ? "\\u003c" : one);
    }
    put(out, &n, "</script>\n<script>\n");
    put(out, &n, qkt_html_js);
    put(out, &n, "</script>\n</body></html>\n");
    return n;
}

char *qkt_plot_html_page(const char *title, const char *json, size_t *len) {
    QKT_CHECK(title && json, "qkt_plot_html_page: NULL title or data");
    size_t n = page(NULL, title, json);
    char *s = qkt_malloc(n + 1);
    page(s, title, json);
    s[n] = 0;
    if (len) *len = n;
    return s;
}
