#!/usr/bin/env python3
"""Merges the Chrome trace files of several ranks (rill-demo --trace=...,
RILL_TRACE=...; one file per MPI rank) into one timeline for
chrome://tracing or ui.perfetto.dev.

    python3 tools/merge_traces.py -o merged.json trace.rank0.json trace.rank1.json
    python3 tools/merge_traces.py -o merged.json 'trace.rank*.json'
    python3 tools/merge_traces.py -o merged.json --align 'trace.rank*.json'
    python3 tools/merge_traces.py -o merged.json --align='allreduce' 'trace.rank*.json'
    python3 tools/merge_traces.py --self-test

Inputs: files or glob patterns (quoted, or expanded by the shell), each a
JSON object with a "traceEvents" list (what stream/trace_recorder.cc writes)
or a bare list of events (a bare list cut short without its closing "]" is
accepted, as Chrome does). A file's rank is the number in "rank<N>" in its
name when every file has a distinct one, otherwise its position in the
(sorted-glob) argument order.

What it does:
  * each rank's process becomes pid = rank, named "rank R" (its original
    process name kept as the process label), sorted by rank; a file with
    several pids keeps them apart (the extra ones get pids past the ranks);
  * ids (flow arrows s/t/f, async and object events, "bind_id", "id2"
    global) are offset per rank - rank R's numeric id i becomes
    R * 10^k + i, 10^k above every id - so arrows stay within their rank;
  * timestamps are kept exactly (ranks on one machine share the clock;
    numbers are carried as decimals, so the nanosecond digits survive);
  * --align[=REGEX] (default 'barrier|broadcast') shifts each rank so that
    its first event whose name matches REGEX (re.search) starts when the
    lowest rank's does - for traces from different machines' clocks.

Exits 1 with a message naming the file on a missing or invalid input.
"""
import argparse
import decimal
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

DEFAULT_ALIGN = "barrier|broadcast"


class MergeError(Exception):
    pass


# --- Reading -----------------------------------------------------------------


def expand_inputs(args):
    """Files from paths and glob patterns, in order, without repeats."""
    files = []
    for a in args:
        if os.path.exists(a):
            matches = [a]
        elif glob.has_magic(a):
            matches = sorted(glob.glob(a))
            if not matches:
                raise MergeError(f"no file matches the pattern {a!r}")
        else:
            raise MergeError(f"cannot read {a}: no such file")
        for m in matches:
            if m not in files:
                files.append(m)
    return files


def load_events(path):
    """The events of one trace file and its top-level object (or None)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise MergeError(f"cannot read {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise MergeError(f"{path}: not UTF-8 text ({e})") from None
    try:
        data = json.loads(text, parse_float=decimal.Decimal)
    except json.JSONDecodeError as e:
        data = None
        stripped = text.rstrip().rstrip(",")
        if stripped.lstrip().startswith("[") and not stripped.endswith("]"):
            try:  # Chrome's format allows a bare list cut short.
                data = json.loads(stripped + "]", parse_float=decimal.Decimal)
            except json.JSONDecodeError:
                pass
        if data is None:
            raise MergeError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    if isinstance(data, dict):
        events = data.get("traceEvents")
        if not isinstance(events, list):
            raise MergeError(f"{path}: a JSON object without a \"traceEvents\" list")
        top = data
    elif isinstance(data, list):
        events, top = data, None
    else:
        raise MergeError(f"{path}: neither a JSON object with \"traceEvents\" nor a list of events")
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            raise MergeError(f"{path}: event {i} is not a JSON object")
        if "ph" not in e:
            raise MergeError(f"{path}: event {i} has no \"ph\"")
    return events, top


def assign_ranks(files):
    """(rank, path) pairs sorted by rank: "rank<N>" in the names when every
    file has a distinct one, else the argument order."""
    found = [re.search(r"rank[._-]?(\d+)", os.path.basename(f)) for f in files]
    if all(found):
        ranks = [int(m.group(1)) for m in found]
        if len(set(ranks)) == len(ranks):
            return sorted(zip(ranks, files))
    return list(enumerate(files))


# --- Ids ---------------------------------------------------------------------


def numeric_id(v):
    """An id's integer value, or None when it is not a number."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, decimal.Decimal) and v == v.to_integral_value():
        return int(v)
    if isinstance(v, str):
        try:
            return int(v, 0)
        except ValueError:
            return None
    return None


def id_fields(e):
    """(container, key) of every id an event carries."""
    out = []
    if "id" in e:
        out.append((e, "id"))
    if "bind_id" in e:
        out.append((e, "bind_id"))
    id2 = e.get("id2")
    if isinstance(id2, dict) and "global" in id2:  # "local" ids are per process already
        out.append((id2, "global"))
    return out


