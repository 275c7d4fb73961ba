#!/usr/bin/python3
"""Cross-check qkt's SGD, Adam and AdamW steps against torch.optim, bit for bit (float32).

Runs `optim_driver DIR` (tests/torch/optim_driver.c: 4 steps of each optimizer config on a store of
two 2-D tensors flagged for weight decay and two 1-D ones not, from the same init and gradients)
and repeats the steps with torch.optim on the same tensors (param groups: decay on the 2-D tensors,
weight_decay 0 on the rest; lr 1e-2 (s + 1) at step s). Every element of p, and of the optimizer's
state (SGD's momentum buffer, Adam's exp_avg and exp_avg_sq), must be equal: docs/optim.md's claim.
The check must be able to fail: the AdamW run is also compared with torch's AdamW without weight
decay on the decayed group, which must differ.

Usage: crosscheck_optim.py OPTIM_DRIVER. Exit 0 = all passed, 1 = a mismatch, 77 = skipped (no
torch for this interpreter).
"""
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

SHAPES = [(200, 150), (150,), (300, 200), (2000,)]  # optim_driver.c's store, in its order
STEPS = 4
CONFIGS = {  # name: (torch optimizer, kwargs, weight decay of the 2-D tensors, state tensors)
    "sgd": (torch.optim.SGD, {}, 0.05, []),
    "sgd_momentum": (torch.optim.SGD, {"momentum": 0.9}, 0.05, ["momentum_buffer"]),
    "sgd_dampening": (torch.optim.SGD, {"momentum": 0.9, "dampening": 0.3}, 0.05, ["momentum_buffer"]),
    "sgd_nesterov": (torch.optim.SGD, {"momentum": 0.9, "nesterov": True}, 0.05, ["momentum_buffer"]),
    "adam": (torch.optim.Adam, {}, 0.05, ["exp_avg", "exp_avg_sq"]),
    "adamw": (torch.optim.AdamW, {"betas": (0.9, 0.95)}, 0.1, ["exp_avg", "exp_avg_sq"]),
}


def split(flat):
    out, off = [], 0
    for s in SHAPES:
        n = int(np.prod(s))
        out.append(torch.from_numpy(flat[off:off + n].reshape(s).copy()))
        off += n
    return out


def torch_steps(opt_cls, kwargs, decay, init, grads):
    params = [t.clone().requires_grad_(True) for t in split(init)]
    groups = [{"params": [p for p in params if p.dim() == 2], "weight_decay": decay},
              {"params": [p for p in params if p.dim() != 2], "weight_decay": 0.0}]
    opt = opt_cls(groups, lr=1e-2, **kwargs)
    for s in range(STEPS):
        for p, g in zip(params, split(grads[s])):
            p.grad = g
        for grp in opt.param_groups:
            grp["lr"] = 1e-2 * (s + 1)
        opt.step()
    return params, opt


def flat(tensors):
    return np.concatenate([t.detach().numpy().reshape(-1) for t in tensors])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-2])
    torch.set_num_threads(1)
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.argv[1], d], check=True)
        init = np.fromfile(os.path.join(d, "init.f32"), dtype="<f4")
        n = init.size
        grads = np.fromfile(os.path.join(d, "grads.f32"), dtype="<f4").reshape(STEPS, n)
        for name, (cls, kwargs, decay, state) in CONFIGS.items():
            ours = np.fromfile(os.path.join(d, name + ".f32"), dtype="<f4")
            params, opt = torch_steps(cls, kwargs, decay, init, grads)
            theirs = [flat(params)] + [flat([opt.state[p][k] for p in params]) for k in state]
            if ours.size != n * len(theirs):
                print(f"{name}: optim_driver wrote {ours.size} values, expected {n * len(theirs)}")
                failed += 1
                continue
            for i, (what, t) in enumerate(zip(["p"] + state, theirs)):
                q = ours[i * n:(i + 1) * n]
                diff = int(np.count_nonzero(q.view(np.uint32) != t.view(np.uint32)))
                ok = diff == 0
                failed += not ok
                print(f"{name:14s} {what:16s} {n} values, {diff} differ in their bits {'ok' if ok else 'MISMATCH'}")
        # The comparison must be able to fail: AdamW without its weight decay gives other bits.
        ours = np.fromfile(os.path.join(d, "adamw.f32"), dtype="<f4")[:n]
        params, _ = torch_steps(torch.optim.AdamW, {"betas": (0.9, 0.95)}, 0.0, init, grads)
        diff = int(np.count_nonzero(ours.view(np.uint32) != flat(params).view(np.uint32)))
        caught = diff > 0
        failed += not caught
        print(f"planted: AdamW without weight decay differs in {diff} of {n} values {'-> caught' if caught else '-> NOT CAUGHT'}")
    print("all equal" if not failed else f"{failed} mismatches")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
