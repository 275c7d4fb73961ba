#!/usr/bin/env python3
"""Writes the seed corpus for fuzz_safetensors into corpus_safetensors/: a few
small valid files (several dtypes, metadata, scalar and empty tensors, unpadded
header) and a few invalid ones (each a different kind of lie in the header).
Only the standard library is needed. Run from anywhere; files are overwritten."""
import json, os, struct

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus_safetensors")
os.makedirs(out, exist_ok=True)


def st(header, data=b"", pad=True, hlen=None):
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h) if hlen is None else hlen) + h + data


def ent(dtype, shape, a, b):
    return {"dtype": dtype, "shape": shape, "data_offsets": [a, b]}


f32 = struct.pack("<4f", 1.0, -2.0, 0.5, 3.25)
files = {
    "valid_empty": st({}),
    "valid_meta_only": st({"__metadata__": {"n_layer": "2", "attn_scale": "sqrt_dk"}}),
    "valid_one_f32": st({"w": ent("F32", [2, 2], 0, 16)}, f32),
    "valid_mixed": st({"__metadata__": {"step": "10"}, "a": ent("F64", [2], 0, 16), "b": ent("I32", [3], 16, 28),
                       "s": ent("I64", [], 28, 36), "e": ent("F32", [0, 4], 36, 36), "r": ent("U64", [1], 36, 44),
                       "u": ent("BF16", [2], 44, 48), "k": ent("BOOL", [2], 48, 50)},
                      struct.pack("<2d3iqQ", 0.1, -1e300, -1, 0, 7, -5, 2**64 - 1) + b"\x80\x3f\x00\x40\x01\x00"),
    "valid_unpadded_spaces": json.dumps({"x": ent("U8", [3], 0, 3)}).encode(),  # fixed below
    "valid_unicode": st({"__metadata__": {"note": "θ ≈ 1/√d 🙂"}, "h.0.attn.c_attn.weight": ent("F16", [1], 0, 2)},
                        b"\x00\x3c"),
    "bad_overlap": st({"a": ent("F32", [2], 0, 8), "b": ent("F32", [2], 4, 12)}, f32[:12]),
    "bad_shape": st({"a": ent("F32", [4, 8], 0, 16)}, f32),
    "bad_truncated": st({"w": ent("F32", [2, 2], 0, 16)}, f32)[:-3],
    "bad_hlen": st({"w": ent("F32", [1], 0, 4)}, f32[:4], hlen=1 << 40),
    "bad_meta": st({"__metadata__": {"n": 3}}),
    "bad_json": struct.pack("<Q", 9) + b'{"a":[1,}',
}
h = json.dumps({"x": ent("U8", [3], 0, 3)}).encode()  # ", " separators, no padding
# json.dumps cannot repeat a key: write the duplicate by hand
d = b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'
files["bad_dup"] = struct.pack("<Q", len(d)) + d + f32[:8]
files["valid_unpadded_spaces"] = struct.pack("<Q", len(h)) + h + b"abc"
for name, data in files.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print(f"{len(files)} files in {out}")
