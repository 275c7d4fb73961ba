#!/usr/bin/env python3
"""The findings table's verdicts of several runs of one preset side by side (one per study seed).

usage: scripts/seed_verdicts.py [--doc FILE] RUN_DIR [RUN_DIR ...]
  e.g. for s in 1 2 3; do qkt ablate --preset quick --seed $s --out runs/seed$s; done
       scripts/seed_verdicts.py --doc docs/ablate.md runs/seed1/quick runs/seed2/quick runs/seed3/quick
  or, with the robustness reruns of one study (qkt ablate --preset quick --robust-seeds 2,3):
       scripts/seed_verdicts.py runs/quick runs/quick/robust/seed2 runs/quick/robust/seed3
Reads the claim ids and verdicts of each RUN_DIR/report.md's findings table (a rerun's directory:
its findings.md) and RUN_DIR/config.json (the study seed and the command); prints a markdown table with one column per run and a last column
saying whether the verdicts agree. With --doc it replaces the text between the lines
"<!-- seed verdicts: begin -->" and "<!-- seed verdicts: end -->" of FILE with that table.
"""
import json
import os
import re
import sys

from doc_section import cli, usage


def findings(run):
    """[(id, verdict)] of RUN_DIR/report.md's findings table (a robustness rerun's directory:
    its findings.md), in its order; a verdict's "(fragile)" mark is left out."""
    path = os.path.join(run, "report.md")
    if not os.path.exists(path):
        path = os.path.join(run, "findings.md")
    lines = open(path).read().split("\n")
    i = next(k for k, l in enumerate(lines) if l.startswith("| # | claim"))
    head = [c.strip() for c in lines[i].strip().strip("|").split("|")]
    col = head.index("verdict")
    rows = []
    for l in lines[i + 2:]:
        if not l.startswith("|"):
            break
        cells = [c.strip() for c in l.strip().strip("|").split("|")]
        rows.append((cells[0], re.sub(r"\s*\(fragile\)", "", re.sub(r"\*\*", "", cells[col]))))
    return rows


def main():
    args = sys.argv[1:]
    doc = None
    if args[:1] == ["--doc"]:
        doc, args = args[1], args[2:]
    if not args:
        sys.exit(usage(__doc__))
    runs = [(json.load(open(os.path.join(r, "config.json"))), dict(findings(r)), [k for k, _ in findings(r)]) for r in args]
    ids = runs[0][2]
    for _, _, order in runs[1:]:
        ids += [k for k in order if k not in ids]
    out = ["| claim | " + " | ".join(f"study seed {c['seed']}" for c, _, _ in runs) + " | same |",
           "|---" * (len(runs) + 2) + "|"]
    for k in ids:
        v = [f.get(k, "(absent)") for _, f, _ in runs]
        out.append(f"| {k} | " + " | ".join(v) + f" | {'yes' if len(set(v)) == 1 else '**no**'} |")
    same = sum(1 for k in ids if len({f.get(k) for _, f, _ in runs}) == 1)
    out.append("")
    how = []  # each run's command; a rerun's directory is named instead (its config.json holds the study's command)
    for r, (c, _, _) in zip(args, runs):
        what = f"robustness rerun {os.path.basename(os.path.normpath(r))} of it" if c.get("verdict_cells_only") else f"`{c['command']}`"
        if what not in how:
            how.append(what)
    out.append(f"{same} of {len(ids)} rows agree. Runs: " + "; ".join(how) + ".")
    table = "\n".join(out)
    if doc:
        text = open(doc).read()
        a, b = "<!-- seed verdicts: begin -->\n", "<!-- seed verdicts: end -->"
        if a not in text or b not in text:
            sys.exit(f"seed_verdicts.py: {doc} has no '{a.strip()}' ... '{b}' block")
        text = text[:text.index(a) + len(a)] + table + "\n" + text[text.index(b):]
        open(doc, "w").write(text)
    print(table)


if __name__ == "__main__":
    cli(main)
