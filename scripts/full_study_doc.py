#!/usr/bin/env python3
"""Publishes a full-preset run in docs/study/full and writes docs/ablate.md's "full, measured" paragraph.

usage: scripts/full_study_doc.py RUN_DIR
  e.g. scripts/demo_timed.sh build runs full  (then)  scripts/full_study_doc.py runs/full
Copies RUN_DIR's report.md, plots, summary.csv, config.json, sgemm_peak.txt and timing.txt (written
by scripts/demo_timed.sh) to docs/study/full, packs the cells' result files (cells/*.csv, *.cost,
*.attn.safetensors: what `qkt plot` reads) into docs/study/full/cells.tar.xz, and writes
docs/study/full/README.md (the build and machine, how to redraw) and the paragraph of docs/ablate.md
between its "full-study" markers: wall and CPU time, load, cells and CPU-seconds per part, all read
from the run's files. tests/cli/test_full_study.c redraws the page with `qkt plot` and compares.
"""
import glob
import io
import json
import os
import re
import shutil
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_section import cli, usage, write_section  # noqa: E402
from readme_demo import timing  # noqa: E402  (the one reader of timing.txt)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEST = os.path.join(ROOT, "docs", "study", "full")
KEEP = (".csv", ".cost", ".attn.safetensors")
COPY = ("report.md", "summary.csv", "config.json", "sgemm_peak.txt", "timing.txt")
PARTS = (("init", "GPT at init"), ("train", "training ablation"), ("train2", "second task"), ("start", "form x start"),
         ("start2", "form x start, second task"), ("lr", "LR sweep"), ("growth", "logit growth"))


def part_cpu(run):
    """{part: (cells, CPU-seconds)} from the cells' .cost files (cell id: <part>_<variant>_...)."""
    out = {}
    for f in sorted(glob.glob(os.path.join(run, "cells", "*.cost"))):
        part = os.path.basename(f).split("_", 1)[0]
        cpu = float(re.search(r"cpu_s=([0-9.eE+-]+)", open(f).read()).group(1))
        n, s = out.get(part, (0, 0.0))
        out[part] = (n + 1, s + cpu)
    return out


def pack_cells(run, path):
    """cells.tar.xz: the result files sorted by name, with no times, owners or modes of this machine."""
    names = sorted(n for n in os.listdir(os.path.join(run, "cells")) if n.endswith(KEEP))
    with tarfile.open(path, "w:xz", format=tarfile.PAX_FORMAT, preset=9) as tar:
        for n in names:
            data = open(os.path.join(run, "cells", n), "rb").read()
            info = tarfile.TarInfo("cells/" + n)
            info.size, info.mtime, info.mode, info.uid, info.gid, info.uname, info.gname = len(data), 0, 0o644, 0, 0, "", ""
            tar.addfile(info, io.BytesIO(data))
    return len(names)


def minutes(s):
    return "%d min %02d s" % (s // 60, round(s) % 60)


def main():
    if len(sys.argv) != 2:
        sys.exit(usage(__doc__))
    run = sys.argv[1]
    cfg = json.load(open(os.path.join(run, "config.json")))
    if cfg.get("preset") != "full" or cfg.get("robust_seeds") or cfg.get("robust_isa"):
        sys.exit("full_study_doc.py: %s is not a plain full-preset run (config.json preset %r)" % (run, cfg.get("preset")))
    wall, cpu, load, version, machine = timing(run)
    if machine is None:
        sys.exit("full_study_doc.py: %s/timing.txt does not name the machine (written by an older scripts/demo_timed.sh)" % run)
    if "Redraw: `qkt plot runs/full`" not in open(os.path.join(run, "report.md")).read():
        sys.exit("full_study_doc.py: %s/report.md was not drawn as runs/full (run the study with --out runs, or redraw it "
                 "with `qkt plot runs/full` from the directory holding runs/)" % run)
    parts = part_cpu(run)
    cells = sum(n for n, _ in parts.values())

    shutil.rmtree(DEST, ignore_errors=True)
    os.makedirs(DEST)
    for f in COPY:
        shutil.copyfile(os.path.join(run, f), os.path.join(DEST, f))
    pngs = sorted(os.path.basename(p) for p in glob.glob(os.path.join(run, "*.png")))
    for p in pngs:
        shutil.copyfile(os.path.join(run, p), os.path.join(DEST, p))
    packed = pack_cells(run, os.path.join(DEST, "cells.tar.xz"))
    size = os.path.getsize(os.path.join(DEST, "cells.tar.xz"))
    eff = re.search(r"efficiency ([0-9.]+) \((.*?)\)\.\n", open(os.path.join(run, "report.md")).read())
    machine = "%s, load average %s before the start" % (machine, load)

    with open(os.path.join(DEST, "README.md"), "w") as f:
        f.write("# The full preset, one run\n\n"
                "[report.md](report.md) and the plots beside it were written by `%s` (%s) on %s; it took %s of "
                "wall time and %.0f CPU-seconds for its %d cells (`scripts/demo_timed.sh build runs full`, "
                "published by `scripts/full_study_doc.py runs/full`).\n\n"
                "`cells.tar.xz` (%.1f MB) holds the %d result files of its cells (`cells/*.csv`, `*.cost`, "
                "`*.attn.safetensors`): what `qkt plot` reads. Redraw the report, the plots, `summary.csv` and the tidy "
                "`metrics.csv` (left out here: it is drawn from the cells) with:\n\n"
                "    mkdir -p runs/full && tar xJf docs/study/full/cells.tar.xz -C runs/full\n"
                "    cp docs/study/full/config.json docs/study/full/sgemm_peak.txt docs/study/full/timing.txt runs/full/\n"
                "    qkt plot runs/full\n\n"
                "The test `test_full_study` does this and compares report.md, summary.csv and every plot byte for "
                "byte: a change to the report's code that changes them fails it until this page is redrawn "
                "(`scripts/full_study_doc.py` on the redrawn directory keeps the run's time, taken from "
                "`timing.txt`).\n" % (cfg["command"], version, machine, minutes(wall), cpu, cells, size / 1e6, packed))

    per = "; ".join("%s %d cells, %.0f CPU-s" % (label, parts[k][0], parts[k][1]) for k, label in PARTS if k in parts)
    para = ("**full, measured.** `scripts/demo_timed.sh build runs full` (`%s`, %s; %s): **%s** of wall time "
            "(%.0f s), %.0f CPU-seconds for %d cells, 2 side by side. By part (the cells' own CPU time, from "
            "their `.cost` files): %s. %s Its report, plots and the cells' files: "
            "[study/full](study/full/README.md) (`qkt plot` redraws them byte for byte)."
            % (cfg["command"], version, machine, minutes(wall), wall, cpu, cells, per,
               "The study's efficiency as its report prints it: %s (%s)." % (eff.group(1), eff.group(2)) if eff else ""))
    write_section("docs/ablate.md", "full-study", "full_study_doc.py", para + "\n")
    print("full_study_doc.py: %s (%d plots, %d cell files, %.1f MB), docs/ablate.md" % (DEST, len(pngs), packed, size / 1e6))


if __name__ == "__main__":
    cli(main)
