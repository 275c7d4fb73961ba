#!/usr/bin/python3
"""Cross-check qkt's fused attention options against PyTorch (float64).

For each case this script draws q (B, Tq, C), k and v (B, Tk, C), a seed dy (B, Tq, C)
and, when the case has them, a bias ((H, Tq, Tk), (1, H, Tq, Tk) or (B, H, Tq, Tk)),
learned log-scales (H) and a key-padding mask (B, Tk); rounds them to float32; runs

    attention_driver DIR B Tq Tk C H full bias alibi pad learned scale

(tests/torch/attention_driver.c: qkt_attention forward and backward in float32) and
compares y, the captured probabilities and the gradients of q, k, v, the bias and the
log-scales with PyTorch autograd in float64 of

    P = softmax(s_h q k^T + bias - m_h |i + Tk - Tq - j| + mask),   y = P v

mask: -inf where j > i + Tk - Tq (causal; none under the full mask) or key j is padded;
a query row with every key blocked gives P = 0. The ALiBi slopes m_h are computed here
from the paper's recipe (Press et al., get_slopes), independently of qkt's
qkt_alibi_slopes. Tolerance: max |qkt - torch| <= 1e-5 (y, P) or 1e-4 (grads) times
max |torch| over each tensor.

Usage: crosscheck_attention.py ATTENTION_DRIVER. Exit 0 = all passed, 1 = a mismatch,
77 = skipped (no torch for this interpreter).
"""
import math
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIP: PyTorch cross-check needs torch and numpy for {sys.executable} ({e})")
    sys.exit(77)


def alibi_slopes(n):
    """ALiBi's slopes as the paper's code defines them (geometric from 2^(-8/n))."""
    def pow2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return pow2(n)
    c = 2 ** math.floor(math.log2(n))
    return pow2(c) + alibi_slopes(2 * c)[0::2][: n - c]


def reference(q, k, v, dy, H, scale, full, bias, slopes, pad, log_scale):
    """float64 torch attention in the (B, T, H, d) layout; returns y, P and the grads."""
    B, Tq, C = q.shape
    Tk, d = k.shape[1], C // H
    leaves = {"q": q, "k": k, "v": v}
    if bias is not None:
        leaves["bias"] = bias
    if log_scale is not None:
        leaves["log_scale"] = log_scale
    t = {n: torch.tensor(a, dtype=torch.float64, requires_grad=True) for n, a in leaves.items()}
    qh = t["q"].view(B, Tq, H, d).transpose(1, 2)  # (B, H, Tq, d)
    kh = t["k"].view(B, Tk, H, d).transpose(1, 2)
    vh = t["v"].view(B, Tk, H, d).transpose(1, 2)
    s = torch.full((H,), scale, dtype=torch.float64)
    if log_scale is not None:
        s = scale * torch.exp(t["log_scale"])
    z = (qh @ kh.transpose(-1, -2)) * s.view(1, H, 1, 1)
    if bias is not None:
        z = z + (t["bias"] if t["bias"].dim() == 4 else t["bias"].unsqueeze(0))
    i = torch.arange(Tq, dtype=torch.float64).view(Tq, 1)
    j = torch.arange(Tk, dtype=torch.float64).view(1, Tk)
    if slopes is not None:
        m = torch.tensor(slopes, dtype=torch.float64).view(1, H, 1, 1)
        z = z - m * (i + Tk - Tq - j).abs()
    blocked = torch.zeros(B, 1, Tq, Tk, dtype=torch.bool)
    if not full:
        blocked = blocked | (j > i + Tk - Tq).view(1, 1, Tq, Tk)
    if pad is not None:
        blocked = blocked | torch.tensor(pad != 0).view(B, 1, 1, Tk)
    z = z.masked_fill(blocked, -math.inf)
    dead = torch.isinf(z).all(dim=-1, keepdim=True)  # every key blocked: P = 0, not NaN
    P = torch.softmax(z.masked_fill(dead, 0.0), dim=-1).masked_fill(dead, 0.0)
    y = (P @ vh).transpose(1, 2).reshape(B, Tq, C)
    y.backward(torch.tensor(dy, dtype=torch.float64))
    grads = {n: x.grad.numpy() for n, x in t.items()}
    return y.detach().numpy(), P.detach().numpy(), grads


