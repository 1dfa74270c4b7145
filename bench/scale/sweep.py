#!/usr/bin/python3
"""The paper's scale sweep in the simulator, drawn as figures.

Runs `cleave --role=simulate` for Cleave and each baseline (asteroid,
megatron, dp) over the authors' sweep (../shared/DESIGN.md: devices at
3 TFLOP/s, 100 MB/s down, 5 MB/s up; batch 128, sequence 512; OPT-6.7B, 13B
and 30B), reads each run's JSON report and draws:

  step_time.{png,svg}    per-batch time vs device count, one panel per model,
                         with the H100 step times of the cloud anchor as lines
                         (Cleave also with a 100 Gbit/s PS link)
  efficiency.{png,svg}   Cleave's step over the largest of its lower bounds,
                         opt-6.7b, with a 10 and a 100 Gbit/s PS link
  traffic.{png,svg}      per-device and per-shard PS traffic vs device count
  recovery.{png,svg}     recovery time vs failure rate, Cleave vs baselines
  time_split.{png,svg}   Cleave's step split vs device count
  summary.json           every run's headline figures (what docs/RESULTS.md quotes)

Reports are cached in OUT/runs/ by their command line, so a second run only
redraws. Usage: sweep.py --cleave build/cmd/cleave --out bench/scale/out
"""
import argparse
import concurrent.futures as futures
import functools
import hashlib
import json
import os
import re
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SYSTEMS = ["cleave", "asteroid", "megatron", "dp"]
MODELS = ["opt-6.7b", "opt-13b", "opt-30b"]
# The sweep device: the authors' defaults; memory and latency are ours (the
# sweep does not give them).
DEVICE = {"name": "sweep", "flops": 3e12, "memory_bytes": 8_000_000_000,
          "downlink": 1e8, "uplink": 5e6, "latency": 0.02}
# Cleave as device processes run it: each device pipelines its tiles, the PS
# sends in plan order, and attention is planned as tiles like the GEMMs. The
# wire is bf16 for the opt-* shapes, for every system (the default).
CLEAVE_FLAGS = ["--pipelined-devices", "--ps-link-model=scheduled", "--attention-tiles"]
FAST_PS = ["--ps-egress=1.25e10"]  # 100 Gbit/s each way


def fleet_file(out, count):
    path = os.path.join(out, "fleets", f"sweep-{count}.json")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump({"devices": [dict(DEVICE, count=count)]}, f)
    return path


