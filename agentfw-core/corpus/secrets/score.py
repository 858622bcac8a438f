#!/usr/bin/env python3
"""Score `agentfw scan` on one split of the secrets corpus.

    python3 score.py AGENTFW OUT SPLIT [--markdown] [--misses N]

runs `AGENTFW scan --jsonl --hops 1` over OUT/SPLIT.jsonl and prints, per category and per
source, how many secrets were refused and how many benign texts were; --misses prints
that many missed secrets and false positives of each category to look at (on train and dev
only: looking at test is for the final figures).
"""
import argparse
import collections
import json
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("agentfw")
    ap.add_argument("out")
    ap.add_argument("split", choices=["train", "dev", "test"])
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--misses", type=int, default=0)
    ap.add_argument("--hops", type=int, default=1)
    ap.add_argument("--rules", help="rules to score instead of the built-in pack")
    args = ap.parse_args()
    rows = [json.loads(line) for line in open(f"{args.out}/{args.split}.jsonl")]
    feed = "".join(json.dumps({"text": r["text"]}) + "\n" for r in rows)
    cmd = [args.agentfw, "scan", "--jsonl", "--hops", str(args.hops)] + (["--rules", args.rules] if args.rules else [])
    run = subprocess.run(cmd, input=feed.encode(), capture_output=True)
    if run.returncode not in (0, 1):
        sys.exit(f"agentfw scan failed: {run.stderr.decode()}")
    verdicts = [json.loads(line) for line in run.stdout.decode().splitlines()]
    assert len(verdicts) == len(rows), (len(verdicts), len(rows))
    by_cat = collections.defaultdict(lambda: [0, 0])
    by_src = collections.defaultdict(lambda: [0, 0])
    misses = collections.defaultdict(list)
    totals = {"deny": [0, 0], "allow": [0, 0]}
    for r, v in zip(rows, verdicts):
        refused = v["verdict"] == "deny"
        for table, key in ((by_cat, r["category"]), (by_src, (r["want"], r["source"]))):
            table[key][0] += refused
            table[key][1] += 1
        totals[r["want"]][0] += refused
        totals[r["want"]][1] += 1
        if refused != (r["want"] == "deny"):
            misses[r["category"]].append((r["note"], v.get("rule"), r["text"]))

    def pct(a, b):
        return f"{100 * a / b:.1f}%" if b else "-"

    sec, ben = totals["deny"], totals["allow"]
    if args.markdown:
        print(f"**{args.split}**: secrets refused {sec[0]}/{sec[1]} ({pct(*sec)}); benign refused {ben[0]}/{ben[1]} ({pct(*ben)})\n")
        print("| category | want | refused | of | rate |\n|---|---|---|---|---|")
        for cat in sorted(by_cat):
            want = "deny" if not cat.startswith("benign") else "allow"
            print(f"| {cat} | {want} | {by_cat[cat][0]} | {by_cat[cat][1]} | {pct(*by_cat[cat])} |")
        print("\n| source | want | refused | of | rate |\n|---|---|---|---|---|")
        for (want, src) in sorted(by_src, key=lambda k: (k[0] != "deny", k[1])):
            print(f"| {src} | {want} | {by_src[(want, src)][0]} | {by_src[(want, src)][1]} | {pct(*by_src[(want, src)])} |")
    else:
        print(f"{args.split}: secrets refused {sec[0]}/{sec[1]} ({pct(*sec)}); benign refused {ben[0]}/{ben[1]} ({pct(*ben)})")
        for cat in sorted(by_cat):
            print(f"  {cat:28} {by_cat[cat][0]:5}/{by_cat[cat][1]:<5} {pct(*by_cat[cat])}")
        print("  by source:")
        for (want, src) in sorted(by_src, key=lambda k: (k[0] != "deny", k[1])):
            print(f"    {want:5} {src:34} {by_src[(want, src)][0]:5}/{by_src[(want, src)][1]:<5} {pct(*by_src[(want, src)])}")
    if args.misses:
        if args.split == "test":
            sys.exit("misses are for train and dev; test is scored, not studied")
        for cat, items in sorted(misses.items()):
            print(f"\n== {cat}: {len(items)} wrong")
            for note, rule, text in items[: args.misses]:
                print(f"-- {note} (rule {rule}): {text[:300]!r}")


if __name__ == "__main__":
    main()