def run_case(driver, tmp, name, B, Tq, Tk, C, H, full=False, bias=0, alibi=False, pad=False, learned=False, seed=0):
    rng = np.random.default_rng(seed)
    d = C // H
    scale = 1 / math.sqrt(d)
    f32 = lambda *shape, std=1.0: (rng.standard_normal(shape) * std).astype(np.float32)
    q, k, v, dy = f32(B, Tq, C, std=1.5), f32(B, Tk, C, std=1.5), f32(B, Tk, C), f32(B, Tq, C)
    bias_shape = {0: None, 3: (H, Tq, Tk), 1: (1, H, Tq, Tk), 4: (B, H, Tq, Tk)}[bias]
    b = f32(*bias_shape) if bias_shape else None
    ls = f32(H, std=0.3) if learned else None
    mask = None
    if pad:
        mask = (rng.random((B, Tk)) < 0.2).astype(np.uint8)
        mask[0, 0] = 1          # causal self-attention: row 0 of batch 0 sees no key
        mask[B - 1, :] = 1 if full and B > 1 else mask[B - 1, :]  # full: a batch row with every key padded
    d_case = os.path.join(tmp, name.replace(" ", "_"))
    os.makedirs(d_case, exist_ok=True)
    files = {"q.f32": q, "k.f32": k, "v.f32": v, "dy.f32": dy, "bias.f32": b, "log_scale.f32": ls, "pad.u8": mask}
    for fn, a in files.items():
        if a is not None:
            a.tofile(os.path.join(d_case, fn))
    args = [driver, d_case, B, Tq, Tk, C, H, int(full), bias, int(alibi), int(pad), int(learned), repr(scale)]
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL {name}: attention_driver exit {r.returncode}: {r.stderr.strip()}")
        return False
    slopes = alibi_slopes(H) if alibi else None
    y, P, g = reference(q, k, v, dy, H, scale, full, b, slopes, mask, ls)
    want = {"y": (y, 1e-5), "probs": (P, 1e-5), "dq": (g["q"], 1e-4), "dk": (g["k"], 1e-4), "dv": (g["v"], 1e-4)}
    if b is not None:
        want["dbias"] = (g["bias"], 1e-4)
    if ls is not None:
        want["dlog_scale"] = (g["log_scale"], 1e-4)
    ok, worst = True, 0.0
    for n, (ref, tol) in want.items():
        got = np.fromfile(os.path.join(d_case, n + ".f32"), dtype=np.float32)
        if got.size != ref.size:
            print(f"FAIL {name}: {n} has {got.size} values, torch {ref.size}")
            ok = False
            continue
        denom = max(np.abs(ref).max(), 1e-6)
        err = np.abs(got.astype(np.float64) - ref.reshape(-1)).max() / denom
        worst = max(worst, err / tol)
        if not err <= tol:
            print(f"FAIL {name}: {n} max |diff| / max |torch| = {err:.2e} > {tol:.0e}")
            ok = False
    dead = int((P.reshape(-1, Tk).sum(-1) == 0).sum())
    print(f"{'ok  ' if ok else 'FAIL'} {name:44s} worst err/tol {worst:.2f}, {dead} fully blocked rows")
    return ok


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    driver = sys.argv[1]
    torch.set_num_threads(1)
    cases = [  # name, B, Tq, Tk, C, H, options
        ("causal self", 2, 17, 17, 48, 3, {}),
        ("full, pad", 3, 17, 17, 48, 3, dict(full=True, pad=True)),
        ("causal, bias (H,Tq,Tk) shared, learned", 3, 17, 17, 48, 3, dict(bias=3, learned=True)),
        ("full, bias (B,H,Tq,Tk), ALiBi", 2, 20, 20, 32, 4, dict(full=True, bias=4, alibi=True)),
        ("causal, ALiBi 6 heads, pad", 2, 33, 33, 48, 6, dict(alibi=True, pad=True)),
        ("cross causal Tq=9 Tk=40, ALiBi, pad, learned", 2, 9, 40, 32, 2, dict(alibi=True, pad=True, learned=True)),
        ("cross full Tq=40 Tk=9, bias (1,H,Tq,Tk)", 2, 40, 9, 32, 2, dict(full=True, bias=1)),
        ("cross causal Tq=40 Tk=9 (31 rows see no key)", 2, 40, 9, 32, 2, dict(bias=3)),
        ("cross causal Tq=70 Tk=100, bias, ALiBi, pad", 2, 70, 100, 64, 4, dict(bias=4, alibi=True, pad=True)),
        ("cross full Tq=100 Tk=70, ALiBi 5 heads, pad", 1, 100, 70, 40, 5, dict(full=True, alibi=True, pad=True)),
    ]
    with tempfile.TemporaryDirectory(prefix="qkt-torch-attn-") as tmp:
        results = [run_case(driver, tmp, n, B, Tq, Tk, C, H, seed=100 + i, **o)
                   for i, (n, B, Tq, Tk, C, H, o) in enumerate(cases)]
    print(f"{sum(results)} of {len(results)} attention cases passed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
