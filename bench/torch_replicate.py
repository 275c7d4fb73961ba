#!/usr/bin/python3
"""An independent PyTorch replication of a `qkt ablate` run's large-d_k effects.

usage: bench/torch_replicate.py RUN_DIR [--qkt BIN] [--seeds K] [--jobs N] [--doc FILE] [--csv FILE]
       bench/torch_replicate.py --check [RUN_DIR] [--qkt BIN]

RUN_DIR is a finished run (OUT/NAME of `qkt ablate`). Its config.json gives the tasks, the model
(n_layer, n_head, seq_len, norm, mlp, pos, attn_temp), the training (steps, batch_size, lr, warmup,
min_lr_frac, weight_decay, beta2, grad_clip, eval_batches), the init (init_std, qk_init,
qk_init_mult), the study seed and the seeds. For the task and for task2, at the largest trained d_k
D, it trains per seed s = 0 .. K-1 the four cells of the 2x2 of scale form x start:
    sqrt_dk (train), none (train), sqrt_dk with W_q, W_k x D^(1/4) (start: the saturated start
    in the scaled form), none with W_q, W_k x D^(-1/4) (start: the unscaled form from an
    unsaturated start)
and prints, beside the run's own numbers (metrics.csv, the same seeds), the mean over seeds of
    none - sqrt_dk final val loss (5a / 5c), start sqrt_dk - sqrt_dk (9a / 9c),
    start none - sqrt_dk (9b / 9d).
With --doc FILE the table replaces the text between "<!-- torch-replication: begin -->" and
"<!-- torch-replication: end -->" of FILE.

The batches are qkt's own: a cell of seed s opens its data with seed S = config seed + s (the
same seed draws its init: experiments/ablate_cells.c, cell_trainer), and step i trains on
sequences [i B, (i + 1) B) of the train stream; the final validation, the one the verdicts read,
is the first final_eval_seqs sequences of the val stream of the study's seed (config seed), the
same for every cell. `qkt data --dump TASK --seed S --seq-len T --split train|val --count N`
prints those streams (both draw one sequence at a time from the split's own RNG stream), and
--check verifies it against `qkt train`'s losses. The weights are not qkt's: torch.manual_seed(S)
draws them by qkt's init rule (nn/init.c: N(0, init_std) for embeddings, W_v, c_fc; init_std /
sqrt(2 n_layer) for both c_proj; W_q, W_k N(0, 1/n_embd) for qk_init unit, else init_std, times
qk_init_mult and the start multiplier; LayerNorm 1, biases 0), the same draws for the four cells
of a seed, as qkt's cells share theirs. The model is tests/torch/crosscheck.py's GPT (the one the
torch_crosscheck test holds to qkt's loss and gradients), trained in float32 with torch's AdamW
(betas (0.9, beta2), eps 1e-8, weight decay on the 2-D tensors), clip_grad_norm_ and qkt's
schedule (optim/schedule.c). A step whose loss or gradient norm is not finite ends the run as
diverged (final loss NaN, left out of the pairs), as in qkt.

--check (no training run needed: mqar and recall at d_k 16; with RUN_DIR the run's task and task2
and settings at the largest d_k): for each task, for sqrt_dk and none, `qkt train` runs K steps, pausing after step J (--pause-at) and
resuming. PyTorch loads the paused checkpoint (weights and AdamW moments), and must reproduce
qkt's train loss of step J on the dumped train batch J (the batch mapping), then qkt's losses of
steps J+1 .. K and weights after step K (schedule, AdamW, clipping); the final checkpoint's
val loss on the dumped val batches must equal qkt's (the validation set and its loss), and
`qkt step` on one batch must give PyTorch's float64 loss and gradients (the model's function).
Exit 0 = passed, 1 = a mismatch, 77 = skipped (no torch for this interpreter).
"""
import argparse
import json
import math
import multiprocessing
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BEGIN, END = "<!-- torch-replication: begin -->", "<!-- torch-replication: end -->"
KINDS = ("train_sqrt_dk", "train_none", "start_sqrt_dk", "start_none")  # the 2x2's cells
EFFECTS = (  # (label, finding ids main/task2, cell a, cell b): mean over seeds of a - b
    ("unscaled - scaled (none - sqrt_dk)", "5a / 5c", "train_none", "train_sqrt_dk"),
    ("saturated start, scaled form (start sqrt_dk - sqrt_dk)", "9a / 9c", "start_sqrt_dk", "train_sqrt_dk"),
    ("unscaled form, unsaturated start (start none - sqrt_dk)", "9b / 9d", "start_none", "train_sqrt_dk"),
)


