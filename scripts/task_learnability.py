#!/usr/bin/python3
"""How many steps does a tiny GPT need to learn each qkt data task?

Independent check of the claim in docs/data.md that the default tasks are learned
by a 2-layer, d_model 64 model in a few hundred steps. The batches come from
`qkt data --dump` (the exact sequences qkt trains on); the model is a plain
PyTorch GPT-2 block stack (pre-LN, learned positions, 1/sqrt(d_k) attention).

usage: /usr/bin/python3 scripts/task_learnability.py QKT_BIN [SPEC ...]
         [--steps 600] [--batch 32] [--lr 3e-3] [--heads 4] [--seed 1]

--study: is the study's main task learnt within the quick preset's budget? For each
SPEC (default: the quick preset's task), steps until validation accuracy first reaches
90 % (evaluated every 20 steps) per attention variant, d_k and seed, measured twice:
with qkt itself (`qkt ablate` restricted to the training cells: the preset's model,
optimizer, batch 16, 200 steps, its fixed validation set) and, with --torch, with a
PyTorch model of the same shape (2 layers, 2 heads of width d_k, AdamW 3e-3, warmup 20,
cosine to 0.1x, weight decay 0.1, beta2 0.95, clip 1, PyTorch's default init) on the
same sequences (`qkt data --dump`, validation: 1024 sequences of seed 1).
  /usr/bin/python3 scripts/task_learnability.py build/qkt --study [--torch]
         [--variants sqrt_dk,none] [--d-k 16,64] [--seeds 5] [SPEC ...]
"""
import argparse
import csv
import glob
import math
import os
import subprocess
import sys
import tempfile
import time

from doc_section import cli

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:  # --study without --torch needs only qkt
    np = torch = None


def dump(qkt, spec, split, count, seed, seq_len=None):
    cmd = [qkt, "data", "--dump", spec, "--split", split, "--count", str(count), "--seed", str(seed)]
    out = subprocess.run(cmd + (["--seq-len", str(seq_len)] if seq_len else []), check=True, capture_output=True, text=True).stdout
    a = np.array([list(map(int, l.split())) for l in out.strip().split("\n")], dtype=np.int64)
    T = a.shape[1] // 2
    return torch.from_numpy(a[:, :T]), torch.from_numpy(a[:, T:])


class Block(nn.Module if torch else object):
    def __init__(self, d, h, scale="sqrt_dk"):
        super().__init__()
        self.h, self.scale = h, scale
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (math.sqrt(C // self.h) if self.scale == "sqrt_dk" else 1.0)
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module if torch else object):
    def __init__(self, V, T, d=64, layers=2, heads=4, scale="sqrt_dk"):
        super().__init__()
        self.tok, self.pos = nn.Embedding(V, d), nn.Embedding(T, d)
        self.blocks = nn.ModuleList(Block(d, heads, scale) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, V, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def evaluate(model, x, y):
    with torch.no_grad():
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=-1).item()
        m = y != -1
        acc = (logits.argmax(-1)[m] == y[m]).float().mean().item()
    return loss, acc


def first90(accs, every):
    """The first evaluation step with accuracy >= 0.9, or None."""
    return next((i * every for i, a in enumerate(accs) if a >= 0.9), None)


def study_qkt(a, spec, out):
    """The quick preset's training cells on spec via qkt ablate; {(variant, d_k): [steps to 90 % per seed]}."""
    cmd = [a.qkt, "ablate", "--preset", "quick", "--out", out, "--name", "learn", "--task", spec, "--variants", a.variants,
           "--d-k", a.d_k, "--seeds", str(a.seeds), "--task2", "none", "--lr-grid", "3e-3", "--lr-variants", "sqrt_dk",
           "--lr-steps", "1", "--init-d-k", "8", "--growth-d-k", "8", "--start-d-k", "0"]
    subprocess.run(cmd, check=True, capture_output=True)
    res, cfg = {}, None
    for path in sorted(glob.glob(os.path.join(out, "learn", "cells", "train_*_s*.csv"))):
        acc, seqs = {}, None
        for row in csv.reader(l for l in open(path) if not l.startswith("#")):
            key = (row[2], int(row[3]))
            if row[7] == "val_acc":
                acc[int(row[6])] = float(row[10])
            elif row[7] == "val_seqs":
                seqs = int(float(row[10]))
        steps = sorted(acc)
        every = steps[1] - steps[0]
        res.setdefault(key, []).append((first90([acc[k] for k in steps], every), acc[steps[-1]], seqs))
    return res


def study_torch(a, spec, variant, d_k, seed):
    """One PyTorch run at the quick preset's settings: (steps to 90 %, final val acc)."""
    T, B, steps, every, lr, warm = 32, 16, 200, 20, 3e-3, 20
    torch.manual_seed(seed)
    xs, ys = dump(a.qkt, spec + "", "train", steps * B, seed + 1, T)  # seed + 1: qkt ablate's cell seed s uses seed 1 + s
    xv, yv = dump(a.qkt, spec, "val", 1024, 1, T)  # the study's fixed validation set: seed 1
    V = int(max(xs.max(), ys.max(), xv.max(), yv.max())) + 1
    model = GPT(V, T, d=2 * d_k, layers=2, heads=2, scale=variant)
    decay = [p for p in model.parameters() if p.dim() == 2]
    rest = [p for p in model.parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95))
    accs = [evaluate(model, xv, yv)[1]]
    for step in range(steps):
        t = (step - warm) / max(1, steps - warm)
        cur = lr * (step + 1) / (warm + 1) if step < warm else 0.1 * lr + 0.9 * lr * 0.5 * (1 + math.cos(math.pi * t))
        for g in opt.param_groups:
            g["lr"] = cur
        x, y = xs[step * B:(step + 1) * B], ys[step * B:(step + 1) * B]
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1), ignore_index=-1)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if (step + 1) % every == 0:
            accs.append(evaluate(model, xv, yv)[1])
    return first90(accs, every), accs[-1]


