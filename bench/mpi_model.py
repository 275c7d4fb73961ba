#!/usr/bin/env python3
"""Expected data-parallel scaling of `mpirun -np N qkt train` on paper (docs/distributed.md).

Per step every rank computes its shard of the batch, then the gradients (S = 4 P bytes,
float32) are summed in rank order by a pipelined chain (train/dist_mpi.c: pieces of
c = 256 KiB go rank 0 -> 1 -> ... -> N-1, each rank adding its own) and broadcast from the
last rank. Every link carries S once in each direction, so

    t_sum(N) = 2 S / BW + (N - 2 + ceil(log2 N)) (c / BW + alpha)

(the chain's and the broadcast's pipeline fill; a ring allreduce moves 2 S (N-1)/N: the
same bandwidth term). Strong scaling (the qkt semantics: a fixed batch split over N ranks,
one core each): t(N) = t1 / N + t_sum(N), speed-up t1 / t(N), efficiency speed-up / N.
Weak scaling (GPT-2 124M: 8 x 1024 tokens per rank, one rank per node): t = t_rank + t_sum.
N is at most 64 (QKT_DP_MAX: the ranks are the replicas) and at most the batch size.
usage: bench/mpi_model.py t1_tiny_ms t1_small_ms t1_medium_ms core_gflops
(the one-core step times, `qkt bench --config X --threads 1`, and the GFLOP/s one core reaches
on medium's step: a node of the weak-scaling table is 32 such cores; bench/distributed.sh and
scripts/distributed_doc.py measure and pass them)."""
import math
import sys

PIECE = 65536 * 4  # bytes per pipelined piece (SUM_CHUNK values of float32)
NETS = [("InfiniBand EDR 100 Gb/s", 12.5e9, 2e-6), ("10 GbE (TCP)", 1.25e9, 50e-6)]


def params(V, T, C, L):  # qkt's GPT: tied embeddings, biases, LayerNorms
    return V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C


def t_sum(S, N, bw, alpha):
    if N < 2:
        return 0.0
    return 2 * S / bw + (N - 2 + math.ceil(math.log2(N))) * (PIECE / bw + alpha)


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: bench/mpi_model.py t1_tiny_ms t1_small_ms t1_medium_ms core_gflops")
    t1 = [float(x) / 1e3 for x in sys.argv[1:4]]
    core = float(sys.argv[4]) * 1e9
    configs = [("tiny", params(65, 64, 64, 2), 16, t1[0]), ("small", params(65, 128, 128, 4), 16, t1[1]),
               ("medium", params(65, 256, 384, 6), 8, t1[2])]
    print("| config | params | gradient MB/step | network | N=2 | N=4 | N=8 | N=16 |")
    print("|---|---|---|---|---|---|---|---|")
    for name, P, B, t in configs:
        S = 4 * P
        for net, bw, alpha in NETS:
            cells = []
            for N in (2, 4, 8, 16):
                if N > B:
                    cells.append("(batch %d < N)" % B)
                    continue
                tn = t / N + t_sum(S, N, bw, alpha)
                cells.append("%.1fx (%.0f%%), sum %.2f ms" % (t / tn, 100 * t / tn / N, 1e3 * t_sum(S, N, bw, alpha)))
            print("| %s (t1 %.0f ms) | %d | %.2f | %s | %s |" % (name, 1e3 * t, P, S / 1e6, net, " | ".join(cells)))
    P = params(50257, 1024, 768, 12)
    S = 4 * P
    flop = 6 * P * 8 * 1024  # forward + backward per rank per step, 8 x 1024 tokens
    node = 32 * core  # FLOP/s of one node: 32 cores at the rate qkt reaches on one core here
    t_rank = flop / node
    adamw = 28 * P / 10e9  # AdamW reads p, g, m, v and writes p, m, v (28 B/param) at ~10 GB/s, on every rank
    print()
    print("GPT-2 124M: %d params, %.1f MB of gradients per step; %.2f TFLOP per rank per step (8 x 1024 tokens) "
          "= %.2f s at %.0f GFLOP/s per node (32 cores at %.0f); AdamW on every rank %.2f s" % (P, S / 1e6, flop / 1e12, t_rank, node / 1e9, core / 1e9, adamw))
    print()
    print("| network | N=2 | N=8 | N=32 | N=64 |")
    print("|---|---|---|---|---|")
    for net, bw, alpha in NETS:
        cells = []
        for N in (2, 8, 32, 64):  # 64: QKT_DP_MAX, the most replicas (and ranks) qkt train takes
            ts = t_sum(S, N, bw, alpha)
            cells.append("sum %.0f ms, efficiency %.1f%%" % (1e3 * ts, 100 * (t_rank + adamw) / (t_rank + adamw + ts)))
        print("| %s | %s |" % (net, " | ".join(cells)))


if __name__ == "__main__":
    main()