def need_torch():
    try:
        import numpy  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        return str(e)
    return None


def crosscheck_module():
    """tests/torch/crosscheck.py: the PyTorch GPT with qkt's names and variants."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "torch"))
    import crosscheck
    return crosscheck


# ------------------------------------------------------------------ safetensors (qkt checkpoints)
ST_DTYPES = {"F32": "<f4", "F64": "<f8", "I32": "<i4", "I64": "<i8", "U64": "<u8", "U8": "u1"}


def st_read(path):
    """{name: numpy array} in file order (by data offset), and the metadata."""
    import numpy as np
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = buf[8 + n:]
    out = {}
    for name, d in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b, e = d["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype=np.dtype(ST_DTYPES[d["dtype"]])).reshape(d["shape"]).copy()
    return out, meta


# ------------------------------------------------------------------ the run and its data
def fail(msg):
    sys.exit(f"torch_replicate.py: {msg}")


def run_qkt(qkt, args):
    r = subprocess.run([qkt] + args, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{qkt} {' '.join(args)} exited {r.returncode}: {r.stderr.strip()[:400]}")
    return r.stdout


def dump(qkt, spec, seed, T, split, count):
    """qkt data --dump: (count, T) inputs and targets (-1 = not counted), int64."""
    import numpy as np
    out = run_qkt(qkt, ["data", "--dump", spec, "--seed", str(seed), "--seq-len", str(T), "--split", split,
                        "--count", str(count)])
    a = np.array(out.split(), dtype=np.int64)
    if a.size != count * 2 * T:
        fail(f"qkt data --dump {spec} --split {split}: {a.size} integers, expected {count} x 2 x {T}")
    a = a.reshape(count, 2 * T)
    return a[:, :T].copy(), a[:, T:].copy()


def vocab_of(qkt, spec, T):
    m = re.search(r"^vocab (\d+);", run_qkt(qkt, ["data", "--show", spec, "--seq-len", str(T)]), re.M)
    if not m:
        fail(f"qkt data --show {spec}: no 'vocab N;' line")
    return int(m.group(1))


def load_run(run):
    path = os.path.join(run, "config.json")
    if not os.path.isfile(path):
        fail(f"{run}: no config.json (expected a run directory OUT/NAME of qkt ablate)")
    c = json.load(open(path))
    need = ("task", "seq_len", "n_layer", "n_head", "batch_size", "steps", "eval_batches", "warmup", "lr", "min_lr_frac",
            "weight_decay", "grad_clip", "beta2", "attn_temp", "qk_init_mult", "init_std", "seeds", "seed", "d_k")
    miss = [k for k in need if k not in c]
    if miss:
        fail(f"{path}: missing {', '.join(miss)}")
    for k in ("norm", "mlp", "pos"):
        c.setdefault(k, {"norm": "layernorm", "mlp": "gelu", "pos": "learned"}[k])
    c.setdefault("qk_init", "gpt2")
    c["seed"] = int(c["seed"])
    return c


def model_config(c, V, d_k, variant):
    """crosscheck.GPT's config dict (bias and ln_eps: qkt's defaults, which the study keeps)."""
    return dict(vocab_size=V, block_size=c["seq_len"], n_layer=c["n_layer"], n_head=c["n_head"],
                n_embd=c["n_head"] * d_k, attn_scale=variant, attn_temp=float(c["attn_temp"]), bias=True, ln_eps=1e-5,
                norm=c["norm"], mlp=c["mlp"], pos=c["pos"])


def qkt_lr(step, lr, min_lr, warmup, total):
    """optim/schedule.c: warmup lr (s + 1) / (W + 1), then cosine from the peak at W to min_lr at total - 1."""
    if step < warmup:
        return lr * (step + 1) / (warmup + 1)
    D = total - 1 - warmup
    p = (step - warmup) / D if D > 0 else (1.0 if step > warmup else 0.0)
    return min_lr if p >= 1.0 else min_lr + 0.5 * (1.0 + math.cos(math.pi * p)) * (lr - min_lr)


def schedule_of(c):
    """The cell's schedule (cell_trainer): decay over its own steps, warmup only if shorter than them."""
    steps = int(c["steps"])
    warm = int(c["warmup"]) if int(c["warmup"]) < steps else 0
    return dict(lr=float(c["lr"]), min_lr=float(c["lr"]) * float(c["min_lr_frac"]), warmup=warm, total=steps)


