#!/usr/bin/python3
"""How many steps does a tiny GPT need to learn each qkt data task?

Independent check of the claim in docs/data.md that the default tasks are learned
by a 2-layer, d_model 64 model in a few hundred steps. The batches come from
`qkt data --dump` (the exact sequences qkt trains on); the model is a plain
PyTorch GPT-2 block stack (pre-LN, learned positions, 1/sqrt(d_k) attention).

usage: /usr/bin/python3 scripts/task_learnability.py QKT_BIN [SPEC ...]
         [--steps 600] [--batch 32] [--lr 3e-3] [--heads 4] [--seed 1]
"""
import argparse
import math
import subprocess
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def dump(qkt, spec, split, count, seed):
    out = subprocess.run([qkt, "data", "--dump", spec, "--split", split, "--count", str(count), "--seed", str(seed)],
                         check=True, capture_output=True, text=True).stdout
    a = np.array([list(map(int, l.split())) for l in out.strip().split("\n")], dtype=np.int64)
    T = a.shape[1] // 2
    return torch.from_numpy(a[:, :T]), torch.from_numpy(a[:, T:])


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.h)
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, V, T, d=64, layers=2, heads=4):
        super().__init__()
        self.tok, self.pos = nn.Embedding(V, d), nn.Embedding(T, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("qkt")
    ap.add_argument("specs", nargs="*", default=["mqar", "induction", "sort", "reverse", "copy", "bigram"])
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--every", type=int, default=50)
    ap.add_argument("--gpt2-init", action="store_true",
                    help="GPT-2 init (N(0, 0.02), residual projections 0.02/sqrt(2 layers)) instead of PyTorch's")
    a = ap.parse_args()
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
    main()
