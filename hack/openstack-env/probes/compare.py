"""Side-by-side of two wire_probes.py outputs (real services vs capo-sim): one line per request
whose status or error body differs.   python compare.py real.json sim.json"""

import json
import sys


def load(path):
    out = {}
    for rec in json.load(open(path)):
        key = rec["label"]
        while key in out:
            key += "'"
        out[key] = rec
    return out


def short(rec):
    if "note" in rec:
        return rec["note"]
    body = rec["response"]
    if isinstance(body, dict) and len(json.dumps(body)) > 300:
        body = {k: (v if len(json.dumps(v)) < 200 else "...") for k, v in body.items()} \
            if len(body) > 1 else {k: "..." for k in body}
    return f"{rec['status']} {json.dumps(body)[:400]}"


real, sim = load(sys.argv[1]), load(sys.argv[2])
for label, r in real.items():
    s = sim.get(label)
    if s is None:
        print(f"- {label}: real {short(r)} | sim: (not probed)")
        continue
    if "note" in r or r["status"] != s["status"] or (r["status"] >= 400 and r["response"] != s["response"]):
        print(f"- {label}: {r.get('request', '')}\n    real {short(r)}\n    sim  {short(s)}")