# ------------------------------------------------------------------ one training cell (a worker process)
def init_weights(torch, model, c, init_std, qk_init, mult):
    """qkt's init rule (nn/init.c) with torch's RNG, tensors in the model's order."""
    std = init_std if init_std > 0 else 0.02
    L, C = c["n_layer"], c["n_embd"]
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2 and name.endswith("c_proj.weight"):
                p.normal_(0.0, std / math.sqrt(2.0 * L))
            elif p.dim() == 2 and name.endswith("c_attn.weight"):
                qk_std = 1.0 / math.sqrt(C) if qk_init == "unit" else std
                p[:2 * C].normal_(0.0, qk_std * mult)
                p[2 * C:].normal_(0.0, std)
            elif p.dim() == 2:
                p.normal_(0.0, std)
            elif name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name.endswith("ln_f.weight"):
                p.fill_(1.0)
            elif name.endswith(".bias"):
                p.zero_()
            # other 1-D tensors are a variant's own, initialised by crosscheck.GPT as qkt does


def make_opt(torch, model, weight_decay, beta2):
    """AdamW as qkt train's: decay on the 2-D tensors only; the lr is set at every step."""
    params = list(model.parameters())
    return torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
                              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                             lr=0.0, betas=(0.9, beta2), eps=1e-8)


def train_step(torch, model, opt, x, y, lr, clip):
    """One qkt_trainer_step: loss, backward, clip, AdamW at lr. Returns (loss, finite)."""
    opt.zero_grad(set_to_none=True)
    loss = model(x, y)
    loss.backward()
    params = [p for p in model.parameters() if p.grad is not None]
    if clip > 0:
        norm = torch.nn.utils.clip_grad_norm_(params, clip).item()
    else:
        norm = torch.norm(torch.stack([p.grad.norm() for p in params])).item()
    lv = loss.item()
    if not (math.isfinite(lv) and math.isfinite(norm)):
        return lv, False
    for g in opt.param_groups:
        g["lr"] = lr
    opt.step()
    return lv, True


def val_loss(torch, model, vx, vy):
    """Mean cross-entropy over every counted target of the validation set (qkt_trainer_eval:
    each batch's mean times its count, summed, over the total count)."""
    model.eval()
    with torch.no_grad():
        tot, n = 0.0, 0
        for i in range(0, vx.shape[0], 64):
            k = int((vy[i:i + 64] != -1).sum())
            if k:
                tot += model(vx[i:i + 64], vy[i:i + 64]).item() * k
                n += k
    model.train()
    return tot / n if n else float("nan")


