#!/usr/bin/env python3
"""Summarizes a Rill trace (RILL_TRACE=..., rill-demo --trace=...): per lane,
the spans and busy time; the dependency arrows; the longest spans.

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
    per_lane = collections.defaultdict(lambda: [0, 0.0, collections.Counter()])
    for e in spans:
        row = per_lane[lanes.get(e["tid"], "?")]
        row[0] += 1
        row[1] += e["dur"]
        row[2][e["cat"]] += 1
    print(f"\n{'lane':34} {'spans':>6} {'busy ms':>9}  kinds")
    for lane in sorted(per_lane):
        n, busy, cats = per_lane[lane]
        kinds = ", ".join(f"{c} {k}" for k, c in sorted(cats.items()))
        print(f"{lane:34} {n:6d} {busy / 1e3:9.3f}  {kinds}")
    print(f"\nlongest {top} spans:")
    for e in sorted(spans, key=lambda e: -e["dur"])[:top]:
        extra = e["args"].get("plugin", "")
        algo = e["args"].get("algorithm", "")
        print(f"  {e['dur'] / 1e3:9.3f} ms  {lanes.get(e['tid'], '?'):30} {e['name']}"
              f"{' [' + extra + (' ' + algo if algo else '') + ']' if extra else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
