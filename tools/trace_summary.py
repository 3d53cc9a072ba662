#!/usr/bin/env python3
"""Summarizes a Rill trace (RILL_TRACE=..., rill-demo --trace=...): per lane
and category, the spans and their total time; the dependency arrows; the
longest spans.

    python3 tools/trace_summary.py trace.json [--top=10]
"""
import collections
import json
import sys


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    top = 10
    for a in argv[2:]:
        if a.startswith("--top="):
            top = int(a.split("=", 1)[1])
    with open(argv[1]) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    lanes, process = {}, "?"
    for e in events:
        if e["ph"] == "M" and e["name"] == "thread_name":
            lanes[e["tid"]] = e["args"]["name"]
        if e["ph"] == "M" and e["name"] == "process_name":
            process = e["args"]["name"]
    spans = [e for e in events if e["ph"] == "X"]
    arrows = sum(1 for e in events if e["ph"] == "s")
    if not spans:
        print(f"{process}: no spans")
        return 0
    t0 = min(e["ts"] for e in spans)
    t1 = max(e["ts"] + e["dur"] for e in spans)
    print(f"{process}: {len(spans)} spans on {len(lanes)} lanes, {arrows} dependency arrows, "
          f"{(t1 - t0) / 1e3:.1f} ms from first to last")
    # Per lane and category: spans and their summed duration (an engine
    # function's device span encloses its stream operations, so categories
    # are summed apart).
    per_lane = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0.0]))
    for e in spans:
        row = per_lane[lanes.get(e["tid"], "?")][e["cat"]]
        row[0] += 1
        row[1] += e["dur"]
    print(f"\n{'lane':34} {'category':14} {'spans':>6} {'total ms':>10}")
    for lane in sorted(per_lane):
        for cat in sorted(per_lane[lane]):
            n, total = per_lane[lane][cat]
            print(f"{lane:34} {cat:14} {n:6d} {total / 1e3:10.3f}")
    print(f"\nlongest {top} spans:")
    for e in sorted(spans, key=lambda e: -e["dur"])[:top]:
        extra = e["args"].get("plugin", "")
        algo = e["args"].get("algorithm", "")
        print(f"  {e['dur'] / 1e3:9.3f} ms  {lanes.get(e['tid'], '?'):30} {e['name']}"
              f"{' [' + extra + (' ' + algo if algo else '') + ']' if extra else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
