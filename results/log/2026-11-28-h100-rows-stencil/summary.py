# Ratio tables of dynsmem records: each kernel record is followed by its copy anchor.
import json, sys
PEAK = 132 * 128 * 2 * 1.98e9  # H100 SXM FP32 FMA peak at the 1980 MHz boost clock, FLOP/s
print("| family | problem | config | ms | GB/s | copy GB/s | x copy | FLOP bound ms | x bound | verified |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for f in sys.argv[1:]:
    recs = [json.loads(l) for l in open(f)]
    for r, a in zip(recs, recs[1:]):
        if r['family'] == 'copy' or a['family'] != 'copy':
            continue
        p = r['problem']; ms = r.get('median_ms'); cms = a.get('median_ms')
        if not ms or not cms:
            print(f"| {r['family']} | {p} | | | | | | | | {r.get('error')} |"); continue
        flops = None
        if r['family'] == 'stencil2d':
            flops = 2 * (2 * p['radius'] + 1) ** 2 * p['width'] * p['height']
        if r['family'] == 'conv1d':
            flops = 2 * p['taps'] * p['n']
        # The copy anchor moves the kernel's own bytes: its time is the copy bound.
        fb = flops / PEAK * 1e3 if flops else 0.0
        bound = max(cms, fb)
        ps = ' '.join(f"{k}={v}" for k, v in p.items())
        cs = ' '.join(f"{k}={v}" for k, v in (r['config'] or {}).items())
        print(f"| {r['family']} | {ps} | {cs} | {ms:.4f} | {r.get('gbps') or 0:.0f} | {a.get('gbps') or 0:.0f} | {cms/ms:.3f} | {fb:.4f} | {bound/ms:.3f} | {r.get('verified')} |")
