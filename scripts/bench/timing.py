"""The timing rule every benchmark of scripts/bench/ uses, and its log line.

The rule (docs/benchmarks.md, "Method"):

* **Warm-up**: `warmup` untimed passes run first (the page cache, a JIT, a
  pool's threads); a benchmark whose inputs are already warm passes 0.
* **Best of N**: then at least `passes` timed passes, and more while fewer
  than `min_seconds` have gone by since the first timed one; the figure is
  the best pass (the highest rate). The machine may be shared: a slower pass
  measures the neighbours, not the code. `gc.collect()` runs before each
  pass, outside the timed span, so one pass's garbage is not paid by the
  next.
* **Same-run ratios**: a ratio (`ratio`) divides two figures measured in the
  same run of the same script, on the same inputs, each by this rule with
  the same N; figures of two runs are never divided.

Imported by path: the scripts of scripts/bench/ run as programs, so their
folder is first on `sys.path`.
"""

import gc
import sys
import time


def best_rate(fn, count, passes=3, min_seconds=0.0, warmup=0):
    """Runs `fn()`, which handles `count` things, by the rule above; returns
    the best rate in things per second."""
    for _ in range(warmup):
        fn()
    best = 0.0
    done = 0
    start = time.perf_counter()
    while done < passes or time.perf_counter() - start < min_seconds:
        gc.collect()
        t = time.perf_counter()
        fn()
        best = max(best, count / (time.perf_counter() - t))
        done += 1
    return best


def ratio(gulp, other, times=False):
    """gulp's figure against another tool's from the same run, > 1 when gulp
    is faster: gulp / other for rates, other / gulp for times."""
    return other / gulp if times else gulp / other


def log(message, prefix=None):
    """One progress line on stderr (stdout holds the results)."""
    print(f"{prefix}: {message}" if prefix else message, file=sys.stderr, flush=True)


def logger(prefix):
    """`log` with the script's name in front of each line."""
    return lambda message: log(message, prefix)
