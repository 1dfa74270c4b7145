#!/usr/bin/env python3
"""The soak's figures from its samples: growth of the ps's RSS, open file
descriptors and threads after warm-up, and a plot of the three against time
as a plain SVG (no plotting library: the bench runs on a bare host).
   soak.py soak.csv soak.json OUT.svg"""
import csv, json, statistics, sys

rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(open(sys.argv[1]))]
report = json.load(open(sys.argv[2])) if sys.argv[2] else {}
svg_path = sys.argv[3]
if len(rows) < 8:
    sys.exit(f"soak.py: only {len(rows)} samples, too few to judge growth")
end = rows[-1]["seconds"]
# Warm-up is minutes 5 to 10, judged against the last 10 minutes; a short
# (debugging) run scales the same split down: second quarter vs last quarter.
if end >= 20 * 60:
    base, last = (300, 600), (end - 600, end)
else:
    base, last = (end / 4, end / 2), (end * 3 / 4, end)
SERIES = [("rss_kib", "RSS (MiB)", 1 / 1024), ("fds", "open fds", 1), ("threads", "threads", 1)]

def median(key, lo, hi):
    return statistics.median(r[key] for r in rows if lo <= r["seconds"] <= hi)

print(f"{len(rows)} samples over {end / 60:.1f} min; warm-up window {base[0] / 60:.1f}-{base[1] / 60:.1f} min, "
      f"final window {last[0] / 60:.1f}-{last[1] / 60:.1f} min")
verdicts = []
for key, label, scale in SERIES:
    b, f = median(key, *base), median(key, *last)
    growth = (f - b) / b * 100
    lo, hi = min(r[key] for r in rows), max(r[key] for r in rows)
    verdicts.append(abs(growth) < 5 or growth < 0)
    print(f"{label:10s} warm-up median {b * scale:9.1f}  final median {f * scale:9.1f}  growth {growth:+6.2f}%  "
          f"(min {lo * scale:.1f}, max {hi * scale:.1f})  {'pass' if growth < 5 else 'FAIL'}")
if report:
    print(f"report: {report['steps']} steps, {report['failures_detected']} failures detected, "
          f"{report['tiles_reassigned']} tiles reassigned, {report['tiles']} tiles, "
          f"{len(report['per_device'])} devices seen, test accuracy {report['test_accuracy']:.4f}")

# Three stacked panels sharing the time axis.
W, H, PAD_L, PAD_R, PAD_T, PANEL, GAP = 720, 540, 70, 20, 30, 130, 40
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="13">ps under churn: '
       f'{report.get("steps", "?")} steps, {end / 60:.0f} min</text>']
for i, (key, label, scale) in enumerate(SERIES):
    top = PAD_T + i * (PANEL + GAP)
    ys = [r[key] * scale for r in rows]
    lo, hi = min(ys), max(ys)
    lo, hi = (0, hi * 1.1) if hi > 0 else (0, 1)  # from zero: flat should look flat
    x = lambda s: PAD_L + (W - PAD_L - PAD_R) * s / max(end, 1)
    y = lambda v: top + PANEL - PANEL * (v - lo) / (hi - lo)
    out.append(f'<rect x="{PAD_L}" y="{top}" width="{W - PAD_L - PAD_R}" height="{PANEL}" fill="none" stroke="#999"/>')
    for lo_s, hi_s, colour in ((*base, "#e8f0ff"), (*last, "#fff0e0")):
        out.append(f'<rect x="{x(lo_s):.1f}" y="{top}" width="{x(hi_s) - x(lo_s):.1f}" height="{PANEL}" fill="{colour}"/>')
    pts = " ".join(f"{x(r['seconds']):.1f},{y(v):.1f}" for r, v in zip(rows, ys))
    out.append(f'<polyline points="{pts}" fill="none" stroke="#1f5fbf" stroke-width="1.2"/>')
    for v in (lo, (lo + hi) / 2, hi):
        out.append(f'<text x="{PAD_L - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.0f}</text>')
    out.append(f'<text x="14" y="{top + PANEL / 2}" transform="rotate(-90 14 {top + PANEL / 2})" '
               f'text-anchor="middle">{label}</text>')
    step = 10 if end >= 1200 else 1
    for m in range(0, int(end / 60) + 1, step):
        out.append(f'<text x="{x(m * 60):.1f}" y="{top + PANEL + 13}" text-anchor="middle">{m}</text>')
out.append(f'<text x="{W / 2}" y="{H - 4}" text-anchor="middle">minutes (shaded: warm-up and final windows)</text>')
out.append("</svg>")
open(svg_path, "w").write("\n".join(out) + "\n")
print(f"plot: {svg_path}")
sys.exit(0 if all(verdicts) else 1)
