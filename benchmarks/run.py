"""Run every benchmark workload once: one table of side-by-side ratios, a JSON
file of the rows and a PNG chart of the ratios.

    python3 benchmarks/run.py [--quick] [--json results.json] [--png results.png]

Each workload's first row is its baseline (the hand-written code); the ratio
columns divide each system's best (and median) time by the baseline's from the
same run, in which the systems took turns (see ``_timing.compare``); best and
median side by side are the spread.  ``--quick`` takes a few short samples of
each: it checks that every workload runs and every result is right, the times
mean little.  A peer that is not installed is a row saying so."""
import argparse
import json
import os
import sys

import _timing
import compile_scaling
import compiler
import jacobian
import peers
import tape_overhead

WORKLOADS = [tape_overhead, jacobian, compiler, compile_scaling]
HERE = os.path.dirname(os.path.abspath(__file__))


def print_table(rows):
    """One line per (workload, system): times, and ratios to the workload's first system.

    A row is ``(workload, system, best, median)``, optionally followed by the
    peak bytes of one call (or None) and a note (e.g. a target met or missed);
    those columns are printed when some row has them.  A row whose times are
    None (a system unavailable) shows its note only."""
    header = ("workload", "system", "best", "median", "ratio (best)", "ratio (median)",
              "peak mem", "mem ratio", "note")
    lines = [(workload, system, _duration(best), _duration(median),
              _ratio(best, base_best), _ratio(median, base_median),
              _bytes(peak), _ratio(peak, base_peak), note)
             for workload, system, best, median, peak, note, base_best, base_median, base_peak
             in with_baselines(rows)]
    # the time columns always, the others when some row fills them
    shown = [i for i in range(len(header)) if i < 6 or any(line[i] for line in lines)]
    widths = {i: max(len(line[i]) for line in [header] + lines) for i in shown}
    for line in [header] + lines:
        print("  ".join(line[i].ljust(widths[i]) for i in shown).rstrip())


def with_baselines(rows):
    """Each row as ``(workload, system, best, median, peak, note)`` followed by its
    workload's first row's best, median and peak."""
    baselines = {}
    for workload, system, best, median, *extra in rows:
        peak, note = (list(extra) + [None, ""])[:2]
        base = baselines.setdefault(workload, (best, median, peak))
        yield (workload, system, best, median, peak, note) + base


def _ratio(value, base):
    return f"{value / base:.2f}x" if value is not None and base else ""


def _duration(seconds):
    if seconds is None:
        return ""
    return f"{seconds * 1e3:.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.2f} us"


def _bytes(count):
    if count is None:
        return ""
    return f"{count / 2 ** 20:.2f} MiB" if count >= 2 ** 20 else f"{count / 2 ** 10:.1f} KiB"


def write_json(rows, path):
    records = [dict(zip(("workload", "system", "best_s", "median_s", "peak_bytes", "note",
                         "base_best_s", "base_median_s", "base_peak_bytes"), row))
               for row in with_baselines(rows)]
    for r in records:
        r["ratio_best"] = r["best_s"] / r["base_best_s"] if r["best_s"] else None
        r["ratio_median"] = r["median_s"] / r["base_median_s"] if r["median_s"] else None
    with open(path, "w") as f:
        json.dump({"python": sys.version.split()[0], "peers": peers.available(),
                   "rows": records}, f, indent=1)


def draw_chart(rows, path):
    """Horizontal bars: each system's median time as a ratio to its workload's
    hand-written code (log scale); compile-time rows, which have no baseline, left out."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no chart (pip install -e '.[bench]')")
        return
    bars = [(workload, system, median / base_median)
            for workload, system, best, median, peak, note, base_best, base_median, _
            in with_baselines(rows)
            if median is not None and base_median and system != _first(rows, workload)]
    systems = list(dict.fromkeys(s for _, s, _ in bars))
    colours = {system: plt.cm.tab20(i % 20) for i, system in enumerate(systems)}
    # one bar per row, each workload's systems together, a gap between workloads
    positions, ticks, labels, y = [], [], [], 0.0
    for workload in dict.fromkeys(w for w, _, _ in bars):
        mine = [(s, r) for w, s, r in bars if w == workload]
        ticks.append(y + (len(mine) - 1) / 2)
        labels.append(workload)
        positions += [(y + k, s, r) for k, (s, r) in enumerate(mine)]
        y += len(mine) + 1
    fig, ax = plt.subplots(figsize=(9, 1 + 0.11 * y))
    for position, system, ratio in positions:
        ax.barh(position, ratio, 0.85, color=colours[system])
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=colours[s]) for s in systems],
              labels=systems, fontsize=7, loc="lower right")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("median time / hand-written NumPy (log scale)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _first(rows, workload):
    return next(system for w, system, *_ in rows if w == workload)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short samples: check it all runs")
    parser.add_argument("--skip", default="", metavar="PEERS",
                        help="peers to leave out, comma-separated: autograd,jax,torch,tensorflow")
    parser.add_argument("--replot", action="store_true",
                        help="draw the chart from the JSON file of an earlier run, run nothing")
    parser.add_argument("--json", default=os.path.join(HERE, "results.json"))
    parser.add_argument("--png", default=os.path.join(HERE, "results.png"))
    options = parser.parse_args(argv)
    if options.replot:
        with open(options.json) as f:
            rows = [tuple(r[k] for k in ("workload", "system", "best_s", "median_s",
                                         "peak_bytes", "note")) for r in json.load(f)["rows"]]
        draw_chart(rows, options.png)
        return rows
    _timing.QUICK["on"] = options.quick
    peers.SKIPPED.update(filter(None, options.skip.split(",")))
    for name, reason in peers.available().items():
        print(f"{name}: {reason or 'available'}")
    rows = []
    for workload in WORKLOADS:
        rows.extend(workload.run())
    print_table(rows)
    write_json(rows, options.json)
    draw_chart(rows, options.png)
    return rows


if __name__ == "__main__":
    main()
