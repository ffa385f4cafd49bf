"""Where does a timed call's time go on the H200? (exploration, not part of the harness)"""
import cProfile, pstats, random, sys, time
import torch
from evals.harness.targets import get_target
from evals.harness.timing import measure

t = get_target("fa3_hopper")
timer = t.timer()
print("flush bytes", timer.flush_bytes)
def per_call(fn, n=400):
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(n): fn()
    torch.cuda.synchronize(); return (time.perf_counter() - t0) / n * 1e3
print("time_us(noop) ms", per_call(lambda: timer.time_us(lambda: None)))
print("flush+sync ms", per_call(lambda: (timer._flush.zero_(), torch.cuda.synchronize())))
print("sync only ms", per_call(torch.cuda.synchronize))
suite = t.load_suite("dev")
for prefix in ("decode-bf16-d128-b1-c8192", "prefill-bf16-d64-s1024-b16-h32-full"):
    sc = next(s for s in suite.scenarios if s.id.startswith(prefix))
    inputs = t.make_timing_inputs(sc, [1, 2, 3])
    impls = {n: [t.upstream(n).prepare(i) for i in inputs] for n in ("fa3", "cudnn", "fa2")}
    for name, calls in impls.items():
        f = calls[0]; f(); torch.cuda.synchronize()
        print(sc.id, name, "bare call+sync ms", per_call(lambda: (f(), torch.cuda.synchronize()), 100),
              "time_us ms", per_call(lambda: timer.time_us(f), 100))
    pr = cProfile.Profile(); pr.enable(); t0 = time.perf_counter()
    run = measure(impls, timer=timer, settings=t.timing, rng=random.Random(0))
    el = time.perf_counter() - t0; pr.disable()
    print(sc.id, "measure s", round(el, 3), "trials", run.trials, run.stop,
          {k: round(v.median_us) for k, v in run.stats.items()}, "busy", {k: round(v, 3) for k, v in run.busy_s.items()})
    pstats.Stats(pr, stream=sys.stdout).sort_stats("tottime").print_stats(12)
