#!/usr/bin/python3
"""The qkt bench model and step in PyTorch (for /usr/bin/python3, Debian's torch 1.13, CPU).

nanoGPT's GPT: pre-LN blocks, fused qkv Linear, biases, GELU (tanh form), no dropout,
LM head tied to the token embedding, causal attention written out as nanoGPT does when
F.scaled_dot_product_attention is missing (torch < 2.0):
    att = softmax(mask(q k^T / sqrt(d))); y = att v.
One step = zero_grad, forward + cross-entropy, backward, AdamW (lr 1e-3, betas
(0.9, 0.999), eps 1e-8, weight decay 0.1 on the 2-D weights only), on a fresh random
batch, exactly what `qkt bench` times. Prints one line in qkt bench's format:
    torch NAME threads=N ms_per_step=X tokens_per_s=Y peak_rss_mb=Z mfu=W
(median step time over --steps after --warmup). mfu uses the same analytic FLOPs as qkt
bench and the sgemm peak given with --peak (from `qkt bench --sgemm-peak`).

Thread settings are the caller's: --threads sets torch.set_num_threads; the OpenMP
environment (OMP_WAIT_POLICY, GOMP_SPINCOUNT, ...) must be set before Python starts,
which bench/compare.sh does with the settings measured best (docs/performance.md).
"""
import argparse
import math
import os
import resource
import statistics
import sys
import time

CONFIGS = {  # V, T, B, C, L, NH
    "tiny": (65, 64, 16, 64, 2, 4),
    "small": (65, 128, 16, 128, 4, 4),
    "medium": (65, 256, 8, 384, 6, 6),
    "cell32": (32, 32, 32, 32, 2, 2),  # cells of qkt ablate --preset quick (d_k 16 and 64, 2 heads)
    "cell128": (32, 32, 32, 128, 2, 2),
}


def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def build(torch, V, T, C, L, NH):
    nn, F = torch.nn, torch.nn.functional

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(C, 3 * C)
            self.c_proj = nn.Linear(C, C)
            self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

        def forward(self, x):
            B, Tx, _ = x.size()
            q, k, v = self.c_attn(x).split(C, dim=2)
            q = q.view(B, Tx, NH, C // NH).transpose(1, 2)
            k = k.view(B, Tx, NH, C // NH).transpose(1, 2)
            v = v.view(B, Tx, NH, C // NH).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :Tx, :Tx] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, Tx, C)
            return self.c_proj(y)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(C)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(C)
            self.c_fc = nn.Linear(C, 4 * C)
            self.gelu = nn.GELU(approximate="tanh")
            self.mlp_proj = nn.Linear(4 * C, C)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp_proj(self.gelu(self.c_fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(V, C)
            self.wpe = nn.Embedding(T, C)
            self.h = nn.ModuleList([Block() for _ in range(L)])
            self.ln_f = nn.LayerNorm(C)
            self.lm_head = nn.Linear(C, V, bias=False)
            self.lm_head.weight = self.wte.weight  # tied
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight") or name.endswith("mlp_proj.weight"):
                    nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * L))
                elif p.dim() == 2:
                    nn.init.normal_(p, 0.0, 0.02)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)

        def forward(self, idx, targets):
            pos = torch.arange(idx.size(1), dtype=torch.long)
            x = self.wte(idx) + self.wpe(pos)
            for b in self.h:
                x = b(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, V), targets.view(-1))

    return GPT()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), default="small")
    for flag, what in (("vocab", "V"), ("seq", "T"), ("batch", "B"), ("n-embd", "C"), ("n-layer", "L"), ("n-head", "NH")):
        ap.add_argument(f"--{flag}", type=int, default=0, help=f"{what} (overrides the config's; the run is named custom)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--interop-threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--peak", type=float, default=0.0, help="sgemm GFLOP/s for mfu (0: mfu printed as 0)")
    ap.add_argument("--foreach", choices=["auto", "on", "off"], default="auto",
                    help="AdamW implementation (auto: torch's default, the per-tensor loop on CPU)")
    a = ap.parse_args()
    if a.steps < 1 or a.threads < 1:
        sys.exit("torch_gpt.py: --steps and --threads must be positive")

    # OpenBLAS (torch's BLAS here) reads its thread count when torch loads it and
    # torch.set_num_threads does not change it: without this a "1-thread" run still
    # runs its matmuls on every core.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(a.threads))
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    import torch

    torch.set_num_threads(a.threads)
    try:
        torch.set_num_interop_threads(a.interop_threads)
    except RuntimeError:
        pass
    base_rss = rss_mb()
    torch.manual_seed(1337)
    V, T, B, C, L, NH = CONFIGS[a.config]
    over = (a.vocab, a.seq, a.batch, a.n_embd, a.n_layer, a.n_head)
    name = "custom" if any(over) else a.config
    V, T, B, C, L, NH = (o if o else d for o, d in zip(over, (V, T, B, C, L, NH)))
    if C % NH:
        sys.exit(f"torch_gpt.py: --n-head {NH} does not divide the width {C}")
    model = build(torch, V, T, C, L, NH)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    kw = {} if a.foreach == "auto" else {"foreach": a.foreach == "on"}
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.999), eps=1e-8, **kw)
    times, cpu = [], []
    for s in range(a.warmup + a.steps):
        idx = torch.randint(0, V, (B, T))
        tgt = torch.randint(0, V, (B, T))
        t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=True)
        loss = model(idx, tgt)
        loss.backward()
        opt.step()
        t, c = time.perf_counter() - t0, time.process_time() - c0
        if not math.isfinite(loss.item()):
            sys.exit(f"torch_gpt.py: loss {loss.item()} at step {s}")
        if s >= a.warmup:
            times.append(t)
            cpu.append(c)
    med = statistics.median(times)
    flops = 6 * B * T * (12 * L * C * C + V * C) + 6 * B * L * T * T * C
    mfu = flops / med / (a.peak * 1e9) if a.peak > 0 else 0.0
    print(f"torch {name} threads={a.threads} ms_per_step={med * 1e3:.2f} tokens_per_s={B * T / med:.0f} "
          f"peak_rss_mb={rss_mb():.1f} mfu={mfu:.3f}", flush=True)
    env = " ".join(f"{k}={os.environ[k]}" for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OPENBLAS_NUM_THREADS",
                                                     "OMP_NUM_THREADS") if k in os.environ)
    print(f"torch_gpt.py: cpu_ms_per_step={statistics.median(cpu) * 1e3:.2f}; rss after import {base_rss:.1f} MB; "
          f"{env}; foreach={a.foreach}", file=sys.stderr)


if __name__ == "__main__":
    main()