def run_cell(job):
    """Trains one cell; returns (key, final val loss or NaN, diverged step or -1, CPU seconds)."""
    import torch
    torch.set_num_threads(1)
    cc = crosscheck_module()
    t0 = time.process_time()
    c, h = job["model"], job["hyper"]
    torch.manual_seed(job["torch_seed"])
    model = cc.GPT(c)
    init_weights(torch, model, c, h["init_std"], h["qk_init"], job["mult"])
    opt = make_opt(torch, model, h["weight_decay"], h["beta2"])
    tx, ty = torch.from_numpy(job["train"][0]), torch.from_numpy(job["train"][1])
    vx, vy = torch.from_numpy(job["val"][0]), torch.from_numpy(job["val"][1])
    B, s_ = h["batch_size"], h["sched"]
    diverged = -1
    for s in range(s_["total"]):
        lr = qkt_lr(s, s_["lr"], s_["min_lr"], s_["warmup"], s_["total"])
        _, ok = train_step(torch, model, opt, tx[s * B:(s + 1) * B], ty[s * B:(s + 1) * B], lr, h["grad_clip"])
        if not ok:
            diverged = s
            break
    final = val_loss(torch, model, vx, vy) if diverged < 0 else float("nan")
    return job["key"], final, diverged, time.process_time() - t0


# ------------------------------------------------------------------ qkt's numbers
def qkt_finals(run):
    """{(experiment, variant, d_k, seed): final val loss} from RUN/metrics.csv (NaN: diverged)."""
    import csv
    path = os.path.join(run, "metrics.csv")
    if not os.path.isfile(path):
        fail(f"{run}: no metrics.csv (is the run finished?)")
    last, div = {}, {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["experiment"] not in ("train", "train2", "start", "start2"):
                continue
            k = (r["experiment"], r["variant"], int(r["d_k"]), int(r["seed"]))
            if r["metric"] == "val_loss":
                st = int(r["step"])
                if k not in last or st > last[k][0]:
                    last[k] = (st, float(r["value"]))
            elif r["metric"] == "diverged_step" and float(r["value"]) >= 0:
                div[k] = True
    return {k: (float("nan") if div.get(k) else v) for k, (_, v) in last.items()}


def qkt_key(task_i, kind, d_k, seed):
    exp, var = kind.split("_", 1)
    return (exp + ("2" if task_i else ""), var, d_k, seed)


# ------------------------------------------------------------------ statistics and the table
def paired(a, b):
    """Mean of a - b over the seeds where both are finite, its 95 % t interval, n, and how many > 0."""
    d = [x - y for x, y in zip(a, b) if math.isfinite(x) and math.isfinite(y)]
    n = len(d)
    if n == 0:
        return None
    m = sum(d) / n
    if n < 2:
        return m, float("nan"), n, sum(1 for x in d if x > 0)
    sd = math.sqrt(sum((x - m) ** 2 for x in d) / (n - 1))
    try:
        from scipy.stats import t as student
        q = student.ppf(0.975, n - 1)
    except ImportError:
        q = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36, 9: 2.31, 10: 2.26}.get(n, 1.96 if n > 30 else 2.2)
    return m, q * sd / math.sqrt(n), n, sum(1 for x in d if x > 0)


