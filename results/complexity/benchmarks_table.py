# Prints the table of BENCHMARKS.md, "The complexity table, measured", from a
# results folder of examples/complexity: python3 results/complexity/benchmarks_table.py results/complexity
import json, sys
d = sys.argv[1]
cells = [json.loads(l) for l in open(d + '/cells.jsonl')]
trunc = [json.loads(l) for l in open(d + '/truncation.jsonl')]
ests = ['L-SGD', 'V-MLMC', 'RT-MLMC', 'RU-MLMC', 'RR-MLMC']
rows = [('strongly-convex', False), ('convex', False), ('nonconvex', False), ('nonconvex', True)]
regs = [(1, 2, 1), (2, 1.5, 1), (1, 1, 1), (2, 1, 1.5)]
def fmt(c):
    if c is None: return '-'
    m = c['measured']
    if m is None: return 'not reached'
    s = '%.2f [%.2f, %.2f]' % tuple(m)
    if c['predicted'] is not None and abs(m[0] - c['predicted']) > 0.15: s += '\\*'
    return s
def g(x): return ('%g' % x)
print('| row | (a, b, c) | ' + ' | '.join(ests) + ' |')
print('|---|---|' + '---|' * len(ests))
for obj, vr in rows:
    for r in regs:
        line = []
        for e in ests:
            sel = [c for c in cells if c['objective'] == obj and c['vr'] == vr and (c['a'], c['b'], c['c']) == r and c['estimator'] == e]
            pre = next((c for c in sel if c['params'] == 'prescribed'), None)
            tun = next((c for c in sel if c['params'] == 'tuned'), None)
            if pre is not None and pre['predicted'] is None:
                t = [x for x in trunc if x['objective'] == obj and x['vr'] == vr and (x['a'], x['b'], x['c']) == r and x['estimator'] == e]
                line.append('N.A.: K 4 to 16: %.3g to %.3g samples, variance %.3g to %.3g' % (t[0]['expected_samples'], t[-1]['expected_samples'], t[0]['variance_exact'], t[-1]['variance_exact']))
                continue
            if pre is None and tun is None:
                line.append('-'); continue
            p = (pre or tun)['predicted']
            line.append('**%s**: %s; tuned %s' % (g(p), fmt(pre), fmt(tun)))
        name = ('VR ' if vr else '') + obj + (', c < b' if r[2] < r[1] else ', c >= b')
        print('| %s | (%s) | %s |' % (name, ', '.join(g(x) for x in r), ' | '.join(line)))
