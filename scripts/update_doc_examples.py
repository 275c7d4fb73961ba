#!/usr/bin/env python3
"""Rewrite the output of every `$ qkt ...` example in markdown files.

A fenced block whose first line is `$ qkt ARGS` is rerun with the built program
and its body replaced by the real output, so docs show what the command prints
(tests/cli/test_data_cli.c checks docs/data.md the same way).

usage: scripts/update_doc_examples.py BUILD/qkt docs/data.md [more.md ...]
"""
import re
import shlex
import subprocess
import sys

from doc_section import cli, usage

BLOCK = re.compile(r"^```\n\$ qkt (?P<args>[^\n]*)\n(?P<body>.*?)^```\n", re.S | re.M)


def main():
    if len(sys.argv) < 3:
        sys.exit(usage(__doc__))
    qkt, files = sys.argv[1], sys.argv[2:]
    for path in files:
        text = open(path).read()

        def rerun(m):
            out = subprocess.run([qkt] + shlex.split(m["args"]), capture_output=True, text=True).stdout
            return f"```\n$ qkt {m['args']}\n{out}```\n"

        new = BLOCK.sub(rerun, text)
        if new != text:
            open(path, "w").write(new)
            print(f"updated {path}")


if __name__ == "__main__":
    cli(main)
