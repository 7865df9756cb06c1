#!/usr/bin/env python3
"""Rebuilds the seed corpora in fuzz/corpus/<target>/ from stored real inputs:
the small traces of tests/golden/*/traces, the example lines of analyzer/logs/families.cpp and
the logs of tests/golden/*/logs. Run from anywhere; deterministic (same tree, same seeds)."""
import glob
import os
import re
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")
SPLIT = b"\n=RDZVSPLIT=\n"
SMALL_TRACE = 16 * 1024  # reader seeds: small files keep the fuzzer fast
HEADER, RECORD = 4096, 192


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def read(p):
    with open(p, "rb") as f:
        return f.read()


def shrink_trace(data, keep):
    """The header and the first `keep` records, with capacity/next_slot to match."""
    keep = min(keep, (len(data) - HEADER) // RECORD)
    h = bytearray(data[:HEADER])
    struct.pack_into("<I", h, 36, keep)  # capacity
    struct.pack_into("<Q", h, 72, keep)  # next_slot
    return bytes(h) + data[HEADER:HEADER + keep * RECORD]


def family_lines():
    src = read(os.path.join(ROOT, "analyzer", "logs", "families.cpp")).decode()
    lines = []
    # The adjacent C string literals of a row's .example make one line.
    for m in re.finditer(r'\.example\s*=\s*((?:"(?:[^"\\]|\\.)*"\s*)+)', src):
        parts = re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))
        lines.append("".join(parts).encode().decode("unicode_escape").encode())
    return lines


def main():
    scenarios = sorted(glob.glob(os.path.join(ROOT, "tests", "golden", "*")))
    scenarios = [s for s in scenarios if os.path.isdir(os.path.join(s, "traces"))]

    # Header offsets checked: capacity at 36, next_slot at 72 (trace_format.h).
    for s in scenarios:
        name = os.path.basename(s)
        for p in sorted(glob.glob(os.path.join(s, "traces", "*.rzt"))):
            data = read(p)
            base = name + "." + os.path.basename(p)
            if len(data) <= SMALL_TRACE:
                put("fuzz_trace_reader", base, data)
            else:
                put("fuzz_trace_reader", base + ".first16", shrink_trace(data, 16))
        logs = b"".join(read(p) for p in sorted(glob.glob(os.path.join(s, "logs", "*"))))
        # analyze: every trace of the scenario (cut to 24 records each) and its merged log.
        traces = [shrink_trace(read(p), 24) for p in sorted(glob.glob(os.path.join(s, "traces", "*.rzt")))]
        put("fuzz_analyzer", name, b"\x01" + SPLIT.join(traces[:8] + [logs]))
        put("fuzz_analyzer", name + ".raw", b"\x00" + SPLIT.join(traces[:8] + [logs]))
        for p in sorted(glob.glob(os.path.join(s, "logs", "*"))):
            put("fuzz_log_reader", name + "." + os.path.basename(p), b"\x08\x40" + read(p))

    # A few hand-made damaged traces (the issue 6 list): empty, short, cut mid-record.
    any_trace = read(sorted(glob.glob(os.path.join(ROOT, "tests", "golden", "*", "traces", "*.rzt")))[0])
    put("fuzz_trace_reader", "empty", b"")
    put("fuzz_trace_reader", "header_only", any_trace[:HEADER])
    put("fuzz_trace_reader", "cut_mid_record", any_trace[:HEADER + 2 * RECORD + 77])
    put("fuzz_trace_reader", "future_version", any_trace[:8] + struct.pack("<I", 2) + any_trace[12:HEADER + 3 * RECORD])

    lines = family_lines()
    assert len(lines) >= 20, "families.cpp: fewer example lines than expected (%d)" % len(lines)
    for i, line in enumerate(lines):
        put("fuzz_log_reader", "family%02d" % i, bytes([1 + i % 63, i * 7 % 256]) + line + b"\n")
    put("fuzz_log_reader", "all_families", b"\x05\x10" + b"\r\n".join(lines))
    put("fuzz_analyzer", "log_only", b"\x00" + SPLIT + b"\n".join(lines))


if __name__ == "__main__":
    main()
