import json, sys
for path in sys.argv[1:]:
    try:
        d = json.load(open(path))
    except Exception as e:
        print(path, "no verdict", e); continue
    t, a, lk = d["timing"], d["aggregates"], d.get("lock") or {}
    held = (lk.get("released_at") or 0) - (lk.get("acquired_at") or 0)
    fc = {}
    for r in d["scenarios"]:
        for k, v in (r.get("timing") or {}).get("first_call_ms", {}).items():
            fc[k] = fc.get(k, 0) + v
    keys = ["wall_s", "build_s", "start_s", "setup_s", "verify_s", "probe_s", "time_s", "time_upstreams_s", "wall_clock_s", "reference_s"]
    print(path.split("/")[-1], d["status"], f"{a['passed']}/{a['scenarios']}", {k: round(v, 3) for k, v in a["geomean_speedup"].items()},
          "lock_held_s", round(held, 1), {k: round(t.get(k, 0), 1) for k in keys}, "first_call_s", {k: round(v / 1000, 1) for k, v in fc.items()})
