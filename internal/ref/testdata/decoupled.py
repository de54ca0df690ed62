"""Reference DCL and SogCLR losses for internal/ref's TestDecoupledMatchesNumPy.

Written in LibAUC's layout (GCLoss_v1): the two views of a batch are two blocks
of rows, hidden1 and hidden2, and each anchor's candidates are [other block |
own block] with its positive and itself masked out. The Go side interleaves the
views (rows 2k and 2k+1); this script converts. Input: a JSON file with n, d,
tau, gamma and z (a list of steps, each 2n*d values, interleaved). Output on
stdout: for each step the DCL loss and gradient, and the SogCLR value, step
and u after it (u starts at 0 and carries from step to step).
"""
import json
import sys

import numpy as np


def blocks(z, n, d):
    z = np.asarray(z, dtype=np.float64).reshape(n, 2, d)
    return np.concatenate([z[:, 0, :], z[:, 1, :]])  # [hidden1; hidden2]


def interleave(x, n, d):
    out = np.empty((n, 2, d))
    out[:, 0, :], out[:, 1, :] = x[:n], x[n:]
    return out.reshape(-1)


def candidates(s, n):
    """Per anchor (2n rows): its 2n candidate cosines [other block | own block]
    and the column of its positive and of itself within them."""
    h1, h2 = s[:n], s[n:]
    cand = np.concatenate([np.concatenate([h1[:, n:], h1[:, :n]], 1),
                           np.concatenate([h2[:, :n], h2[:, n:]], 1)])
    idx = np.arange(n)
    return cand, np.concatenate([idx, idx]), np.concatenate([idx + n, idx + n])


def to_full(c_cand, n):
    """Scatter the gradient on each anchor's candidates back to the 2n x 2n
    similarity matrix of the blocks."""
    c = np.zeros((2 * n, 2 * n))
    c[:n, n:], c[:n, :n] = c_cand[:n, :n], c_cand[:n, n:]
    c[n:, :n], c[n:, n:] = c_cand[n:, :n], c_cand[n:, n:]
    return c


def gradient(c, hn, norms, n, d):
    dh = (c + c.T) @ hn
    dz = (dh - hn * np.sum(hn * dh, 1, keepdims=True)) / norms
    return interleave(dz, n, d)


def main():
    cfg = json.load(open(sys.argv[1]))
    n, d, tau, gamma = cfg["n"], cfg["d"], cfg["tau"], cfg["gamma"]
    rows, k = 2 * n, 2 * (n - 1)  # anchors, negatives per anchor
    u = np.zeros(n, dtype=np.float32)
    out = {"dcl": [], "sogclr": []}
    for z in cfg["z"]:
        h = blocks(z, n, d)
        norms = np.linalg.norm(h, axis=1, keepdims=True)
        hn = h / norms
        cand, pos, own = candidates(hn @ hn.T, n)
        a = np.arange(rows)
        neg = np.ones((rows, rows), bool)
        neg[a, pos] = False
        neg[a, own] = False
        e = np.exp(cand / tau) * neg

        # DCL: log of the sum over the negatives less the positive's logit.
        denom = e.sum(1)
        loss = np.mean(np.log(denom) - cand[a, pos] / tau)
        c = e / denom[:, None] / tau
        c[a, pos] = -1 / tau
        dz = gradient(to_full(c / rows, n), hn, norms, n, d)
        out["dcl"].append({"Loss": float(loss), "Dz": dz.tolist()})

        # SogCLR: u per anchor from its image's u, then weights e / u.
        old = np.concatenate([u, u]).astype(np.float64)
        g = np.where(old == 0, 1.0, gamma)
        ua = (1 - g) * old + g * denom / k
        value = np.mean(np.log(k * ua) - cand[a, pos] / tau)
        c = e / ua[:, None] / k
        c[a, pos] = -1
        dz = gradient(to_full(c / rows, n), hn, norms, n, d)
        u = ((ua[:n].astype(np.float32) + ua[n:].astype(np.float32)) * np.float32(0.5)).astype(np.float32)
        out["sogclr"].append({"Loss": float(value), "Dz": dz.tolist(), "U": [float(x) for x in u]})
    json.dump(out, sys.stdout)


main()
