#!/usr/bin/python3
"""One training cell of `qkt ablate --preset quick` in PyTorch (Debian's torch 1.13, CPU), timed.

The cell: mqar (vocab 32, 4 key-value pairs, 12 queries in 32 positions; loss and accuracy
on the answer positions only), the bench model (bench/torch_gpt.py: nanoGPT's GPT, 2 layers,
2 heads, width 2 d_k, T 32) with the study's init (std 0.08), batch 16, 200 AdamW steps
(lr 3e-3, betas (0.9, 0.95), weight decay 0.1 on 2-D weights, 20 warmup steps then cosine to
0.1 lr, gradient norm clipped at 1), validation on the same 4 batches every 20 steps and
at the end: the quick preset's cell (--batch, --steps, --eval-every change it; the earlier
preset had batch 32, 600 steps, every 25). The qkt side is `qkt train` with the same settings (bench/compare_cell.sh runs
both); its cell also measures attention entropies at each validation, which this does not.
Prints one line:
    torch cell d_k=16 threads=1 steps=200 train_s=X ms_per_step=Y final_val_loss=Z final_val_acc=W
train_s is the wall time of the loop (steps and validations), without Python and torch's
start-up; ms_per_step = train_s / steps.
"""
import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def mqar_batch(torch, gen, B, T=32, V=32, N=4, Q=12):
    """qkt's mqar layout: pairs (k, v) first, then Q queries (k, v) in distinct slots; the
    target of a query's key position is its value, every other target ignored (-100)."""
    nk = (V - 1) // 2
    nv = V - 1 - nk
    S = (T + 1 - 2 * N) // 2
    R = (Q + N - 1) // N
    seq = torch.zeros(B, T + 1, dtype=torch.long)
    ans = torch.zeros(B, T + 1, dtype=torch.bool)
    for b in range(B):
        keys = 1 + torch.randperm(nk, generator=gen)[:N]
        vals = 1 + nk + torch.randperm(nv, generator=gen)[:N]
        seq[b, 0:2 * N:2], seq[b, 1:2 * N:2] = keys, vals
        which = torch.randperm(R * N, generator=gen)[:Q] % N
        slots = torch.sort(torch.randperm(S, generator=gen)[:Q]).values
        pos = 2 * N + 2 * slots
        seq[b, pos], seq[b, pos + 1] = keys[which], vals[which]
        ans[b, pos + 1] = True
    x, y = seq[:, :T], seq[:, 1:].clone()
    y[~ans[:, 1:]] = -100
    return x, y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d-k", type=int, default=16, help="head width (the model is 2 heads of it)")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--eval-every", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(a.threads))
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    import torch
    import torch_gpt

    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    V, T, B, L, NH = 32, 32, a.batch, 2, 2
    C = NH * a.d_k
    model = torch_gpt.build(torch, V, T, C, L, NH)
    for name, p in model.named_parameters():  # the study's init: N(0, 0.08), zero biases
        if p.dim() == 2:
            torch.nn.init.normal_(p, 0.0, 0.08)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    lr, min_lr, warmup = 3e-3, 3e-4, 20
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.95), eps=1e-8)
    gen = torch.Generator().manual_seed(1)
    val = [mqar_batch(torch, gen, B) for _ in range(4)]
    train = [mqar_batch(torch, gen, B) for _ in range(a.steps)]  # drawn before the timer (qkt draws inside)
    F = torch.nn.functional

    def logits_of(x):
        h = model.wte(x) + model.wpe(torch.arange(T))
        for blk in model.h:
            h = blk(h)
        return model.lm_head(model.ln_f(h))

    def evaluate():
        model.eval()
        with torch.no_grad():
            loss = acc = n = 0.0
            for x, y in val:
                lg = logits_of(x)
                m = y != -100
                loss += F.cross_entropy(lg[m], y[m], reduction="sum").item()
                acc += (lg[m].argmax(-1) == y[m]).sum().item()
                n += m.sum().item()
        model.train()
        return loss / n, acc / n

    t0 = time.perf_counter()
    for s in range(a.steps + 1):
        if s % a.eval_every == 0 or s == a.steps:
            vl, va = evaluate()
        if s == a.steps:
            break
        it = s + 1
        cur = lr * it / warmup if it <= warmup else \
            min_lr + 0.5 * (lr - min_lr) * (1 + math.cos(math.pi * (it - warmup) / max(1, a.steps - warmup)))
        for g in opt.param_groups:
            g["lr"] = cur
        x, y = train[s]
        opt.zero_grad(set_to_none=True)
        loss = model(x, y)  # mean over the answer positions (ignore_index -100)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    dt = time.perf_counter() - t0
    print(f"torch cell d_k={a.d_k} threads={a.threads} steps={a.steps} train_s={dt:.3f} "
          f"ms_per_step={dt / a.steps * 1e3:.2f} final_val_loss={vl:.4f} final_val_acc={va:.3f}", flush=True)


if __name__ == "__main__":
    main()
