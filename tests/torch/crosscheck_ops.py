#!/usr/bin/python3
"""Cross-check every autograd op against PyTorch, op by op.

qkt_opdump (tests/torch/opdump.c) runs each case of the gradient-check table
(tests/autograd/op_cases.h) once: random inputs, the forward, and the backward of a random
output grad. This script evaluates the same expression in PyTorch float64 on the same inputs
and output grad and compares the output and every input's gradient, per tensor, by

    max |qkt - torch| <= tol * max(max |torch|, 1e-30)

with tol 1e-12 for the float64 build (observed <= 1e-15) and 1e-5 for the main (float32)
build (observed <= 3e-7). A case whose name has no PyTorch reference here and is not in
SKIPPED fails the check, and so does an op of the op table that no cross-checked case runs
(but those in NOT_HERE), so a new op cannot arrive without its cross-check.

Usage: crosscheck_ops.py QKT_OPDUMP_F64 [QKT_OPDUMP_MAIN ...]. Exit 0 = all passed,
1 = a mismatch, 77 = skipped (no torch for this interpreter).
"""
import math
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIP: the op cross-check needs torch and numpy for {sys.executable} ({e})")
    sys.exit(77)

# Cases checked elsewhere: the fused attention (and a chain through it) against PyTorch's
# attention in the GPT cross-check (crosscheck.py), and dropout, whose mask is qkt's RNG.
SKIPPED = {"dropout p=0.3": "the mask is drawn from qkt's RNG",
           "chain with fresh grads": "runs the fused attention: crosscheck.py checks it in the GPT"}
SKIP_PREFIX = ("attention",)  # likewise
NOT_HERE = {"dropout", "attention", "custom"}  # ops this script does not need to see run


# ------------------------------------------------------------------ the dump
def read_dump(path):
    with open(path, "rb") as f:
        buf = f.read()
    pos = 0

    def i32():
        nonlocal pos
        (v,) = struct.unpack_from("<i", buf, pos)
        pos += 4
        return v

    def s():
        nonlocal pos
        n = i32()
        v = buf[pos:pos + n].decode()
        pos += n
        return v

    def reals(n):
        nonlocal pos
        a = np.frombuffer(buf, dtype="<f8", count=n, offset=pos).copy()
        pos += 8 * n
        return a

    def tensor():
        nd = i32()
        shape = tuple(i32() for _ in range(nd))
        return reals(int(np.prod(shape, dtype=np.int64))).reshape(shape)

    assert buf[:8] == b"QKTOPS1\n", f"{path}: not a qkt_opdump file"
    pos = 8
    real_size = i32()
    op_names = [s() for _ in range(i32())]
    cases = []
    for _ in range(i32()):
        name, flags, ops = s(), i32(), s()
        xs = [tensor() for _ in range(i32())]
        y = tensor()
        seed = reals(y.size).reshape(y.shape)
        grads = [reals(x.size).reshape(x.shape) for x in xs]
        cases.append(dict(name=name, flags=flags, ops=[o for o in ops.split(",") if o], xs=xs, y=y, seed=seed,
                          grads=grads))
    return real_size, op_names, cases


# ------------------------------------------------------------------ references (op_cases.h, in PyTorch)
def ref_softmax(x, flags):
    if flags == 2:  # additive mask (5, 7), row 3 fully blocked: that row is all zeros, no grad
        i = torch.arange(35, dtype=torch.float64)
        m = torch.where((torch.arange(35) % 4) == 1, torch.tensor(-math.inf, dtype=torch.float64),
                        0.1 * (i % 5) - 0.2).view(5, 7)
        m[3, :] = -math.inf
        z = 0.8 * x + m
        blocked = torch.isinf(m).all(-1, keepdim=True)
        return F.softmax(torch.where(blocked, torch.zeros_like(z), z), -1) * (~blocked)
    if flags == 1:  # causal on the last two dims: query i sees keys j <= i + (Tk - Tq)
        Tq, Tk = x.shape[-2:]
        keep = torch.arange(Tk).view(1, Tk) <= torch.arange(Tq).view(Tq, 1) + (Tk - Tq)
        return F.softmax((1.3 * x).masked_fill(~keep, -math.inf), -1)
    return F.softmax(0.7 * x, -1)