def fmt(runs):
    reached = [s for s, _ in runs if s is not None]
    med = sorted(reached)[len(reached) // 2] if reached else None
    return (f"{len(reached)}/{len(runs)} reach 90 %; steps {' '.join(str(s) if s is not None else '-' for s, _ in runs)}"
            f"{f' (median {med})' if med is not None else ''}; final acc {min(x for _, x in runs):.3f}..{max(x for _, x in runs):.3f}")


def study(a):
    specs = a.specs or [subprocess.run([a.qkt, "ablate", "--help"], capture_output=True, text=True).stdout.split("\n  task ")[1].split("|")[0].strip()]
    for spec in specs:
        t0 = time.time()
        res = {}
        if not a.torch_only:
            with tempfile.TemporaryDirectory() as out:
                res = study_qkt(a, spec, out)
        seqs = sorted({s for runs in res.values() for _, _, s in runs})
        print(f"{spec}: quick preset (batch 16, 200 steps, eval every 20; qkt's final on {seqs} fixed sequences), "
              f"{a.seeds} seeds; {time.time() - t0:.0f}s", flush=True)
        for (v, d), runs in sorted(res.items(), key=lambda kv: (kv[0][1], a.variants.split(",").index(kv[0][0]))):
            print(f"  qkt    {v:>12} d_k {d:>3}: {fmt([(s, x) for s, x, _ in runs])}", flush=True)
        if not a.torch and not a.torch_only:
            continue
        if torch is None:
            sys.exit("--torch: PyTorch is not installed (import torch failed)")
        torch.set_num_threads(1)
        for d in map(int, a.d_k.split(",")):
            for v in a.variants.split(","):
                if v not in ("sqrt_dk", "none"):
                    continue
                runs = [study_torch(a, spec, v, d, s) for s in range(a.seeds)]
                print(f"  torch  {v:>12} d_k {d:>3}: {fmt(runs)}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("qkt")
    ap.add_argument("specs", nargs="*")
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--every", type=int, default=50)
    ap.add_argument("--gpt2-init", action="store_true",
                    help="GPT-2 init (N(0, 0.02), residual projections 0.02/sqrt(2 layers)) instead of PyTorch's")
    ap.add_argument("--study", action="store_true", help="the study's main task at the quick preset's budget (see above)")
    ap.add_argument("--torch", action="store_true", help="with --study: also the PyTorch model")
    ap.add_argument("--torch-only", action="store_true", help="with --study: the PyTorch model only")
    ap.add_argument("--variants", default="sqrt_dk,none")
    ap.add_argument("--d-k", default="16,64")
    ap.add_argument("--seeds", type=int, default=5)
    a = ap.parse_intermixed_args()
    if a.study:
        return study(a)
    a.specs = a.specs or ["mqar", "induction", "sort", "reverse", "copy", "bigram"]
    if torch is None:
        sys.exit("PyTorch is not installed (import torch failed)")
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)
    for spec in a.specs:
        t0 = time.time()
        xs, ys = dump(a.qkt, spec, "train", a.steps * a.batch, a.seed)
        xv, yv = dump(a.qkt, spec, "val", 512, a.seed)
        V = int(max(xs.max(), ys.max(), xv.max(), yv.max())) + 1
        model = GPT(V, xs.shape[1], heads=a.heads)
        if a.gpt2_init:
            for name, p in model.named_parameters():
                if p.dim() == 2:
                    std = 0.02 / math.sqrt(2 * len(model.blocks)) if name.endswith(("proj.weight", "mlp.2.weight")) else 0.02
                    nn.init.normal_(p, 0.0, std)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)
        opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.0)
        first90 = None
        line = []
        for step in range(a.steps):
            lr = a.lr * min(1.0, (step + 1) / 50)  # short warmup, then constant
            for g in opt.param_groups:
                g["lr"] = lr
            x, y = xs[step * a.batch:(step + 1) * a.batch], ys[step * a.batch:(step + 1) * a.batch]
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1), ignore_index=-1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if (step + 1) % a.every == 0:
                vl, va = evaluate(model, xv, yv)
                line.append(f"{step + 1}:{vl:.2f}/{va:.2f}")
                if first90 is None and va >= 0.9:
                    first90 = step + 1
        vl, va = evaluate(model, xv, yv)
        print(f"{spec}: V={V} T={xs.shape[1]} final val loss {vl:.3f} acc {va:.3f}; "
              f"first eval with acc>=0.9: {first90}; {time.time() - t0:.0f}s")
        print("   step:loss/acc " + " ".join(line))


if __name__ == "__main__":
    cli(main)
