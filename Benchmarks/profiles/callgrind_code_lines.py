#!/usr/bin/env python3
"""The code lines a path runs, from callgrind files written with --dump-instr=yes,
--compress-pos=no and --compress-strings=no: one "OBJECT-PATH HEX-OFFSET" line per distinct
64-byte line of code (offsets as callgrind prints them, relative to the object), for
touch_code_lines.c. Also writes two controls beside OUT: OUT.pages (one line in the middle of
each 4 KiB page of those lines: the same pages, other lines) and OUT.shifted (the same number
of lines, 64 KiB further on: other code). Prints counts per object on standard error.

usage: callgrind_code_lines.py OUT CALLGRIND-FILE...
"""
import collections
import sys


def main():
    out, files = sys.argv[1], sys.argv[2:]
    lines = collections.defaultdict(set)
    for path in files:
        current = None
        with open(path) as f:
            for row in f:
                if row.startswith("ob="):
                    current = row[3:].strip()
                elif row.startswith("0x") and current:
                    lines[current].add(int(row.split()[0], 16) & ~63)
    with open(out, "w") as listed, open(out + ".pages", "w") as pages, open(out + ".shifted", "w") as shifted:
        for obj in sorted(lines):
            print(f"{len(lines[obj]):6d} {obj}", file=sys.stderr)
            for page in sorted({line & ~4095 for line in lines[obj]}):
                pages.write(f"{obj} {page + 2048:#x}\n")
            for line in sorted(lines[obj]):
                listed.write(f"{obj} {line:#x}\n")
                shifted.write(f"{obj} {line + 0x10000:#x}\n")
    print(f"{sum(len(s) for s in lines.values()):6d} lines in all", file=sys.stderr)


if __name__ == "__main__":
    main()