class IdMapper:
    """Rank R's numeric id i -> R * stride + i (stride a power of ten above
    every id), or, when that would pass 2^53 (JSON numbers are doubles in
    the viewers), a dense renumbering; string ids that are not numbers get a
    "rank R:" prefix. The same (rank, id) always maps to the same id."""

    def __init__(self, per_rank_events):
        top = 0
        for events in per_rank_events:
            for e in events:
                for c, k in id_fields(e):
                    n = numeric_id(c[k])
                    if n is not None and n > top:
                        top = n
        self.stride = 10 ** len(str(top))
        self.dense = (len(per_rank_events) - 1) * self.stride + top >= 2**53
        self.table = {}

    def describe(self):
        return "renumbered densely" if self.dense else f"rank * {self.stride} + id"

    def map(self, index, rank, v):
        n = numeric_id(v)
        if n is None:
            return f"rank {rank}:{v}"
        if self.dense:
            key = (index, n)
            new = self.table.setdefault(key, len(self.table) + 1)
        else:
            new = index * self.stride + n
        if isinstance(v, str):
            return hex(new) if v.strip().lower().startswith("0x") else str(new)
        return new


# --- Merging -----------------------------------------------------------------


def add_ts(v, delta):
    if delta == 0:
        return v
    if isinstance(v, float):
        v = decimal.Decimal(repr(v))
    return v + delta


def align_shifts(per_rank, regex):
    """For each rank, the shift (a Decimal, us) that moves its first event
    whose name matches `regex` onto the lowest rank's."""
    pattern = re.compile(regex)
    starts, missing = [], []
    for (rank, path), events in per_rank:
        best = None
        for e in events:
            if e.get("ph") == "M" or "ts" not in e or not isinstance(e.get("name"), str):
                continue
            if pattern.search(e["name"]) and (best is None or e["ts"] < best):
                best = e["ts"]
        if best is None:
            missing.append(f"rank {rank} ({path})")
        starts.append(best)
    if missing:
        raise MergeError(f"--align: no event named like /{regex}/ in " + ", ".join(missing))
    ref = decimal.Decimal(str(starts[0]))
    return [ref - decimal.Decimal(str(s)) for s in starts]


def merge(ranked_files, align=None):
    """The merged trace object of [(rank, path)]."""
    per_rank = [((rank, path), load_events(path)) for rank, path in ranked_files]
    tops = [top for _, (_, top) in per_rank]
    per_rank = [(rp, events) for rp, (events, _) in per_rank]
    ids = IdMapper([events for _, events in per_rank])
    shifts = align_shifts(per_rank, align) if align is not None else [0] * len(per_rank)

    n_ranks = len(per_rank)
    max_rank = max(rank for (rank, _), _ in per_rank)
    next_extra_pid = max(max_rank + 1, n_ranks)
    header, body = [], []
    for index, (((rank, path), events), shift) in enumerate(zip(per_rank, shifts)):
        pid_map, names = {}, {}
        for e in events:  # the original processes and their names
            pid = e.get("pid")
            if pid not in pid_map:
                if not pid_map:
                    pid_map[pid] = rank
                else:
                    pid_map[pid] = next_extra_pid
                    next_extra_pid += 1
            if e["ph"] == "M" and e.get("name") == "process_name":
                names[pid] = (e.get("args") or {}).get("name")
        if not pid_map:
            pid_map[None] = rank
        for orig, new in pid_map.items():
            label = names.get(orig) or (f"pid {orig}" if orig is not None else None)
            name = f"rank {rank}" if new == rank else f"rank {rank} (pid {orig})"
            header.append({"ph": "M", "name": "process_name", "pid": new, "tid": 0, "args": {"name": name}})
            header.append({"ph": "M", "name": "process_sort_index", "pid": new, "tid": 0,
                           "args": {"sort_index": new}})
            labels = [f"from {os.path.basename(path)}"] + ([str(label)] if label else [])
            header.append({"ph": "M", "name": "process_labels", "pid": new, "tid": 0,
                           "args": {"labels": ", ".join(labels)}})
        for e in events:
            if e["ph"] == "M" and e.get("name") in ("process_name", "process_sort_index",
                                                    "process_labels"):
                continue  # replaced by the header's
            e = dict(e)
            e["pid"] = pid_map[e.get("pid")]
            if "id2" in e and isinstance(e["id2"], dict):
                e["id2"] = dict(e["id2"])
            for c, k in id_fields(e):
                c[k] = ids.map(index, rank, c[k])
            if "ts" in e and isinstance(e["ts"], (int, float, decimal.Decimal)) and not isinstance(e["ts"], bool):
                e["ts"] = add_ts(e["ts"], shift)
            body.append(e)

    other = {"merged_by": "tools/merge_traces.py",
             "ranks": {str(rank): path for (rank, path), _ in per_rank},
             "ids": ids.describe()}
    if align is not None:
        other["align"] = {"regex": align,
                          "shift_us": {str(rank): str(s) for ((rank, _), _), s in zip(per_rank, shifts)}}
    for ((rank, _), _), top in zip(per_rank, tops):
        if top and isinstance(top.get("otherData"), dict):
            other[f"rank {rank}"] = top["otherData"]
    merged = {"traceEvents": header + body, "otherData": other}
    unit = next((t.get("displayTimeUnit") for t in tops if t and "displayTimeUnit" in t), None)
    if unit is not None:
        merged["displayTimeUnit"] = unit
    return merged


