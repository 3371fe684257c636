#!/usr/bin/env python3
"""How well the model of the server identifies the simulator's limiters.

Runs `pacer-sim compare --story free-run --costs one` for each shape, window and seed, with the
modes given, and prints per cell how often the kind was right (at the end of the run and at the
first instance's fifth refusal), and how often the limit was within 10 % at the fifth refusal.

    cargo build --release -p pacer-sim
    python3 scripts/identify.py [--modes pacer,default] [--seeds 20] [--instances 2]
"""
import argparse
import csv
import io
import statistics
import subprocess

SHAPES = ["sliding", "fixed", "token-bucket", "leaky-bucket", "gcra"]
WINDOWS = [1, 10, 60]

ap = argparse.ArgumentParser()
ap.add_argument("--modes", default="pacer")
ap.add_argument("--seeds", type=int, default=20)
ap.add_argument("--instances", type=int, default=2)
ap.add_argument("--bin", default="target/release/pacer-sim")
ap.add_argument("--story", default="free-run")
args = ap.parse_args()
modes = args.modes.split(",")

print("| mode | shape | window | kind right (end) | kind right (5th) | window right (5th) | limit ±10 % (5th) | median limit/true (5th) | median 429s |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
totals = {m: [0, 0, 0, 0] for m in modes}
for mode in modes:
    for shape in SHAPES:
        for window in WINDOWS:
            end = fifth = close = wins = 0
            ratios, throttles = [], []
            for seed in range(1, args.seeds + 1):
                cmd = [args.bin, "compare", "--story", args.story, "--server", shape,
                       "--window", str(window), "--seed", str(seed), "--costs", "one",
                       "--instances", str(args.instances), "--mode", mode, "--format", "csv"]
                out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
                row = next(csv.DictReader(io.StringIO(out)))
                throttles.append(int(row["throttled"]))
                end += row["identified_kind"] == row["true_kind"]
                fifth += row["fifth_kind"] == row["true_kind"]
                wins += bool(row["fifth_window_s"]) and float(row["fifth_window_s"]) == float(row["true_window_s"])
                if row["fifth_limit"]:
                    ratio = float(row["fifth_limit"]) / float(row["true_limit"])
                    ratios.append(ratio)
                    close += abs(ratio - 1) <= 0.1 and float(row["fifth_window_s"]) == float(row["true_window_s"])
            n = args.seeds
            t = totals[mode]
            t[0] += end; t[1] += fifth; t[2] += close; t[3] += n
            med = f"{statistics.median(ratios):.2f}" if ratios else "–"
            print(f"| {mode} | {shape} | {window} s | {100*end/n:.0f} % | {100*fifth/n:.0f} % | "
                  f"{100*wins/n:.0f} % | {100*close/n:.0f} % | {med} | {statistics.median(throttles):.0f} |")
for mode, (end, fifth, close, n) in totals.items():
    print(f"\n{mode}: kind right {100*end/n:.0f} % at the end, {100*fifth/n:.0f} % at the fifth refusal; "
          f"window right and limit within 10 % at the fifth refusal {100*close/n:.0f} % ({n} runs)")
