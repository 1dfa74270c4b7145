#!/usr/bin/python3
"""The relay sweep (issue 33) in the simulator: Cleave behind relays against
the baselines at their best, at equal device counts.

OPT-6.7B and OPT-13B, batch 128 x 512, the authors' devices (sweep.py's
DEVICE), bf16 on the wire for every system; Cleave as device processes run
it (sweep.py's CLEAVE_FLAGS) with 0 (no relays), 8, 32 and 128 relays
(--relays=R: each 10 Gbit/s to the PS, 100 Gbit/s to its devices, 64 GB of
store; OPT-13B behind relays up to 1,024 devices only, RELAYED_UP_TO) and a
PS link of 10 and 100 Gbit/s. Writes OUT/relays.json (every
run's headline figures and command) and OUT/relays.{png,svg} (step time
against devices, one panel per model and PS link, Asteroid and Megatron
beside). Reports are cached by command line in OUT/runs/, as sweep.py's.

Usage: relays.py --cleave build/cmd/cleave --out bench/scale/out
"""
import argparse
import concurrent.futures as futures
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sweep import h100_steps, run, save, step_of  # noqa: E402

MODELS = ["opt-6.7b", "opt-13b"]
# The most devices each model is simulated behind relays on: planning
# OPT-13B behind relays at 4,096 devices and more takes over 20 minutes a
# run on this 2-core host (without relays every count runs).
RELAYED_UP_TO = {"opt-6.7b": 16384, "opt-13b": 1024}
RELAYS = [0, 8, 32, 128]
LINKS = {"10gbit": [], "100gbit": ["--ps-egress=1.25e10"]}
BASELINES = ["asteroid", "megatron"]


def headline(rep):
    out = {"step": step_of(rep), "command": rep["_command"]}
    for key in ("efficiency", "ps_egress_over_unique", "ps_egress_over_relay_unique",
                "relay_store_hit_rate", "ps_own_work_seconds", "lower_bounds_seconds",
                "ps_bytes_down_per_step", "unique_operand_bytes_per_step"):
        if key in rep:
            out[key] = rep[key]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    ap.add_argument("--cleave", default=os.path.join(repo, "build/cmd/cleave"))
    ap.add_argument("--out", default=os.path.join(here, "out"))
    ap.add_argument("--anchors", default=os.path.join(repo, "../shared/anchors/cloud-gpu.md"))
    ap.add_argument("--devices", default="256,1024,4096,16384")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated, of " + ", ".join(MODELS))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    counts = [int(x) for x in a.devices.split(",")]
    models = [m for m in a.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        ap.error(f"unknown model(s) {unknown}; known: {MODELS}")
    pool = futures.ThreadPoolExecutor(a.jobs)
    cleave = {(m, link, r, n): pool.submit(
                  run, a.cleave, a.out, "cleave", m, n, LINKS[link] + ([f"--relays={r}"] if r else []))
              for m in models for link in LINKS for r in RELAYS for n in counts
              if r <= n and (r == 0 or n <= RELAYED_UP_TO[m])}
    base = {(s, m, n): pool.submit(run, a.cleave, a.out, s, m, n)
            for s in BASELINES for m in models for n in counts}
    summary = {"cleave": {}, "baselines": {}, "h100_seconds": h100_steps(a.anchors)}
    for (m, link, r, n), job in cleave.items():
        summary["cleave"].setdefault(m, {}).setdefault(link, {}).setdefault(str(r), {})[str(n)] = \
            headline(job.result())
    for (s, m, n), job in base.items():
        summary["baselines"].setdefault(s, {}).setdefault(m, {})[str(n)] = headline(job.result())
    # Speed-ups over each baseline at equal device counts (above 1: Cleave is faster).
    speedups = {}
    for m in models:
        for link in LINKS:
            for r in RELAYS:
                for n in counts:
                    c = summary["cleave"][m][link].get(str(r), {}).get(str(n), {}).get("step")
                    for s in BASELINES:
                        b = summary["baselines"][s][m][str(n)]["step"]
                        if c and b:
                            speedups.setdefault(m, {}).setdefault(link, {}).setdefault(str(r), {}) \
                                .setdefault(str(n), {})[s] = b / c
    summary["speedup_over"] = speedups
    with open(os.path.join(a.out, "relays.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)

    fig, axes = plt.subplots(len(models), len(LINKS), figsize=(11, 4 * len(models)), squeeze=False)
    for i, m in enumerate(models):
        for j, link in enumerate(LINKS):
            ax = axes[i][j]
            for r in RELAYS:
                pts = [(n, summary["cleave"][m][link].get(str(r), {}).get(str(n), {}).get("step"))
                       for n in counts]
                pts = [(n, t) for n, t in pts if t]
                if pts:
                    ax.plot(*zip(*pts), marker="o", label=f"Cleave, {r} relays" if r else "Cleave, no relays")
            for s, style in zip(BASELINES, ("k--", "k:")):
                pts = [(n, summary["baselines"][s][m][str(n)]["step"]) for n in counts]
                pts = [(n, t) for n, t in pts if t]
                if pts:
                    ax.plot(*zip(*pts), style, label=f"{s} (at its best)")
            h100 = summary["h100_seconds"].get(m)
            if h100:
                ax.axhline(h100, color="grey", linewidth=0.8, label="one H100")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{m}, {link.replace('gbit', ' Gbit/s')} PS link")
            ax.set_xlabel("devices")
            ax.set_ylabel("seconds per batch")
            ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    save(fig, a.out, "relays")
    print(f"relay sweep: {a.out}/relays.json and relays.svg")


if __name__ == "__main__":
    main()
