"""Per-scenario cost of the parent's checks on the fa3_hopper dev suite (sync-timed)."""
import sys, time, torch
from evals.harness.targets import get_target
from evals.harness.session import expected, check_output
from evals.harness.sampled_check import check_sampled

t = get_target("fa3_hopper")
suite = t.load_suite(sys.argv[1] if len(sys.argv) > 1 else "dev")
def tm(f):
    torch.cuda.synchronize(); t0 = time.perf_counter(); r = f(); torch.cuda.synchronize()
    return r, (time.perf_counter() - t0) * 1e3
tot = {}
base_up = t.upstream(t.accuracy.baseline)
for rep in range(2):
    for sc in suite.scenarios:
        row = {}
        inputs, row["inputs"] = tm(lambda: t.make_inputs(sc, 1234 + rep))
        ref, row["reference"] = tm(lambda: t.reference(sc, inputs))
        inputs2 = t.make_inputs(sc, 1234 + rep)
        base, row["baseline"] = tm(lambda: base_up.prepare(inputs2)())
        _, row["check"] = tm(lambda: check_output(t, sc, base, ref, base))
        del ref
        inputs3 = t.make_inputs(sc, 1234 + rep)
        _, row["sampled2"] = tm(lambda: check_sampled(t, sc, [base, base], inputs3, seed=7))
        del inputs, inputs2, inputs3, base
        _, row["empty_cache"] = tm(torch.cuda.empty_cache)
        if rep:
            for k, v in row.items():
                tot[k] = tot.get(k, 0) + v
            print(f"{sc.id:60s} " + " ".join(f"{k}={v:7.1f}" for k, v in row.items()))
print("TOTAL ms", {k: round(v) for k, v in tot.items()})