def fmt(p, ci=True):
    if p is None:
        return "-"
    m, hw, n, pos = p
    s = f"{m:+.3f}"
    if ci and math.isfinite(hw):
        s += f" ± {hw:.3f}"
    return s + f" ({pos}/{n} > 0)" if ci else s


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def replicate(a):
    import torch
    c = load_run(a.run)
    if not os.path.isfile(os.path.join(a.run, "metrics.csv")):
        fail(f"{a.run}: no metrics.csv (is the run finished?)")
    if a.doc and not all(m in open(a.doc).read() for m in (BEGIN, END)):  # before minutes of training
        fail(f"{a.doc} has no '{BEGIN}' ... '{END}' block")
    seeds = int(c["seeds"]) if a.seeds is None else a.seeds
    if not 1 <= seeds <= int(c["seeds"]):
        fail(f"--seeds {a.seeds}: expected 1 .. the run's {c['seeds']}")
    tasks = [(0, c["task"], c["d_k"], c.get("start_d_k", 0))]
    if c.get("task2") and c["task2"] != "none" and c.get("task2_d_k"):
        tasks.append((1, c["task2"], c["task2_d_k"], c.get("task2_start_d_k", 0)))
    T, B = int(c["seq_len"]), int(c["batch_size"])
    hyper = dict(init_std=float(c["init_std"]), qk_init=c["qk_init"], weight_decay=float(c["weight_decay"]),
                 beta2=float(c["beta2"]), grad_clip=float(c["grad_clip"]), batch_size=B, sched=schedule_of(c))
    steps, E = int(c["steps"]), int(c["eval_batches"])
    # every cell's final validation: the first final_eval_seqs sequences of the study seed's val
    # stream (experiments/ablate_cells.c); a config.json without the key: eval_batches x B
    FE, vals = int(c.get("final_eval_seqs", E * B)), {}
    t_start = time.perf_counter()
    jobs = []
    for ti, spec, dks, _ in tasks:
        D = max(dks)
        V = vocab_of(a.qkt, spec, T)
        for s in range(seeds):
            S = c["seed"] + s
            train = dump(a.qkt, spec, S, T, "train", steps * B)
            if spec not in vals:
                vals[spec] = dump(a.qkt, spec, c["seed"], T, "val", FE)
            val = vals[spec]
            for kind in KINDS:
                variant = kind.split("_", 1)[1]
                mult = float(c["qk_init_mult"]) * ((D ** 0.25 if variant == "sqrt_dk" else D ** -0.25) if kind.startswith("start") else 1.0)
                jobs.append(dict(key=(ti, kind, D, s), model=model_config(c, V, D, variant), hyper=hyper, mult=mult,
                                 torch_seed=S, train=train, val=val))
    t_data = time.perf_counter() - t_start
    print(f"torch_replicate.py: {len(jobs)} cells ({len(tasks)} tasks x 4 cells x {seeds} seeds x {steps} steps), "
          f"{a.jobs} at a time; batches dumped in {t_data:.1f} s", flush=True)
    res, cpu = {}, 0.0
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(a.jobs) as pool:
        for i, (key, final, div, sec) in enumerate(pool.imap_unordered(run_cell, jobs)):
            res[key] = (final, div)
            cpu += sec
            if (i + 1) % 8 == 0 or i + 1 == len(jobs):
                print(f"  {i + 1}/{len(jobs)} cells, {time.perf_counter() - t_start:.0f} s", flush=True)
    wall = time.perf_counter() - t_start
    q = qkt_finals(a.run)
    rows, csv_rows = [], []
    for ti, spec, dks, start_dk in tasks:
        D = max(dks)
        tv = {k: [res[(ti, k, D, s)][0] for s in range(seeds)] for k in KINDS}
        qv = {k: [q.get(qkt_key(ti, k, D, s), float("nan")) for s in range(seeds)] for k in KINDS}
        has_start = start_dk == D
        for label, ids, ka, kb in EFFECTS:
            fid = ids.split(" / ")[ti]
            qp = paired(qv[ka], qv[kb]) if (has_start or not ka.startswith("start")) else None
            rows.append(f"| {fid} | `{spec}` | {D} | {label} | {fmt(paired(tv[ka], tv[kb]))} | "
                        f"{fmt(qp) if qp else 'not in this run'} |")
        for k in KINDS:
            for s in range(seeds):
                csv_rows.append(f"{spec},{k},{D},{s},{tv[k][s]:.6f},{qv[k][s]:.6f},{res[(ti, k, D, s)][1]}")
        ndiv = sum(1 for k in KINDS for s in range(seeds) if res[(ti, k, D, s)][1] >= 0)
        if ndiv:
            rows.append(f"| | `{spec}` | {D} | PyTorch runs diverged (left out of the pairs) | {ndiv} | |")
    cmd = "bench/torch_replicate.py " + " ".join(sys.argv[1:])
    tv_ = torch.__version__
    head = ["| # | task | d_k | final val loss, mean over seeds of | PyTorch (95 % t interval; seeds > 0) | qkt, same seeds |",
            "|---|---|---|---|---|---|"]
    foot = ["",
            f"{seeds} seeds (data seeds {c['seed']}..{c['seed'] + seeds - 1}: the run's batches via `qkt data --dump`; "
            f"PyTorch's own init draws, by qkt's init rule), {steps} steps of batch {B}. Run: `{c.get('command', a.run)}`; "
            f"replication: `{cmd}`, torch {tv_}, {len(jobs)} cells in {wall:.0f} s wall ({cpu:.0f} CPU s of training) on "
            f"{os.cpu_count()} cores ({cpu_name()}, load average {os.getloadavg()[0]:.1f} at the end), {a.jobs} processes "
            f"with one thread each."]
    table = "\n".join(head + rows + foot)
    print(table)
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("task,cell,d_k,seed,torch_final_val_loss,qkt_final_val_loss,torch_diverged_step\n" + "\n".join(csv_rows) + "\n")
    if a.doc:
        text = open(a.doc).read()
        if BEGIN not in text or END not in text:
            fail(f"{a.doc} lost its '{BEGIN}' ... '{END}' block while the cells trained")
        i, j = text.index(BEGIN) + len(BEGIN), text.index(END)
        open(a.doc, "w").write(text[:i] + "\n" + table + "\n" + text[j:])
        print(f"torch_replicate.py: wrote the table into {a.doc}")
    print(f"torch_replicate.py: {len(jobs)} cells, {wall:.0f} s wall (dumping batches {t_data:.0f} s), "
          f"{cpu:.0f} CPU s of training ({cpu / len(jobs):.1f} per cell)")
    return 0


