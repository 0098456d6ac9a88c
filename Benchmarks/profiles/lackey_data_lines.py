#!/usr/bin/env python3
"""What a path touches, from lackey_segments.c's segments and mark_wake_and_line.c's bases.

For each of the last LAST segments (wake-up to line; 6 by default) prints the instructions, the
distinct 64-byte code lines, the data accesses and the distinct data lines, these split by
place: each loaded object's static data (type metadata, witness tables, globals, GOT), the
waking thread's stack, and the rest (the heap, other threads' stacks, anonymous maps).

Writes OUT: one "OBJECT-PATH HEX-OFFSET" line per distinct static data line of those segments
(offsets from the object's load bias, as touch_code_lines.c reads them).

usage: lackey_data_lines.py BASES SEGMENTS OUT [LAST]
"""
import collections
import sys


def read_bases(path):
    objects, stack = [], None
    with open(path) as f:
        for row in f:
            fields = row.split()
            if fields[0] == "stack":
                stack = (int(fields[1], 16), int(fields[2], 16))
                continue
            name, bias, vaddr, size = fields[0], int(fields[1], 16), int(fields[2], 16), int(fields[3], 16)
            if "mark_wake_and_line" not in name and "vgpreload" not in name:
                objects.append((bias + vaddr, bias + vaddr + size, name, bias))
    return objects, stack


def read_segments(path):
    segments, current = [], None
    with open(path) as f:
        for row in f:
            if row.startswith("WAKE"):
                current = []
            elif row.startswith("LINE"):
                if current is not None:
                    segments.append(current)
                current = None
            elif current is not None:
                kind, address = row.split()
                current.append((kind, int(address, 16)))
    return segments


def main():
    bases, segments_path, out = sys.argv[1:4]
    last = int(sys.argv[4]) if len(sys.argv) > 4 else 6
    objects, stack = read_bases(bases)
    segments = read_segments(segments_path)[-last:]

    def place(address):
        for low, high, name, bias in objects:
            if low <= address < high:
                return name, bias
        if stack and stack[0] <= address < stack[1]:
            return "stack", None
        return "heap and other", None

    static_lines = set()
    print(f"{len(segments)} flips, from the wake-up to the line:")
    for segment in segments:
        code = {address >> 6 for kind, address in segment if kind == "I"}
        data = {address >> 6 for kind, address in segment if kind != "I"}
        by_place = collections.Counter()
        for line in data:
            name, bias = place(line << 6)
            by_place[name.split("/")[-1]] += 1
            if bias is not None:
                static_lines.add((name, (line << 6) - bias))
        accesses = sum(1 for kind, _ in segment if kind != "I")
        instructions = len(segment) - accesses
        split = ", ".join(f"{name} {count}" for name, count in by_place.most_common())
        print(f"  {instructions} instructions, {len(code)} code lines, {accesses} data accesses "
              f"on {len(data)} data lines ({split})")
    with open(out, "w") as listed:
        for name, offset in sorted(static_lines):
            listed.write(f"{name} {offset:#x}\n")
    print(f"{len(static_lines)} static data lines in all, listed in {out}")


if __name__ == "__main__":
    main()