# --- Writing (decimals as written) -------------------------------------------


def dump(v):
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(str(k), ensure_ascii=False) + ":" + dump(x) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(dump(x) for x in v) + "]"
    if isinstance(v, decimal.Decimal):
        return str(v) if v.is_finite() else json.dumps(float(v))
    return json.dumps(v, ensure_ascii=False)


def write_trace(merged, path):
    parts = ["{"]
    for k, v in merged.items():
        if k != "traceEvents":
            parts.append(f"{json.dumps(k)}:{dump(v)},\n")
    parts.append('"traceEvents":[\n')
    parts.append(",\n".join(dump(e) for e in merged["traceEvents"]))
    parts.append("\n]}\n")
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(parts))
    except OSError as e:
        raise MergeError(f"cannot write {path}: {e.strerror or e}") from None


# --- Self-test ---------------------------------------------------------------


def self_test():
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    tmp = tempfile.mkdtemp(prefix="merge_traces_test.")
    try:
        # Rank 0 as trace_recorder.cc writes it (an object); rank 1 a bare
        # list with another pid, its clock 1000.5 us behind.
        def rank_events(pid, t0, name):
            t0 = decimal.Decimal(t0)
            return [
                {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}},
                {"ph": "M", "name": "thread_name", "pid": pid, "tid": 1, "args": {"name": "host:0 compute"}},
                {"ph": "X", "name": "conv1", "cat": "stream", "pid": pid, "tid": 1, "ts": t0,
                 "dur": decimal.Decimal("10.250"), "args": {}},
                {"ph": "X", "name": "broadcast", "cat": "stream", "pid": pid, "tid": 1,
                 "ts": t0 + 20, "dur": decimal.Decimal("5.000"), "args": {}},
                {"ph": "X", "name": "fc1", "cat": "stream", "pid": pid, "tid": 1,
                 "ts": t0 + 30, "dur": decimal.Decimal("1.000"), "args": {}},
                {"ph": "s", "name": "waits for", "cat": "dependency", "id": 1, "pid": pid, "tid": 1,
                 "ts": t0 + 10},
                {"ph": "f", "bp": "e", "name": "waits for", "cat": "dependency", "id": 1, "pid": pid,
                 "tid": 1, "ts": t0 + 20},
                {"ph": "s", "name": "waits for", "cat": "dependency", "id": 2, "pid": pid, "tid": 1,
                 "ts": t0 + 24},
                {"ph": "f", "bp": "e", "name": "waits for", "cat": "dependency", "id": 2, "pid": pid,
                 "tid": 1, "ts": t0 + 30},
            ]

        r0 = rank_events(4242, "1732780000123456.789", "rill: rill-demo")
        r1 = rank_events(4343, "1732780000122456.289", "rill: rill-demo")
        p0 = os.path.join(tmp, "trace.rank0.json")
        p1 = os.path.join(tmp, "trace.rank1.json")
        with open(p0, "w") as f:
            f.write('{"displayTimeUnit":"ns","otherData":{"clock":"test"},"traceEvents":[\n'
                    + ",\n".join(dump(e) for e in r0) + "\n]}\n")
        with open(p1, "w") as f:
            f.write("[" + ",\n".join(dump(e) for e in r1) + "\n]\n")

        def run(*args):
            return subprocess.run([sys.executable, os.path.abspath(__file__), *args],
                                  capture_output=True, text=True)

        out = os.path.join(tmp, "merged.json")
        r = run("-o", out, os.path.join(tmp, "trace.rank*.json"))
        check(r.returncode == 0, f"merge failed: {r.stderr.strip()}")
        if r.returncode == 0:
            text = open(out).read()
            m = json.loads(text)
            ev = m["traceEvents"]
            names = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
            check(names == {0: "rank 0", 1: "rank 1"}, f"process names {names}")
            check({e["pid"] for e in ev} == {0, 1}, f"pids {sorted({e['pid'] for e in ev})}")
            labels = [e["args"]["labels"] for e in ev if e["name"] == "process_labels"]
            check(any("rill: rill-demo" in l for l in labels), f"labels {labels}")
            flows = {}
            for e in ev:
                if e["ph"] in "sf":
                    flows.setdefault(e["id"], []).append((e["pid"], e["ph"]))
            check(sorted(flows) == [1, 2, 11, 12], f"flow ids {sorted(flows)}")
            check(all(sorted(v) in ([(0, "f"), (0, "s")], [(1, "f"), (1, "s")]) for v in flows.values()),
                  f"flow pairs {flows}")
            check('"ts":1732780000123456.789' in text and '"ts":1732780000122456.289' in text,
                  "timestamps not kept digit for digit")
            check(len([e for e in ev if e["ph"] == "X"]) == 6, "span count")
            check(m.get("displayTimeUnit") == "ns", "displayTimeUnit")

        r = run("-o", out, "--align", p1, p0)
        check(r.returncode == 0, f"--align merge failed: {r.stderr.strip()}")
        if r.returncode == 0:
            text = open(out).read()
            ev = json.loads(text, parse_float=decimal.Decimal)["traceEvents"]
            bc = {e["pid"]: e["ts"] for e in ev if e.get("name") == "broadcast"}
            check(len(bc) == 2 and bc[0] == bc[1], f"--align: broadcast starts {bc}")
            first = {e["pid"]: e["ts"] for e in ev if e.get("name") == "conv1"}
            check(first.get(1) == decimal.Decimal("1732780000123456.789"),
                  f"--align: rank 1 not shifted by exactly 1000.5 us: {first}")

        r = run("-o", out, "--align=no_such_op", p0, p1)
        check(r.returncode != 0 and "no_such_op" in r.stderr, "--align without a match did not fail")
        r = run("-o", out, p0, os.path.join(tmp, "missing.json"))
        check(r.returncode == 1 and "missing.json" in r.stderr, f"missing file: rc {r.returncode} {r.stderr!r}")
        bad = os.path.join(tmp, "trace.rank2.json")
        with open(bad, "w") as f:
            f.write('{"traceEvents": [ {"ph": "X", ')
        r = run("-o", out, p0, bad)
        check(r.returncode == 1 and "trace.rank2.json" in r.stderr and "JSON" in r.stderr,
              f"invalid file: rc {r.returncode} {r.stderr!r}")
        with open(bad, "w") as f:
            f.write('{"events": []}')
        r = run("-o", out, p0, bad)
        check(r.returncode == 1 and "traceEvents" in r.stderr, f"object without traceEvents: {r.stderr!r}")
        with open(bad, "w") as f:  # a bare list cut short: accepted
            f.write('[{"ph": "X", "name": "x", "pid": 7, "tid": 1, "ts": 5, "dur": 1},\n')
        r = run("-o", out, p0, p1, bad)
        check(r.returncode == 0, f"truncated bare list refused: {r.stderr!r}")
        r = run("-o", out, os.path.join(tmp, "nothing*.json"))
        check(r.returncode == 1 and "nothing" in r.stderr, "an empty glob did not fail")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        for f in failures:
            print(f"self-test FAILED: {f}", file=sys.stderr)
        return 1
    print("self-test: OK")
    return 0


