"""Recovery benchmark (see run.sh).

(i)   Cleave: the extra wall time of a step in which one device dies with a
      tile in hand ("crash": it dies on receiving its next tile), against
      the median of the 20 steps around it (per-step times from the report).
(ii)  The baselines' way (--failure-policy=restart): the same death stops the
      run, which is restarted with --resume from its last checkpoint and
      redoes the lost steps. Extra time = the resumed process's restart
      (start, data, fleet, restore: its wall time minus its steps and its
      evaluation) + the redone steps' times from its report. The partial
      step lost at the failure is not counted (in the baselines' favour).
Detection latency: kill to the detector's dead event, in-process (CAF monitor)
and across processes on loopback (SIGKILL to the ps logging the death).
"""
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CLEAVE = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="cleave-recovery-")
STEPS, EVERY = 1000, 200  # checkpoint every 200 steps (~5 s here): more often than a user would
FLEET = ["--role=all", "--devices=32", "--profile=fast", "--ps-egress=1e12", "--ps-flops=1e9"]
MODEL = ["--model=mlp", "--hidden=1024,1024", f"--steps={STEPS}", "--threads=2", "--log-level=warn",
         "--eval-tokens=2048"]
CRASH_STEPS = [150 + 80 * i for i in range(10)]  # ten devices die with a tile in hand
DIE_STEPS = [190 + 80 * i for i in range(10)]    # ten killed 5 ms into a step (timed detection)
BASELINE_STEPS = [300, 500, 700]                 # each half a checkpoint interval after one


def path(name):
    return os.path.join(WORK, name)


def run(args, report=None, check=True):
    t0 = time.monotonic()
    cmd = [CLEAVE, *args] + ([f"--report={report}"] if report else [])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.monotonic() - t0
    if check and proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-2000:]}")
    return elapsed, proc


def churn_file(name, events):
    with open(path(name), "w") as f:
        json.dump({"events": events}, f)
    return path(name)


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def main():
    ck = lambda d: [f"--checkpoint-dir={path(d)}", f"--checkpoint-every={EVERY}"]
    print(f"fleet: 32 emulated 'fast' devices, every GEMM split; model mlp 784-1024-1024-10, "
          f"{STEPS} steps, checkpoint every {EVERY} steps", flush=True)

    run(FLEET + MODEL + ck("free"), path("free.json"))
    free = json.load(open(path("free.json")))
    step_med = statistics.median(free["step_seconds"])
    print(f"failure-free: median step {step_med * 1e3:.1f} ms, {free['tiles'] / STEPS:.0f} tiles/step",
          flush=True)

    # (i) twenty deaths in one run: ten crashes with a tile in hand, ten kills.
    events = [{"step": s, "action": "crash", "device": i} for i, s in enumerate(CRASH_STEPS)]
    events += [{"step": s, "action": "die", "device": 10 + i, "after_seconds": 0.005}
               for i, s in enumerate(DIE_STEPS)]
    events.sort(key=lambda e: e["step"])
    run(FLEET + MODEL + ck("cont") + [f"--churn={churn_file('deaths.json', events)}"], path("cont.json"))
    cont = json.load(open(path("cont.json")))
    worst = max(abs(a - b) / abs(a) for a, b in zip(free["losses"], cont["losses"]))
    print(f"     loss trajectory with the deaths vs without: worst relative difference {worst:.2e}; "
          f"{cont['tiles_at_ps']} tiles computed at the PS", flush=True)
    steps = cont["step_seconds"]
    failed = set(CRASH_STEPS) | set(DIE_STEPS)

    def extra(s):  # step s (1-based) against the failure-free steps around it
        window = [steps[j - 1] for j in range(s - 10, s + 11) if j not in failed]
        return steps[s - 1] - statistics.median(window)

    extra_i = [extra(s) for s in CRASH_STEPS]
    extra_die = [extra(s) for s in DIE_STEPS]
    det_in = cont["churn"]["detection_seconds_dead"]
    print(f"(i)  extra wall time of a step whose device dies with a tile in hand: median "
          f"{statistics.median(extra_i) * 1e3:.1f} ms, max {max(extra_i) * 1e3:.1f} ms (n={len(extra_i)}); "
          f"killed 5 ms into a step: median {statistics.median(extra_die) * 1e3:.1f} ms; "
          f"{cont['tiles_reassigned']} tiles reassigned, {cont['speculative_tiles']} speculative, "
          f"{cont['failures_detected']} failures detected", flush=True)

    # (ii) the same death, handled by stopping and resuming from the last checkpoint.
    extra_ii = []
    for s in BASELINE_STEPS:
        d = f"base{s}"
        death = churn_file(f"death{s}.json", [{"step": s, "action": "crash", "device": 0}])
        t_stop, proc = run(FLEET + MODEL + ck(d) + [f"--churn={death}", "--failure-policy=restart"],
                           check=False)
        if proc.returncode == 0 or "failure-policy=restart" not in proc.stdout:
            sys.exit(f"the restart policy did not stop the run:\n{proc.stdout[-1000:]}")
        t_resume, _ = run(FLEET + MODEL + ck(d) + ["--resume"], path(f"resumed{s}.json"))
        resumed = json.load(open(path(f"resumed{s}.json")))
        if abs(resumed["test_loss"] - free["test_loss"]) > 1e-4 * abs(free["test_loss"]):
            sys.exit("the resumed baseline did not reach the failure-free model")
        start = resumed["resumed_from_step"]
        restart = t_resume - sum(resumed["step_seconds"]) - resumed["eval_seconds"]
        redo = sum(resumed["step_seconds"][:s - 1 - start])  # steps start+1 .. s-1 again
        extra_ii.append(restart + redo)
        print(f"(ii) death at step {s}: run stopped; restart {restart:.2f} s, resumed from step {start}, "
              f"{s - 1 - start} steps redone in {redo:.2f} s: extra {extra_ii[-1]:.2f} s", flush=True)

    # A hung device: no heartbeats, no answers; phi-accrual has to notice.
    hangs = [{"step": s, "action": "hang", "device": 20 + i} for i, s in enumerate(CRASH_STEPS[:5])]
    run(FLEET + MODEL + ck("hang") + [f"--churn={churn_file('hangs.json', hangs)}"], path("hang.json"))
    hang = json.load(open(path("hang.json")))
    hsteps = hang["step_seconds"]
    extra_hang = [hsteps[s - 1] - statistics.median(hsteps[s - 11:s - 1] + hsteps[s:s + 10])
                  for s in CRASH_STEPS[:5]]
    print(f"     a hung device: extra step time median {statistics.median(extra_hang) * 1e3:.1f} ms, "
          f"suspected after {fmt_ms(hang['churn']['detection_seconds_suspect'])}, "
          f"dead after {fmt_ms(hang['churn']['detection_seconds_dead'])}", flush=True)

    # Detection across processes: SIGKILL device processes one at a time.
    det_remote = loopback_detection(8)

    i_med, i_mean, i_max = statistics.median(extra_i), statistics.mean(extra_i), max(extra_i)
    ii_med = statistics.median(extra_ii)
    print()
    print(f"(i)  Cleave, extra per failure:          median {i_med * 1e3:8.1f} ms, mean {i_mean * 1e3:.1f} ms, "
          f"worst {i_max * 1e3:.1f} ms")
    print(f"(ii) stop + restore + redo, per failure: median {ii_med * 1e3:8.1f} ms")
    for name, value in (("median", i_med), ("mean", i_mean), ("worst", i_max)):
        if value > 0:
            print(f"ratio (ii)/(i) with (i)'s {name}: {ii_med / value:.0f}x (goal >= 100x)")
        else:
            print(f"ratio (ii)/(i) with (i)'s {name}: (i) is below the step-time noise")
    print(f"detection, in-process kill -> dead: median {statistics.median(det_in) * 1e3:.2f} ms, "
          f"p99 {pct(det_in, 0.99) * 1e3:.2f} ms (n={len(det_in)})")
    if det_remote:
        print(f"detection, loopback SIGKILL -> dead: median {statistics.median(det_remote) * 1e3:.1f} ms, "
              f"p99 {pct(det_remote, 0.99) * 1e3:.1f} ms (n={len(det_remote)}; goal < 500 ms)")