CE_TARGETS = torch.tensor([3, -1, 0, 6, 6, -1, 1, 2, -1, 5, 4, 0])
EMB_IDX = torch.tensor([0, 6, 3, 3, 1, 6, 6, 2, 0, 5, 4, 3])
PERMS = [(0, 2, 1, 3), (3, 1, 0, 2), (2, 0, 1, 3)]
MF_MASK = torch.tensor([1, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1], dtype=torch.bool).view(3, 5)
ISEL_IDX = torch.tensor([4, 0, 2, 2, 4, 1])


def ref_unary(x, flags):
    return [lambda: x.exp(), lambda: x.abs().log(), lambda: x.abs().sqrt(), lambda: x.abs().rsqrt(),
            lambda: x.pow(3.0), lambda: x.abs().pow(-1.5), lambda: x.pow(2.0), lambda: torch.sigmoid(3 * x),
            lambda: torch.tanh(1.5 * x), lambda: F.silu(2 * x), lambda: x.abs(),
            lambda: x.clamp(-0.5, 0.8)][flags]()


def ref_where(xs, flags):
    if flags == 2:
        return xs[0].masked_fill(MF_MASK, -2.5)
    cond = (torch.arange(14) % 3 != 0).view(2, 1, 7)  # 0, 1, -2, ...: nonzero = true
    return torch.where(cond, xs[0], torch.tensor(0.25, dtype=torch.float64) if flags == 1 else xs[1])


def ref_reduce(x, flags):
    op, axis, keep = flags & 3, ((flags >> 2) & 15) - 4, bool(flags & 64)
    if op == 0:
        return x.sum(axis, keepdim=keep)
    if op == 1:
        return x.mean(axis, keepdim=keep)
    if op == 2:
        return x.max(axis, keepdim=keep).values
    return torch.logsumexp(x, axis, keepdim=keep)


def ref_reduce_chain(x):
    m = x.max(1, keepdim=True).values
    lse = torch.logsumexp(x - m, -1)
    return lse.mean(0) * x.sum(3)


def ref_narrow(x, flags):
    return [lambda: x.narrow(1, 1, 3), lambda: x.narrow(-1, 6, 1), lambda: x.narrow(0, 2, 2)][flags]()


def ref_gather(x, flags):
    axis = 1 if flags == 0 else 0
    shape = (2, 6, 5) if flags == 0 else (5, 2)
    n = x.shape[axis]
    idx = torch.tensor([(i * 7 + 3) % n for i in range(int(np.prod(shape)))]).view(shape)
    return torch.gather(x, axis, idx)


def ref_concat_axis(xs, flags):
    if flags == 2:
        return torch.cat([xs[0], xs[1], xs[0], xs[2], xs[1], xs[0]], 1)
    return torch.cat(xs, flags)


def ref_split(x):
    p0, p1, p2 = x.split(11, -1)
    return torch.cat([p2 * p0 + p1, p1], -1)


def ref_rmsnorm(xs, f):
    x = xs[0]
    y = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5)
    return y if f else y * xs[1]