def main(argv):
    # A bare --align takes the default regex (so that it does not swallow
    # the next file name); --align=REGEX names another.
    argv = [f"--align={DEFAULT_ALIGN}" if a == "--align" else a for a in argv]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("inputs", nargs="*", help="trace files or glob patterns, one per rank")
    p.add_argument("-o", "--output", help="the merged trace to write")
    p.add_argument("--align", metavar="REGEX", nargs="?", const=DEFAULT_ALIGN, default=None,
                   help=f"shift ranks so the first event matching REGEX (default '{DEFAULT_ALIGN}') lines up")
    p.add_argument("--self-test", action="store_true", help="merge synthetic traces and check the result")
    a = p.parse_args(argv)
    if a.self_test:
        return self_test()
    if not a.inputs or not a.output:
        p.error("needs -o OUTPUT and at least one input")
    try:
        if a.align is not None:
            try:
                re.compile(a.align)
            except re.error as e:
                raise MergeError(f"--align: bad regex {a.align!r}: {e}") from None
        ranked = assign_ranks(expand_inputs(a.inputs))
        merged = merge(ranked, a.align)
        write_trace(merged, a.output)
    except MergeError as e:
        print(f"merge_traces: {e}", file=sys.stderr)
        return 1
    n = len(merged["traceEvents"])
    print(f"merged {len(ranked)} rank(s) ({', '.join(f'{r}: {p}' for r, p in ranked)}) "
          f"into {a.output}: {n} events, ids {merged['otherData']['ids']}"
          + (f", aligned on /{a.align}/" if a.align is not None else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