# ------------------------------------------------------------------ --check
CHECK_DEFAULT = dict(task="mqar", task2="recall", seq_len=32, n_layer=2, n_head=2, d_k=[16], batch_size=8, steps=8, eval_batches=2,
                     warmup=3, lr=0.003, min_lr_frac=0.1, weight_decay=0.1, grad_clip=1.0, beta2=0.95, attn_temp=1.0,
                     qk_init_mult=1.0, seed=1, norm="layernorm", mlp="gelu", pos="learned")


def read_log(path):
    import csv
    return {int(r["step"]): r for r in csv.DictReader(open(path))}


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def check_variant(torch, cc, qkt, c, variant, tmp):
    """Returns a list of failure lines (empty: passed); prints one line per comparison."""
    import numpy as np
    bad = []
    tag = f"{c['task']} {variant}"
    D, T, B, E = max(c["d_k"]), int(c["seq_len"]), int(c["batch_size"]), int(c["eval_batches"])
    K, J = 8, 4
    warm = min(int(c["warmup"]), 3)
    lr, min_lr, S = float(c["lr"]), float(c["lr"]) * float(c["min_lr_frac"]), int(c["seed"])
    V = vocab_of(qkt, c["task"], T)
    out = os.path.join(tmp, f"{c['task']}.{variant}")
    flags = ["--data", c["task"], "--n-layer", str(c["n_layer"]), "--n-head", str(c["n_head"]),
             "--n-embd", str(c["n_head"] * D), "--block-size", str(T), "--attn-scale", variant,
             "--attn-temp", repr(float(c["attn_temp"])), "--norm", c["norm"], "--mlp", c["mlp"], "--pos", c["pos"],
             "--batch-size", str(B), "--steps", str(K), "--lr", repr(lr), "--min-lr", repr(min_lr),
             "--warmup-steps", str(warm), "--lr-decay-steps", str(K), "--weight-decay", repr(float(c["weight_decay"])),
             "--beta2", repr(float(c["beta2"])), "--grad-clip", repr(float(c["grad_clip"])), "--seed", str(S),
             "--eval-every", "0", "--eval-batches", str(E), "--threads", "1", "--log-every", "1000", "--out", out]
    run_qkt(qkt, ["train"] + flags + ["--pause-at", str(J)])
    ckJ = out + f".step{J}.safetensors"
    shutil.copy(os.path.join(out, "ckpt.safetensors"), ckJ)
    run_qkt(qkt, ["train", "--resume", out, "--threads", "1", "--log-every", "1000"])
    log = read_log(os.path.join(out, "log.csv"))
    mc = model_config(c, V, D, variant)
    model = cc.GPT(mc)
    wJ, _ = st_read(ckJ)
    names = [n for n, _ in model.named_parameters()]
    store = [n for n in wJ if n in dict(model.state_dict())]  # the parameter store's order (file order)
    with torch.no_grad():
        for n, p in model.state_dict().items():
            p.copy_(torch.from_numpy(wJ[n].astype(np.float32)))
    opt = make_opt(torch, model, float(c["weight_decay"]), float(c["beta2"]))
    off, pos = 0, {}
    for n in store:
        pos[n] = (off, wJ[n].size)
        off += wJ[n].size
    m, v, st = wJ["optim.m"].astype(np.float32), wJ["optim.v"].astype(np.float32), float(wJ["optim.step"])
    if m.size != off:
        bad.append(f"{tag}: optim.m has {m.size} values, the model's tensors {off}")
        return bad
    params = dict(model.named_parameters())
    for n in names:
        o, k = pos[n]
        p = params[n]
        opt.state[p] = {"step": torch.tensor(st), "exp_avg": torch.from_numpy(m[o:o + k].reshape(p.shape).copy()),
                        "exp_avg_sq": torch.from_numpy(v[o:o + k].reshape(p.shape).copy())}
    tx, ty = (torch.from_numpy(t) for t in dump(qkt, c["task"], S, T, "train", K * B))
    vx, vy = (torch.from_numpy(t) for t in dump(qkt, c["task"], S, T, "val", E * B))
    worst = 0.0
    for s in range(J, K):  # log.csv row s + 1 is the step of index s
        lq = float(log[s + 1]["loss"])
        lt, _ = train_step(torch, model, opt, tx[s * B:(s + 1) * B], ty[s * B:(s + 1) * B],
                           qkt_lr(s, lr, min_lr, warm, K), float(c["grad_clip"]))
        r = rel(lt, lq)
        worst = max(worst, r)
        tol = 1e-5 if s == J else 1e-4
        if not r <= tol:
            bad.append(f"{tag}: train loss of step {s + 1}: qkt {lq:.8g}, torch {lt:.8g} (rel {r:.1e} > {tol:g})"
                       + (" -- the dumped train batch is not the one qkt trained on" if s == J else ""))
    print(f"{'ok  ' if not bad else 'FAIL'} {tag:16s} d_k {D}: train losses of steps {J + 1}..{K} from qkt's step-{J} "
          f"checkpoint and AdamW state, on the dumped train batches: max rel diff {worst:.1e}")
    wK, _ = st_read(os.path.join(out, "ckpt.safetensors"))
    # |w_torch - w_qkt| over |w_qkt(K) - w_qkt(J)|, every tensor together: float32 rounding leaves
    # ~1e-4 of the update (Adam's m / sqrt(v) amplifies it where v is tiny); a wrong schedule, beta,
    # bias correction or a missing weight decay (~1 % of the update here) would not fit
    dif = math.sqrt(sum(float(((params[n].detach().double().numpy() - wK[n]) ** 2).sum()) for n in names))
    upd = math.sqrt(sum(float(((wK[n].astype(np.float64) - wJ[n]) ** 2).sum()) for n in names))
    werr = dif / max(upd, 1e-30)
    ok = werr <= 1e-3
    if not ok:
        bad.append(f"{tag}: weights after step {K}: |torch - qkt| = {werr:.1e} of qkt's update over steps {J + 1}..{K} (> 1e-3)")
    print(f"{'ok  ' if ok else 'FAIL'} {tag:16s} d_k {D}: weights after step {K} (schedule, clipping, AdamW): "
          f"|torch - qkt| = {werr:.1e} of the update over steps {J + 1}..{K}")
    m64 = cc.GPT(mc).double()
    with torch.no_grad():
        for n, p in m64.state_dict().items():
            p.copy_(torch.from_numpy(wK[n].astype(np.float64)))
    vq = float(log[K]["val_loss"])
    vt = val_loss(torch, m64, vx, vy)
    r = rel(vt, vq)
    ok = r <= 1e-5
    if not ok:
        bad.append(f"{tag}: val loss after step {K}: qkt {vq:.8g}, torch {vt:.8g} (rel {r:.1e} > 1e-5) -- "
                   "the dumped val batches are not qkt's validation set")
    print(f"{'ok  ' if ok else 'FAIL'} {tag:16s} d_k {D}: val loss after step {K} on the dumped val batches "
          f"({E} x {B} sequences): qkt {vq:.6f}, torch {vt:.6f} (rel {r:.1e})")
    bt, gout = out + ".batch.safetensors", out + ".grads.safetensors"
    cc.st_write(bt, [("idx", vx[:B].numpy().astype(np.int32)), ("targets", vy[:B].numpy().astype(np.int32))], {})
    run_qkt(qkt, ["step", "--ckpt", os.path.join(out, "ckpt.safetensors"), "--batch", bt, "--out", gout, "--threads", "1"])
    g, _ = st_read(gout)
    loss = m64(vx[:B], vy[:B])
    loss.backward()
    r = rel(float(g["loss"].reshape(-1)[0]), loss.item())
    gerr = max(float(np.abs(g[n] - p.grad.numpy()).max() / max(np.abs(p.grad.numpy()).max(), 1e-30))
               for n, p in m64.named_parameters())
    ok = r <= 1e-5 and gerr <= 1e-4
    if not ok:
        bad.append(f"{tag}: qkt step on one batch: loss rel diff {r:.1e} (tol 1e-5), gradient {gerr:.1e} (tol 1e-4)")
    print(f"{'ok  ' if ok else 'FAIL'} {tag:16s} d_k {D}: qkt step on one batch against torch float64: loss rel diff "
          f"{r:.1e}, gradients max rel diff {gerr:.1e}")
    return bad


