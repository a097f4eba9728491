"""``benchmarks/run.py --quick`` runs every workload, and each system's result
agrees with the hand-written code (run.py raises otherwise).  Times are not
checked: speed is measured in benchmarks/, never asserted in a test."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_quick_run_checks_every_workload(tmp_path):
    out_json, out_png = tmp_path / "results.json", tmp_path / "results.png"
    env = dict(os.environ, PYTHONPATH=ROOT, OPENBLAS_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "run.py"), "--quick",
         "--skip", "autograd,jax,torch,tensorflow", "--json", str(out_json), "--png", str(out_png)],
        env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(out_json.read_text())["rows"]
    workloads = {r["workload"] for r in rows}
    for expected in ("1000 elementwise ops", "jacobian, dense layer", "scalar loop", "MLP",
                     "RNN", "branches", "elementwise chain", "straight 100", "nested"):
        assert any(expected in w for w in workloads), expected
    skipped = [r for r in rows if r["system"] == "torch eager"]
    assert skipped and all(r["best_s"] is None and "skipped" in r["note"] for r in skipped)
    timed = [r for r in rows if r["best_s"] is not None]
    assert all(r["best_s"] > 0 and r["ratio_median"] > 0 for r in timed)
