"""Runs `rill-info --json` and checks the document: check_info_json.py <rill-info> <host devices>.

For the ctest test rill-info.json (RILL_HOST_DEVICES must match <host devices>).
"""
import json
import subprocess
import sys


def main():
    exe, host_devices = sys.argv[1], int(sys.argv[2])
    run = subprocess.run([exe, "--json"], capture_output=True, text=True, timeout=100)
    assert run.returncode == 0, f"rill-info --json exited {run.returncode}: {run.stderr}"
    doc = json.loads(run.stdout)  # Raises on anything that is not one JSON document.
    assert doc["rill_version"], "no rill_version"
    platforms = {p["name"]: p for p in doc["platforms"]}
    host = platforms.get("host")
    assert host is not None, f"no host platform in {sorted(platforms)}"
    assert host["available"] is True
    assert host["device_count"] == host_devices == len(host["devices"]), (host["device_count"], host_devices)
    for d in host["devices"]:
        assert isinstance(d["memory_bytes"], int) and d["memory_bytes"] > 0, d["memory_bytes"]
        assert d["features"] and all({"name", "supported"} <= f.keys() for f in d["features"]), d["features"]
        assert d["plugins"].get("blas"), d["plugins"]
    versions = [p for p in host["plugins"] if p["version"]]
    assert versions, f"no host plugin with a version: {host['plugins']}"
    assert any(l["name"] == "abseil" for l in doc["libraries"]), doc["libraries"]
    assert doc["plugin_abi"], "no plugin_abi"
    for p in doc["runtime_plugins"]:  # RILL_PLUGIN_PATH's: each loaded, or skipped with a reason
        assert p["path"] and (p["loaded"] or p["reason"]), p
    ids = [f"host:{i}" for i in range(host_devices)]
    if host_devices > 1:
        assert any(s["devices"] == ids and s["memory_bytes"] > 0 for s in doc["shared_hardware"]), doc["shared_hardware"]
    for p in doc["platforms"]:
        assert p["available"] or p["reason"], p["name"]
    print(f"ok: {len(doc['platforms'])} platforms, host plugins with versions: "
          + ", ".join(f"{p['name']} {p['version']}" for p in versions))


if __name__ == "__main__":
    main()
