import json, sys
for path in sys.argv[1:]:
    try:
        d = json.load(open(path))
    except Exception as e:
        print(path, "no verdict", e); continue
    t, a = d["timing"], d["aggregates"]
    def held(lk):
        lk = lk or {}
        return round((lk.get("released_at") or 0) - (lk.get("acquired_at") or 0), 1), round(lk.get("acquired_at") or 0, 1), round(lk.get("released_at") or 0, 1), round(lk.get("waited_s") or 0, 1)
    keys = ["wall_s", "build_s", "start_s", "setup_s", "verify_s", "probe_s", "time_s", "time_upstreams_s", "wall_clock_s", "reference_s"]
    print(path.split("/")[-1], d["status"], f"{a['passed']}/{a['scenarios']}", {k: round(v, 3) for k, v in a["geomean_speedup"].items()},
          "excl(held,acq,rel,wait)", held(d.get("lock")), "shared", held(d.get("check_lock")), {k: round(t.get(k, 0), 1) for k in keys})