@functools.lru_cache(maxsize=None)
def binary_id(cleave):
    """The binary's content digest: a report is reused only from the same build."""
    h = hashlib.sha1()
    with open(cleave, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def run(cleave, out, system, shape, devices, extra=()):
    """One simulation; returns its report (cached by the binary and the command line)."""
    args = ["--role=simulate", f"--system={system}", "--model=gpt", f"--shape={shape}",
            "--batch=128", "--context=512", f"--fleet={fleet_file(out, devices)}"]
    args += (CLEAVE_FLAGS if system == "cleave" else []) + list(extra)
    key = hashlib.sha1((binary_id(cleave) + " " + " ".join(args)).encode()).hexdigest()[:16]
    report = os.path.join(out, "runs", key + ".json")
    if not os.path.exists(report):
        os.makedirs(os.path.dirname(report), exist_ok=True)
        subprocess.run([cleave] + args + [f"--report={report}.tmp"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.replace(report + ".tmp", report)
    with open(report) as f:
        rep = json.load(f)
    rep["_command"] = "cleave " + " ".join(args)
    return rep


def h100_steps(anchors):
    """model shape -> H100 seconds per step, from the anchor's table."""
    steps = {}
    if not os.path.exists(anchors):
        return steps
    for line in open(anchors):
        m = re.match(r"\|\s*(opt-[\w.]+)\s*\|.*\|\s*([\d.]+)\s*\|\s*\d+\s*\|\s*$", line)
        if m:
            steps[m.group(1)] = float(m.group(2))
    return steps


def step_of(rep):
    return rep.get("mean_step_seconds") if rep.get("fits", True) else None


def save(fig, out, name):
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(out, f"{name}.{ext}"), bbox_inches="tight", dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    ap.add_argument("--cleave", default=os.path.join(repo, "build/cmd/cleave"))
    ap.add_argument("--out", default=os.path.join(here, "out"))
    ap.add_argument("--anchors", default=os.path.join(repo, "../shared/anchors/cloud-gpu.md"))
    ap.add_argument("--devices", default="16,64,256,1024,4096",
                    help="device counts of the step-time sweep")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    counts = [int(x) for x in a.devices.split(",")]
    pool = futures.ThreadPoolExecutor(a.jobs)

    jobs = {(s, m, n): pool.submit(run, a.cleave, a.out, s, m, n)
            for m in MODELS for n in counts for s in SYSTEMS}
    shard_jobs = {n: pool.submit(run, a.cleave, a.out, "cleave", "opt-6.7b", n, ["--ps-shards=4"])
                  for n in counts}
    fast_jobs = {(m, n): pool.submit(run, a.cleave, a.out, "cleave", m, n, FAST_PS)
                 for m in MODELS for n in counts}
    rates = [0.0, 0.01, 0.05, 0.2]  # failures per device-hour
    churn_devices = 1024  # the fewest of the sweep on which Asteroid fits opt-6.7b
    churn_jobs = {(s, r): pool.submit(run, a.cleave, a.out, s, "opt-6.7b", churn_devices,
                                      [f"--churn-rate={r}", "--seed=1", "--steps=2"] if r > 0
                                      else ["--steps=2"])
                  for s in ["cleave", "asteroid"] for r in rates}
    reps = {k: j.result() for k, j in jobs.items()}
    shard_reps = {k: j.result() for k, j in shard_jobs.items()}
    fast_reps = {k: j.result() for k, j in fast_jobs.items()}
    churn_reps = {k: j.result() for k, j in churn_jobs.items()}
    h100 = h100_steps(a.anchors)

    # Per-batch time vs devices.
    fig, axes = plt.subplots(1, len(MODELS), figsize=(5 * len(MODELS), 4), sharey=True)
    for ax, m in zip(axes, MODELS):
        for s in SYSTEMS:
            pts = [(n, step_of(reps[(s, m, n)])) for n in counts]
            pts = [(n, t) for n, t in pts if t]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=s)
        pts = [(n, step_of(fast_reps[(m, n)])) for n in counts]
        ax.plot(*zip(*pts), marker="o", ls=":", label="cleave, 100 Gbit/s PS")
        if m in h100:
            ax.axhline(h100[m], color="k", ls="--", label=f"one H100 ({h100[m]} s)")
        ax.set(xscale="log", yscale="log", title=m, xlabel="devices")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("seconds per batch (128 x 512 tokens)")
    save(fig, a.out, "step_time")

    # Traffic: per device (mean over those with bytes) and per PS shard.
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, source in (("1 shard", {n: reps[("cleave", "opt-6.7b", n)] for n in counts}),
                          ("4 shards", shard_reps)):
        dev, shard = [], []
        for n in counts:
            rep = source[n]
            active = [d["bytes_down"] + d["bytes_up"] for d in rep.get("per_device", [])
                      if d["bytes_down"] + d["bytes_up"] > 0]
            steps = max(1, rep.get("steps", 1))
            dev.append(sum(active) / max(1, len(active)) / steps)
            shard.append(max(s["bytes_down"] + s["bytes_up"] for s in rep["per_shard"]) / steps)
        ax.plot(counts, dev, marker="o", label=f"per device ({label})")
        ax.plot(counts, shard, marker="s", ls="--", label=f"per PS shard ({label})")
    ax.set(xscale="log", yscale="log", xlabel="devices", ylabel="bytes per step",
           title="Cleave, opt-6.7b: traffic per step")
    ax.legend(fontsize=8)
    save(fig, a.out, "traffic")

    # Recovery vs failure rate: extra seconds per step over the no-churn run.
    fig, ax = plt.subplots(figsize=(6, 4))
    for s in ["cleave", "asteroid"]:
        base = step_of(churn_reps[(s, 0.0)])
        pts = [(r, step_of(churn_reps[(s, r)]) - base) for r in rates[1:] if step_of(churn_reps[(s, r)])]
        ax.plot([p[0] for p in pts], [max(p[1], 1e-3) for p in pts], marker="o", label=s)
    ax.set(xscale="log", yscale="log", xlabel="failures per device-hour",
           ylabel="extra seconds per step (recovery)",
           title=f"opt-6.7b on {churn_devices} devices, 2 steps")
    ax.legend(fontsize=8)
    save(fig, a.out, "recovery")

    # Cleave's step split vs devices.
    fig, ax = plt.subplots(figsize=(6, 4))
    parts = ["wait_on_devices", "ps_compute", "ps_rowwise", "ps_optimizer"]
    bottom = [0.0] * len(counts)
    for p in parts:
        vals = [reps[("cleave", "opt-6.7b", n)]["step_split_seconds"][p] for n in counts]
        ax.bar([str(n) for n in counts], vals, bottom=bottom, label=p)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set(xlabel="devices", ylabel="seconds per step", title="Cleave, opt-6.7b: where the step goes")
    ax.legend(fontsize=8)
    save(fig, a.out, "time_split")

    # Efficiency: the step over the largest of its lower bounds.
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, source in (("10 Gbit/s PS", {n: reps[("cleave", "opt-6.7b", n)] for n in counts}),
                          ("100 Gbit/s PS", {n: fast_reps[("opt-6.7b", n)] for n in counts})):
        ax.plot(counts, [source[n]["efficiency"] for n in counts], marker="o", label=label)
    ax.axhline(1.2, color="k", ls="--", label="target 1.2")
    ax.set(xscale="log", xlabel="devices", ylabel="step / largest lower bound",
           title="Cleave, opt-6.7b: how close to its bound")
    ax.legend(fontsize=8)
    save(fig, a.out, "efficiency")

    def bounds_of(rep):
        return {"step": rep["mean_step_seconds"], "efficiency": rep["efficiency"],
                "efficiency_with_ps_work": rep["efficiency_with_ps_work"],
                "lower_bounds_seconds": rep["lower_bounds_seconds"],
                "ps_own_work_seconds": rep["ps_own_work_seconds"],
                "step_split_seconds": rep["step_split_seconds"],
                "bytes_down": rep["bytes_down"], "bytes_up": rep["bytes_up"],
                "tiles_timed_out": rep["tiles_timed_out"]}

    summary = {"step_seconds": {m: {s: {str(n): step_of(reps[(s, m, n)]) for n in counts}
                                    for s in SYSTEMS} for m in MODELS},
               "cleave_fast_ps_step_seconds": {m: {str(n): step_of(fast_reps[(m, n)]) for n in counts}
                                               for m in MODELS},
               "cleave_opt_6_7b": {"10gbit": {str(n): bounds_of(reps[("cleave", "opt-6.7b", n)]) for n in counts},
                                   "100gbit": {str(n): bounds_of(fast_reps[("opt-6.7b", n)]) for n in counts}},
               "recovery_step_seconds": {s: {str(r): step_of(churn_reps[(s, r)]) for r in rates}
                                         for s in ["cleave", "asteroid"]},
               "h100_seconds": h100,
               "commands": sorted({r["_command"] for r in list(reps.values()) + list(fast_reps.values())})}
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    for m in MODELS:
        print(m, {s: [step_of(reps[(s, m, n)]) for n in counts] for s in SYSTEMS},
              "cleave 100G:", [step_of(fast_reps[(m, n)]) for n in counts])
    for n in counts:
        print(f"opt-6.7b cleave {n}: efficiency {reps[('cleave', 'opt-6.7b', n)]['efficiency']:.3f} (10G), "
              f"{fast_reps[('opt-6.7b', n)]['efficiency']:.3f} (100G)")


if __name__ == "__main__":
    sys.exit(main())