def check(a):
    import torch
    torch.set_num_threads(1)
    cc = crosscheck_module()
    c = load_run(a.run) if a.run else dict(CHECK_DEFAULT)
    t0 = time.perf_counter()
    bad = []
    tasks = [c["task"]] + ([c["task2"]] if c.get("task2") and c["task2"] != "none" else [])
    with tempfile.TemporaryDirectory(prefix="qkt-torch-replicate-") as tmp:
        for task in tasks:
            for variant in ("sqrt_dk", "none"):
                bad += check_variant(torch, cc, a.qkt, dict(c, task=task), variant, tmp)
    for b in bad:
        print("FAIL " + b)
    print(f"torch_replicate.py --check: {'passed' if not bad else f'{len(bad)} mismatches'} "
          f"({', '.join(tasks)}, d_k {max(c['d_k'])}, {time.perf_counter() - t0:.1f} s)")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", nargs="?", help="a finished qkt ablate run directory (OUT/NAME)")
    ap.add_argument("--qkt", default=os.path.join(ROOT, "build", "qkt"), help="the qkt binary (default build/qkt)")
    ap.add_argument("--seeds", type=int, default=None, help="train seeds 0 .. K-1 (default: all the run's)")
    ap.add_argument("--jobs", type=int, default=2, help="cells trained side by side, one thread each (default 2)")
    ap.add_argument("--doc", help="write the table between the torch-replication markers of this file")
    ap.add_argument("--csv", help="also write every cell's final val loss (PyTorch and qkt) to this file")
    ap.add_argument("--check", action="store_true", help="check the PyTorch model, data and training against qkt")
    a = ap.parse_args()
    missing = need_torch()
    if missing:
        if a.check:
            print(f"SKIP: torch_replicate.py --check needs torch and numpy for {sys.executable} ({missing})")
            return 77
        fail(f"needs torch and numpy for {sys.executable} ({missing})")
    if not (os.path.isfile(a.qkt) and os.access(a.qkt, os.X_OK)):
        fail(f"--qkt {a.qkt}: not an executable file")
    if a.jobs < 1:
        fail(f"--jobs {a.jobs}: expected a positive integer")
    if a.check:
        return check(a)
    if not a.run:
        fail("expected a run directory (or --check)")
    return replicate(a)


if __name__ == "__main__":
    sys.exit(main())