def ref_rope(x, n_head, base=100.0):
    # rotate-half pairing per head, written from the formula in qkt_autograd.h
    B, T, C = x.shape
    d = C // n_head
    h = x.reshape(B, T, n_head, d)
    i = torch.arange(d // 2, dtype=x.dtype)
    t = torch.arange(T, dtype=x.dtype)
    a = t[:, None] * (base ** (-2 * i / d))[None, :]  # (T, d/2)
    cos, sin = torch.cos(a)[None, :, None, :], torch.sin(a)[None, :, None, :]
    x1, x2 = h[..., : d // 2], h[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).reshape(B, T, C)


def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def ref_affine_add(xs, f):
    """op_cases.h's f_affine_add: r + x W^T + b, by flags (see there)."""
    if f == 1:
        return xs[2] + F.linear(xs[0], xs[1])
    if f == 2:
        return xs[0] + F.linear(xs[0], xs[1], xs[2])
    if f in (3, 4):
        r = 0.7 * xs[3]
        y = r + F.linear(xs[0], xs[1], xs[2])
        return y * r if f == 4 else y
    return xs[3] + F.linear(xs[0], xs[1], xs[2])


BINARY = [torch.add, torch.sub, torch.mul, torch.div]

# by the case function of op_cases.h: (xs, flags) -> output
REFS = {
    "matmul": lambda xs, f: (xs[0].transpose(-1, -2) if f & 1 else xs[0]) @ (xs[1].transpose(-1, -2) if f & 2 else xs[1]),
    "affine": lambda xs, f: F.linear(xs[0], xs[1], None if f else xs[2]),
    "affine_gelu": lambda xs, f: gelu_tanh(F.linear(xs[0], xs[1], None if f else xs[2])),
    "affine_add": lambda xs, f: ref_affine_add(xs, f),
    "add": lambda xs, f: xs[0] + xs[1],
    "sub": lambda xs, f: xs[0] - xs[1],
    "mul": lambda xs, f: xs[0] * xs[1],
    "scale": lambda xs, f: -1.7 * xs[0],
    "sum": lambda xs, f: (xs[0] * xs[0]).sum(),
    "mean": lambda xs, f: (xs[0] * xs[0]).mean(),
    "reshape": lambda xs, f: xs[0].reshape(7, 6) * xs[1],
    "permute": lambda xs, f: xs[0].permute(*PERMS[f][:xs[0].dim()]) * xs[0].permute(*PERMS[f][:xs[0].dim()]),
    "transpose": lambda xs, f: xs[0].transpose(0, 1) @ xs[1],
    "split": lambda xs, f: ref_split(xs[0]),
    "concat": lambda xs, f: torch.cat(xs, -1),
    "embedding": lambda xs, f: F.embedding(EMB_IDX, xs[0]).view(3, 4, -1),
    "gelu": lambda xs, f: gelu_tanh(2 * xs[0]),
    "relu": lambda xs, f: F.relu(xs[0]),
    "softmax": lambda xs, f: ref_softmax(xs[0], f),
    "log_softmax": lambda xs, f: F.log_softmax(xs[0], -1),
    "cross_entropy": lambda xs, f: F.cross_entropy(xs[0].reshape(-1, xs[0].shape[-1]), CE_TARGETS, ignore_index=-1),
    "layernorm": lambda xs, f: F.layer_norm(xs[0], xs[0].shape[-1:], None if f else xs[1], None if f else xs[2], 1e-5),
    "twice": lambda xs, f: xs[0] @ xs[1] + xs[0] * xs[0],
    # generic ops
    "bcast": lambda xs, f: BINARY[f](xs[0], xs[1]),
    "bcast_twice": lambda xs, f: (0.5 - xs[0] * xs[0].reshape(3, 1, 1)) / (xs[1] + 3.0),
    "unary": lambda xs, f: ref_unary(xs[0], f),
    "where": ref_where,
    "reduce_axis": lambda xs, f: ref_reduce(xs[0], f),
    "reduce_chain": lambda xs, f: ref_reduce_chain(xs[0]),
    "narrow": lambda xs, f: ref_narrow(xs[0], f),
    "index_select": lambda xs, f: torch.index_select(xs[0], 0 if f == 0 else 2, ISEL_IDX[:6 if f == 0 else 4]),
    "gather": lambda xs, f: ref_gather(xs[0], f),
    "concat_axis": ref_concat_axis,
    "stack": lambda xs, f: torch.stack(xs, f - 3),
    # model ops: flags = no weight (rmsnorm), n_head (rope)
    "rmsnorm": ref_rmsnorm,
    "rope": lambda xs, f: ref_rope(xs[0], f),
    "l2norm": lambda xs, f: F.normalize(xs[0], dim=-1, eps=1e-12),
}

# case name -> the REFS key (the case function's name in op_cases.h, without f_)
def ref_key(name):
    table = [("matmul", "matmul"), ("affine_gelu", "affine_gelu"), ("affine_add", "affine_add"), ("affine", "affine"), ("add same", "add"), ("add bias", "add"),
             ("add (T, C)", "add"), ("sub bias", "sub"), ("mul bias", "mul"), ("mul same", "mul"),
             ("scale", "scale"), ("sum_axis", "reduce_axis"), ("sum", "sum"), ("mean_axis", "reduce_axis"),
             ("mean", "mean"), ("reshape", "reshape"), ("permute", "permute"), ("transpose", "transpose"),
             ("split", "split"), ("concat widths", "concat"), ("concat", "concat_axis"), ("embedding", "embedding"),
             ("gelu", "gelu"), ("relu", "relu"), ("softmax", "softmax"), ("log_softmax", "log_softmax"),
             ("cross_entropy", "cross_entropy"), ("layernorm", "layernorm"), ("input used twice", "twice"),
             ("add (", "bcast"), ("add scalar", "bcast"), ("sub (", "bcast"), ("mul (", "bcast"),
             ("mul scalar", "bcast"), ("div", "bcast"), ("broadcast, input twice", "bcast_twice"),
             ("exp", "unary"), ("log |x|", "unary"), ("sqrt", "unary"), ("rsqrt", "unary"), ("pow", "unary"),
             ("sigmoid", "unary"), ("tanh", "unary"), ("silu", "unary"), ("abs", "unary"), ("clamp", "unary"),
             ("where", "where"), ("masked_fill", "where"), ("max_axis", "reduce_axis"), ("logsumexp", "reduce_axis"),
             ("max, logsumexp", "reduce_chain"), ("narrow", "narrow"), ("index_select", "index_select"),
             ("gather", "gather"), ("stack", "stack"), ("rmsnorm", "rmsnorm"), ("rope", "rope"),
             ("l2norm", "l2norm")]
    for prefix, key in table:
        if name.startswith(prefix):
            return key
    return None


# ------------------------------------------------------------------ the check
def check(path, tol, label):
    real_size, op_names, cases = read_dump(path)
    ok, covered, n_checked = True, set(), 0
    for c in cases:
        name = c["name"]
        if name in SKIPPED or name.startswith(SKIP_PREFIX):
            continue
        key = ref_key(name)
        if key is None:
            print(f"FAIL [{label}] {name}: no PyTorch reference in crosscheck_ops.py (add one, or say in SKIPPED why not)")
            ok = False
            continue
        xs = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in c["xs"]]
        y = REFS[key](xs, c["flags"])
        errs = []
        if tuple(y.shape) != c["y"].shape:
            print(f"FAIL [{label}] {name}: output shape {c['y'].shape}, torch {tuple(y.shape)}")
            ok = False
            continue
        y.backward(torch.tensor(c["seed"], dtype=torch.float64))
        pairs = [("y", c["y"], y.detach().numpy())]
        pairs += [(f"d x{k}", c["grads"][k], (x.grad if x.grad is not None else torch.zeros_like(x)).numpy())
                  for k, x in enumerate(xs)]
        case_ok = True
        for what, got, want in pairs:
            scale = max(np.abs(want).max() if want.size else 0.0, 1e-30)
            err = np.abs(got - want).max() / scale if want.size else 0.0
            errs.append(err)
            if not err <= tol:  # NaN fails
                print(f"FAIL [{label}] {name}: {what} max |qkt - torch| {np.abs(got - want).max():.3e} > {tol:g} * {scale:.3e}")
                case_ok = False
        ok &= case_ok
        n_checked += 1
        covered.update(c["ops"])
        print(f"{'ok  ' if case_ok else 'FAIL'} [{label}] {name:36s} worst rel err {max(errs):.1e}")
    missing = [op for op in op_names if op not in covered and op not in NOT_HERE]
    if missing:
        print(f"FAIL [{label}] ops of the op table no cross-checked case runs: {', '.join(missing)}")
        ok = False
    print(f"[{label}] float{8 * real_size}: {n_checked} cases checked, {len(covered)} ops covered, tol {tol:g}")
    return ok


def main():
    tools = sys.argv[1:]
    if not tools:
        print(__doc__)
        return 2
    torch.set_num_threads(1)
    ok = True
    with tempfile.TemporaryDirectory(prefix="qkt-ops-") as tmp:
        for k, tool in enumerate(tools):
            out = os.path.join(tmp, f"dump{k}.bin")
            r = subprocess.run([tool, out], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {tool} exited {r.returncode}: {r.stderr.strip()}")
                ok = False
                continue
            with open(out, "rb") as f:
                real_size = struct.unpack("<i", f.read(12)[8:12])[0]
            ok &= check(out, 1e-12 if real_size == 8 else 1e-5, os.path.basename(tool))
    print("all op cross-checks passed" if ok else "op cross-check FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
