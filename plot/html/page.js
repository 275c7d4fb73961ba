/* qkt's report page: draws the charts of the JSON in #qkt-data (format: docs/ablate.md,
 * "report.html"). Line charts: one legend entry per group (a variant, a run), a select
 * per key of the series (task, d_k, metric, ...), seeds as a mean line with a min-max
 * band or one line each; heatmaps: one map per key choice. No network, no library. */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("qkt-data").textContent);
  var SVG = "http://www.w3.org/2000/svg", W = 660, H = 330, M = {l: 64, r: 14, t: 10, b: 40};
  var PAL = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  var root = document.getElementById("qkt-root"), tip = document.getElementById("qkt-tip"), charts = {};

  function mk(tag, at, parent, text) {
    var e = tag.charAt(0) === "s" && tag.charAt(1) === ":" ? document.createElementNS(SVG, tag.slice(2)) : document.createElement(tag);
    for (var k in at || {}) e.setAttribute(k, at[k]);
    if (text != null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function esc(s) { return String(s).replace(/[&<>"]/g, function (c) { return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]; }); }
  function md(s) { return esc(s).replace(/`([^`]*)`/g, "<code>$1</code>").replace(/\*\*([^*]*)\*\*/g, "<b>$1</b>"); }
  function fmt(v) {
    if (v == null || !isFinite(v)) return String(v);
    var a = Math.abs(v);
    return a !== 0 && (a >= 1e5 || a < 1e-3) ? v.toExponential(5) : String(+v.toPrecision(6));
  }
  function showTip(ev, html) {
    tip.innerHTML = html;
    tip.style.display = "block";
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 4) + "px";
    tip.style.top = ev.clientY + 14 + "px";
  }
  function hideTip() { tip.style.display = "none"; }

  /* ------------------------------------------------------------ scales and axes */
  function scale(lo, hi, a, b, log) {
    var f = log ? Math.log10 : function (v) { return v; }, l = f(lo), h = f(hi);
    if (h === l) { l -= 0.5; h += 0.5; }
    return function (v) { return a + (f(v) - l) / (h - l) * (b - a); };
  }
  function ticks(lo, hi, log, given) {
    if (given) return given.filter(function (v) { return v >= lo && v <= hi; });
    var t = [];
    if (log) {
      for (var e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++)
        [1, 2, 5].forEach(function (m) { var v = m * Math.pow(10, e); if (v >= lo * 0.999 && v <= hi * 1.001) t.push(v); });
      if (t.length > 9) t = t.filter(function (v) { return Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9; });
      return t.length ? t : [lo, hi];
    }
    var span = hi - lo || Math.abs(hi) || 1, step = Math.pow(10, Math.floor(Math.log10(span / 5))), r = span / 5 / step;
    step *= r > 5 ? 10 : r > 2 ? 5 : r > 1 ? 2 : 1;
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    return t;
  }
  function extent(vals, log) {
    var lo = Infinity, hi = -Infinity;
    vals.forEach(function (v) { if (v != null && isFinite(v) && (!log || v > 0)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
    if (lo > hi) return log ? [1, 10] : [0, 1];
    if (lo === hi) return log ? [lo / 2, hi * 2] : [lo - (Math.abs(lo) || 1) * 0.1, hi + (Math.abs(hi) || 1) * 0.1];
    if (!log) { var pad = (hi - lo) * 0.04; lo -= pad; hi += pad; }
    return [lo, hi];
  }
  function axes(svg, C, xs, ys, xr, yr) {
    ticks(yr[0], yr[1], C.ylog).forEach(function (v) {
      var y = ys(v);
      mk("s:line", {x1: M.l, x2: W - M.r, y1: y, y2: y, "class": "grid"}, svg);
      mk("s:text", {x: M.l - 4, y: y + 4, "text-anchor": "end"}, svg, fmt(v));
    });
    ticks(xr[0], xr[1], C.xlog, C.xticks).forEach(function (v) {
      var x = xs(v);
      mk("s:line", {x1: x, x2: x, y1: M.t, y2: H - M.b, "class": "grid"}, svg);
      mk("s:text", {x: x, y: H - M.b + 14, "text-anchor": "middle"}, svg, fmt(v));
    });
    mk("s:rect", {x: M.l, y: M.t, width: W - M.l - M.r, height: H - M.t - M.b, "class": "axis"}, svg);
    mk("s:text", {x: (M.l + W - M.r) / 2, y: H - 6, "text-anchor": "middle"}, svg, C.xlabel + (C.xlog ? " (log)" : ""));
    mk("s:text", {x: 12, y: (M.t + H - M.b) / 2, transform: "rotate(-90 12 " + (M.t + H - M.b) / 2 + ")", "text-anchor": "middle"}, svg,
       (C.ylabel || C.st.sel.metric || "") + (C.ylog ? " (log)" : ""));
  }

  /* ------------------------------------------------------------ line charts */
  function match(s, sel) { for (var k in sel) if (String(s.k[k]) !== String(sel[k])) return false; return true; }
  /* What to draw: per visible group, each seed's line, or their mean with the min-max band. */
  function lines(C) {
    var st = C.st, out = [], vis = C.series.filter(function (s) { return match(s, st.sel); });
    C.groups.forEach(function (g) {
      if (st.hidden[g]) return;
      var ss = vis.filter(function (s) { return s.g === g; });
      if (ss.length <= 1 || st.seeds) return ss.forEach(function (s) { out.push({g: g, s: s, seed: s.seed, x: s.x, y: s.y}); });
      var by = {};
      ss.forEach(function (s) { s.x.forEach(function (x, i) { if (s.y[i] != null && isFinite(s.y[i])) (by[x] = by[x] || []).push(s.y[i]); }); });
      var xs = Object.keys(by).map(Number).sort(function (a, b) { return a - b; }), L = {g: g, s: ss[0], n: ss.length, x: xs, y: [], lo: [], hi: []};
      xs.forEach(function (x) {
        var v = by[x];
        L.y.push(v.reduce(function (a, b) { return a + b; }, 0) / v.length);
        L.lo.push(Math.min.apply(null, v)); L.hi.push(Math.max.apply(null, v));
      });
      out.push(L);
    });
    return out;
  }
  function color(C, g) { return PAL[C.groups.indexOf(g) % PAL.length]; }
  function path(X, Y, xs, ys, log) {
    var d = "", pen = false;
    X.forEach(function (x, i) {
      var y = Y[i];
      if (y == null || !isFinite(y) || (log && y <= 0)) { pen = false; return; }
      d += (pen ? "L" : "M") + xs(x).toFixed(1) + "," + ys(y).toFixed(1);
      pen = true;
    });
    return d;
  }
  function drawLine(C) {
    var box = C.plot, L = lines(C), all = [], allx = [];
    box.innerHTML = "";
    L.forEach(function (l) { allx = allx.concat(l.x); all = all.concat(l.y, l.lo || [], l.hi || []); });
    (C.ranges || []).forEach(function (r) { if (!C.st.hidden[r.g]) allx.push(r.lo, r.hi); });
    var xr = extent(allx, C.xlog), yr = extent(all, C.ylog);
    var xs = scale(xr[0], xr[1], M.l, W - M.r, C.xlog), ys = scale(yr[0], yr[1], H - M.b, M.t, C.ylog);
    var svg = mk("s:svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H}, box);
    axes(svg, C, xs, ys, xr, yr);
    (C.ranges || []).forEach(function (r, i) { /* the stable LR range: a bar along the x axis */
      if (C.st.hidden[r.g] || !isFinite(r.lo)) return;
      var b = mk("s:rect", {x: xs(r.lo) - 3, width: xs(r.hi) - xs(r.lo) + 6, y: H - M.b - 6 - 5 * i, height: 4, fill: color(C, r.g),
                            "class": "range", "data-g": r.g}, svg);
      mk("s:title", {}, b, r.g + ": " + r.label);
    });
    L.forEach(function (l) {
      var c = color(C, l.g);
      if (l.lo) mk("s:path", {d: path(l.x, l.hi, xs, ys, C.ylog).replace(/^M/, "M") + path(l.x.slice().reverse(), l.lo.slice().reverse(), xs, ys, C.ylog).replace(/^M/, "L") + "Z",
                              fill: c, "fill-opacity": 0.15, stroke: "none", "class": "band", "data-g": l.g}, svg);
      mk("s:path", {d: path(l.x, l.y, xs, ys, C.ylog), stroke: c, fill: "none", "stroke-width": 1.6, "class": "ln", "data-g": l.g,
                    "data-seed": l.n ? "mean" : String(l.seed)}, svg);
      if (l.x.length <= 40) l.x.forEach(function (x, i) {
        if (l.y[i] != null && isFinite(l.y[i]) && (!C.ylog || l.y[i] > 0)) mk("s:circle", {cx: xs(x), cy: ys(l.y[i]), r: 2.5, fill: c}, svg);
      });
    });
    if (!L.length) mk("s:text", {x: (M.l + W - M.r) / 2, y: (M.t + H - M.b) / 2, "text-anchor": "middle"}, svg, "no series for this choice");
    var dot = mk("s:circle", {r: 4, fill: "none", stroke: "#000", visibility: "hidden"}, svg);
    C.pos = function (l, i) { return [xs(l.x[i]), ys(l.y[i])]; };
    C.drawn = L;
    svg.addEventListener("mousemove", function (ev) {
      var p = svg.getBoundingClientRect(), mx = (ev.clientX - p.left) * W / p.width, my = (ev.clientY - p.top) * H / p.height, best = null, bd = 900;
      L.forEach(function (l) {
        l.x.forEach(function (x, i) {
          if (l.y[i] == null || !isFinite(l.y[i]) || (C.ylog && l.y[i] <= 0)) return;
          var dx = xs(x) - mx, dy = ys(l.y[i]) - my, d = dx * dx + dy * dy;
          if (d < bd) { bd = d; best = [l, i]; }
        });
      });
      if (!best) { dot.setAttribute("visibility", "hidden"); return hideTip(); }
      var l = best[0], i = best[1], keys = [];
      for (var k in l.s.k) if (k !== "metric") keys.push(esc(k) + " " + esc(l.s.k[k]));
      keys.push(l.n ? "mean of " + l.n + " seeds (band: min-max " + fmt(l.lo[i]) + " .. " + fmt(l.hi[i]) + ")" : l.seed != null ? "seed " + esc(l.seed) : "");
      dot.setAttribute("cx", xs(l.x[i])); dot.setAttribute("cy", ys(l.y[i])); dot.setAttribute("visibility", "visible");
      keys = keys.filter(String);
      showTip(ev, "<b>" + esc(l.g) + "</b><br>" + (keys.length ? keys.join(" &middot; ") + "<br>" : "") + esc(C.xlabel) + " " + fmt(l.x[i]) +
                  "<br>" + esc(l.s.k.metric || C.ylabel) + " = <span class=\"v\">" + fmt(l.y[i]) + "</span>");
    });
    svg.addEventListener("mouseleave", function () { dot.setAttribute("visibility", "hidden"); hideTip(); });
  }

  /* ------------------------------------------------------------ heatmaps */
  function heat(v) { /* white -> blue -> dark, v in [0, 1] */
    v = Math.max(0, Math.min(1, v));
    var s = [[255, 255, 255], [107, 174, 214], [8, 48, 107], [20, 10, 30]], t = v * 3, i = Math.min(2, Math.floor(t)), f = t - i;
    return "rgb(" + s[i].map(function (a, j) { return Math.round(a + (s[i + 1][j] - a) * f); }).join(",") + ")";
  }
  function drawHeat(C) {
    var box = C.plot;
    box.innerHTML = "";
    var m = C.maps.filter(function (m) { return match(m, C.st.sel); })[0];
    if (!m) return mk("p", {"class": "note"}, box, "no map for this choice");
    var T = m.T, px = Math.max(4, Math.floor(360 / T)), cv = mk("canvas", {width: T * px, height: T * px}, box), g = cv.getContext("2d");
    for (var q = 0; q < T; q++) for (var k = 0; k < T; k++) { g.fillStyle = heat(m.v[q * T + k]); g.fillRect(k * px, q * px, px, px); }
    mk("p", {"class": "note"}, box, "rows: query position, columns: key position; colour: attention weight 0 (white) .. 1 (dark)");
    cv.addEventListener("mousemove", function (ev) {
      var r = cv.getBoundingClientRect(), k = Math.floor((ev.clientX - r.left) / r.width * T), q = Math.floor((ev.clientY - r.top) / r.height * T);
      if (q < 0 || k < 0 || q >= T || k >= T) return hideTip();
      showTip(ev, "query " + q + ", key " + k + "<br>weight = <span class=\"v\">" + fmt(m.v[q * T + k]) + "</span>");
    });
    cv.addEventListener("mouseleave", hideTip);
  }

  /* ------------------------------------------------------------ the page */
  function build(C) {
    /* a series' x may be an index into the chart's shared x arrays (report.html writes each once) */
    if (C.xs && C.series) C.series.forEach(function (s) { if (typeof s.x === "number") s.x = C.xs[s.x]; });
    var div = mk("div", {"class": "chart", id: "c-" + C.id}, root), items = C.type === "heat" ? C.maps : C.series;
    mk("h2", {}, div, C.title);
    if (C.note) mk("p", {"class": "note"}, div).innerHTML = md(C.note);
    C.st = {sel: {}, hidden: {}, seeds: false};
    var ctl = mk("div", {"class": "ctl"}, div), sels = {};
    /* The selects start on, and after a change move to, a combination that has data: the
     * chart's default where it has any, else the first item's keys (the tasks of a study
     * need not share their d_k values). A change that leaves no match moves the other
     * keys to the first item with the chosen value. */
    var want = {};
    (C.ctl || []).forEach(function (key) {
      var d = C.def && C.def[key];
      if (d != null && items.some(function (s) { return String(s.k[key]) === String(d); })) want[key] = d;
    });
    var first = items.filter(function (s) { return match(s, want); })[0] || items[0];
    function settle(key) {
      if (items.some(function (s) { return match(s, C.st.sel); })) return;
      var m = items.filter(function (s) { return String(s.k[key]) === String(C.st.sel[key]); })[0];
      if (!m) return;
      for (var k in sels) { C.st.sel[k] = m.k[k]; sels[k].value = String(m.k[k]); }
    }
    (C.ctl || []).forEach(function (key) {
      var vals = [];
      items.forEach(function (s) { if (vals.indexOf(s.k[key]) < 0) vals.push(s.k[key]); });
      if (typeof vals[0] === "number") vals.sort(function (a, b) { return a - b; });
      C.st.sel[key] = first ? first.k[key] : vals[0];
      var lab = mk("label", {}, ctl, key + " "), sel = mk("select", {"data-key": key}, lab);
      sels[key] = sel;
      vals.forEach(function (v) { var o = mk("option", {value: v}, sel, v); if (String(v) === String(C.st.sel[key])) o.selected = true; });
      sel.addEventListener("change", function () {
        C.st.sel[key] = typeof vals[0] === "number" ? Number(sel.value) : sel.value;
        settle(key);
        C.draw();
      });
    });
    if (C.type !== "heat") {
      if (C.series.some(function (s) { return s.seed != null; }) && C.series.some(function (a) {
        return C.series.some(function (b) { return a !== b && a.g === b.g && a.seed !== b.seed && JSON.stringify(a.k) === JSON.stringify(b.k); });
      })) {
        var lab = mk("label", {}, ctl), cb = mk("input", {type: "checkbox", "class": "seeds"}, lab);
        lab.appendChild(document.createTextNode(" single seeds (else mean and min-max band)"));
        cb.addEventListener("change", function () { C.st.seeds = cb.checked; C.draw(); });
      }
      C.groups = [];
      C.series.forEach(function (s) { if (C.groups.indexOf(s.g) < 0) C.groups.push(s.g); });
      var lg = mk("div", {"class": "lg"}, div);
      C.groups.forEach(function (g) {
        var it = mk("span", {"data-g": g, title: "click: hide or show"}, lg);
        mk("i", {style: "background:" + color(C, g)}, it);
        it.appendChild(document.createTextNode(g));
        it.addEventListener("click", function () { C.st.hidden[g] = !C.st.hidden[g]; it.className = C.st.hidden[g] ? "off" : ""; C.draw(); });
      });
    }
    C.plot = mk("div", {"class": "plot"}, div);
    C.draw = function () { (C.type === "heat" ? drawHeat : drawLine)(C); };
    C.draw();
    charts[C.id] = C;
  }
  document.title = D.title;
  mk("h1", {}, root, D.title);
  (D.notes || []).forEach(function (n) { mk("p", {"class": "note"}, root).innerHTML = md(n); });
  if (D.findings && D.findings.length) {
    mk("h2", {id: "findings"}, root, "Findings");
    var t = mk("table", {"class": "find"}, root), hr = mk("tr", {}, t);
    ["#", "claim", "measurement", "verdict"].forEach(function (h) { mk("th", {}, hr, h); });
    D.findings.forEach(function (f) {
      var tr = mk("tr", {}, t);
      [f.id, f.claim, f.meas].forEach(function (c) { mk("td", {}, tr).innerHTML = md(c); });
      var td = mk("td", {}, tr), a = mk("a", {href: "#c-" + f.chart}, td);
      a.innerHTML = md(f.verdict);
      a.addEventListener("click", function () { /* show the evidence: the chart's metric, task, ... */
        var C = charts[f.chart];
        if (!C) return;
        for (var k in f.sel || {}) {
          var s = C.plot.parentNode.querySelector("select[data-key='" + k + "']");
          if (s && [].some.call(s.options, function (o) { return o.value === String(f.sel[k]); })) { s.value = String(f.sel[k]); s.dispatchEvent(new Event("change")); }
        }
      });
    });
  }
  D.charts.forEach(build);
  /* For tests and scripts: a drawn point's position in the window (client pixels). */
  window.qkt = {
    charts: charts,
    /* Every drawn point of a chart: group, seed ("mean" for a mean line), x, y, pixel position. */
    points: function (id) {
      var C = charts[id], out = [];
      C.drawn.forEach(function (l) {
        l.x.forEach(function (x, i) {
          if (l.y[i] != null && isFinite(l.y[i])) {
            var p = C.pos(l, i);
            out.push({g: l.g, seed: l.n ? "mean" : l.seed, x: x, y: l.y[i], px: p[0], py: p[1]});
          }
        });
      });
      return out;
    },
    point: function (id, g, seed, x) {
      var C = charts[id], r = C.plot.querySelector("svg").getBoundingClientRect();
      for (var j = 0; j < C.drawn.length; j++) {
        var l = C.drawn[j];
        if (l.g !== g || (l.n ? "mean" : l.seed == null ? "" : String(l.seed)) !== (seed == null ? "" : String(seed))) continue;
        var i = l.x.indexOf(x);
        if (i < 0) return null;
        var p = C.pos(l, i);
        return {x: r.left + p[0] * r.width / W, y: r.top + p[1] * r.height / H};
      }
      return null;
    }
  };
  window.qkt.readyMs = performance.now(); /* load to interactive: scripts/report_html_size.py */
  document.body.setAttribute("data-ready", "1");
})();