def fmt_ms(values):
    return "[" + ", ".join(f"{v * 1e3:.0f}" for v in values) + "] ms"


def log_time(line):
    stamp = line.split(" ", 1)[0]
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f").timestamp()


def loopback_detection(n):
    """A ps hosting planner and detector, n device processes; SIGKILL them one
    by one while it trains, and time each kill to the ps's 'is dead' line."""
    log = open(path("ps.log"), "w")
    ps = subprocess.Popen([CLEAVE, "--role=ps", "--listen=127.0.0.1:0", f"--min-devices={n}",
                           "--ps-egress=1e12", "--ps-flops=1e9", "--model=mlp", "--steps=100000",
                           "--threads=1", "--log-level=info", "--progress-seconds=60"],
                          stdout=log, stderr=subprocess.STDOUT)
    port = None
    for _ in range(500):
        text = open(path("ps.log")).read()
        if "listening on port" in text:
            port = text.split("listening on port ")[1].split()[0]
            break
        time.sleep(0.02)
    if port is None:
        ps.kill()
        print("loopback detection: the ps did not start")
        return []
    devices = [subprocess.Popen([CLEAVE, "--role=device", f"--connect=127.0.0.1:{port}", "--profile=fast",
                                 "--threads=1", "--log-level=warn", "--reconnect-seconds=0"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(n)]
    while "training mlp" not in open(path("ps.log")).read():
        time.sleep(0.05)
    time.sleep(1.0)
    killed_at = []
    for dev in devices[:-1]:  # the last one keeps training going
        killed_at.append(time.time())
        dev.kill()
        dev.wait()
        time.sleep(0.8)
    ps.kill()
    devices[-1].kill()
    ps.wait()
    dead = [log_time(l) for l in open(path("ps.log")) if "planner: device" in l and "is dead" in l]
    if len(dead) != len(killed_at):
        print(f"loopback detection: {len(dead)} deaths logged for {len(killed_at)} kills")
        return []
    return [d - k for d, k in zip(dead, killed_at)]


if __name__ == "__main__":
    main()
