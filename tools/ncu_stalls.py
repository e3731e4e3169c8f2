"""Stall samples of an ncu source page, the top SASS lines and the samples by band of addresses:

    ncu --import /tmp/a.ncu-rep --page source --csv --print-source sass > /tmp/a.csv
    python tools/ncu_stalls.py /tmp/a.csv
"""
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hdr_i = next(i for i, r in enumerate(rows) if any("Source" == c or "Address" in c for c in r))
hdr = rows[hdr_i]
src = next(i for i, c in enumerate(hdr) if c == "Source")
samp = [i for i, c in enumerate(hdr) if "Sampling" in c]
col = samp[0]
addr = next((i for i, c in enumerate(hdr) if "Address" in c), 0)
data = []
for r in rows[hdr_i + 1:]:
    try:
        data.append((float(r[col].replace(",", "") or 0), r))
    except (ValueError, IndexError):
        pass
total = sum(d[0] for d in data) or 1
print("total samples", total, "instructions", len(data))
for v, r in sorted(data, key=lambda d: -d[0])[:25]:
    print(f"{100 * v / total:5.1f}%  {r[addr]}  {r[src][:80]}")
# bands of 1/25 of the instructions, in address order, with the first opcode of note in each
n = len(data); step = max(1, n // 25)
print("bands (instruction index: share, notable ops)")
for s in range(0, n, step):
    part = data[s:s + step]
    v = sum(p[0] for p in part)
    notes = sorted({p[1][src].split()[0] if not p[1][src].startswith("@") else p[1][src].split()[1]
                    for p in part if any(t in p[1][src] for t in ("HGMMA", "SYNCS", "BAR", "UTMA", "EXIT", "STG", "STS", "MUFU", "BRA"))})
    print(f"  {s:5d}-{s + len(part) - 1:5d} {100 * v / total:5.1f}%  {' '.join(notes)[:100]}")
