#!/usr/bin/env python3
"""Lists a Wasm module's imports as `module.name`, one per line.

With --only MODULE, exits 1 (naming the offenders) if anything is imported from another
module: the IC accepts a canister only if it imports nothing but `ic0` functions.
"""
import argparse
import sys


def read_uleb(data, pos):
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, pos


def read_name(data, pos):
    length, pos = read_uleb(data, pos)
    return data[pos:pos + length].decode("utf-8"), pos + length


def imports(data):
    if data[:4] != b"\0asm":
        raise ValueError("not a Wasm module")
    pos = 8
    while pos < len(data):
        section_id = data[pos]
        size, pos = read_uleb(data, pos + 1)
        if section_id == 2:  # the import section
            count, cursor = read_uleb(data, pos)
            for _ in range(count):
                module, cursor = read_name(data, cursor)
                name, cursor = read_name(data, cursor)
                yield module, name
                kind = data[cursor]
                cursor += 1
                if kind == 0:  # function: type index
                    _, cursor = read_uleb(data, cursor)
                elif kind == 1:  # table: reftype, limits
                    cursor = skip_limits(data, cursor + 1)
                elif kind == 2:  # memory: limits
                    cursor = skip_limits(data, cursor)
                elif kind == 3:  # global: valtype, mutability
                    cursor += 2
                else:  # tag: attribute, type index
                    _, cursor = read_uleb(data, cursor + 1)
            return
        pos += size


def skip_limits(data, pos):
    flags = data[pos]
    _, pos = read_uleb(data, pos + 1)
    if flags & 1:
        _, pos = read_uleb(data, pos)
    return pos


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("wasm")
    parser.add_argument("--only", help="the one module imports may come from")
    args = parser.parse_args()
    with open(args.wasm, "rb") as wasm:
        found = list(imports(wasm.read()))
    if args.only:
        foreign = [f"{m}.{n}" for m, n in found if m != args.only]
        if foreign:
            print(f"{args.wasm} imports from outside {args.only}: {', '.join(foreign)}", file=sys.stderr)
            return 1
        print(f"{args.wasm}: {len(found)} imports, all from {args.only}")
        return 0
    for module, name in found:
        print(f"{module}.{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
