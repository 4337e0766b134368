#!/usr/bin/python3
"""attn's q4 weights against llama.cpp's q4_0 on one GPT-2 model: the same bits, and the KL divergence each set
of weights costs (a development check, never run by the tests; needs ../shared and Debian's python3-torch).

  scripts/check-q4-kl.py ../shared/models/tiny-gpt2-brown ../shared/golden/tiny-gpt2-brown

1. Converts the model to an f32 GGUF with the llama.cpp converter in ../shared/peers, and quantizes that with the
   shipped llama-quantize to q4_0 (llama.cpp's recipe: the linear layers in q4_0, the tied token embedding, which is
   also the output head, in q6_K).
2. Quantizes every q4_0 tensor of llama.cpp's file again with gguf-py's q4_0 (a numpy port of ggml's reference
   algorithm, which attn's quantize_q4_block follows in C++; tests/test_kernels.cpp checks attn against it) and
   counts identical bytes. (numpy's float arithmetic can land a value on the other side of a rounding boundary
   now and then: a byte or so in millions.)
3. Runs a GPT-2 forward pass in torch (float64) along the golden greedy trajectories, teacher-forced, with three
   sets of weights, and prints the mean KL(f32 || other) of the next-token distribution and the top-1 agreement with
   the golden tokens:
     f32                the GGUF's f32 weights (a check: top-1 should agree with the golden on nearly every step);
     llama.cpp q4_0     every tensor dequantized from llama.cpp's q4_0 file (which also quantizes the token
                        embedding, and keeps the output head in q6_K, or q8_0 where the width is no multiple of 256);
     attn --dtype q4    the linear layers in q4_0, the output head in q8_0, embeddings, norms and biases in f32.
   Activations stay in float64 in all three: this compares the weights alone. (Both engines also round the
   activations of each product to q8_0 blocks; attn's own figure with that included is in tests/test_precision.cpp.)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "..", "..", "shared", "peers", "llama.cpp")
sys.path.insert(0, os.path.join(PEER, "convert", "gguf-py"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from gguf import GGMLQuantizationType, GGUFReader  # noqa: E402
from gguf.quants import dequantize, quantize  # noqa: E402


def read_gguf(path):
    """{name: (type, raw data as stored, numpy shape (out, in) or (n,))}."""
    tensors = {}
    for t in GGUFReader(path).tensors:
        shape = tuple(int(n) for n in reversed(t.shape.tolist()))
        tensors[t.name] = (t.tensor_type, np.array(t.data), shape)
    return tensors


def as_floats(entry):
    qtype, data, shape = entry
    if qtype == GGMLQuantizationType.F32:
        return data.astype(np.float64).reshape(shape)
    return dequantize(data, qtype).astype(np.float64).reshape(shape)


def round_trip(values, qtype):
    return dequantize(quantize(values.astype(np.float32), qtype), qtype).astype(np.float64)


def layer_norm(x, w, b, eps):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)


def gpt2_logits(weights, ids, n_head, eps):
    """Logits (len(ids), vocab) of GPT-2 with GGUF tensor names, in float64."""
    t = {k: torch.from_numpy(v) for k, v in weights.items()}
    n = len(ids)
    h = t["token_embd.weight"][ids] + t["position_embd.weight"][:n]
    d = h.shape[1]
    hd = d // n_head
    mask = torch.triu(torch.full((n, n), float("-inf"), dtype=torch.float64), 1)
    layer = 0
    while f"blk.{layer}.attn_qkv.weight" in t:
        p = f"blk.{layer}."
        a = layer_norm(h, t[p + "attn_norm.weight"], t[p + "attn_norm.bias"], eps)
        qkv = a @ t[p + "attn_qkv.weight"].T + t[p + "attn_qkv.bias"]
        q, k, v = (x.reshape(n, n_head, hd).transpose(0, 1) for x in qkv.split(d, dim=1))
        scores = q @ k.transpose(1, 2) / hd**0.5 + mask
        o = (scores.softmax(-1) @ v).transpose(0, 1).reshape(n, d)
        h = h + o @ t[p + "attn_output.weight"].T + t[p + "attn_output.bias"]
        m = layer_norm(h, t[p + "ffn_norm.weight"], t[p + "ffn_norm.bias"], eps)
        up = torch.nn.functional.gelu(m @ t[p + "ffn_up.weight"].T + t[p + "ffn_up.bias"], approximate="tanh")
        h = h + up @ t[p + "ffn_down.weight"].T + t[p + "ffn_down.bias"]
        layer += 1
    h = layer_norm(h, t["output_norm.weight"], t["output_norm.bias"], eps)
    return h @ t.get("output.weight", t["token_embd.weight"]).T


def main():
    model_dir, golden_dir = sys.argv[1], sys.argv[2]
    config = json.load(open(os.path.join(model_dir, "config.json")))
    with tempfile.TemporaryDirectory() as tmp:
        # The converter reads n_ctx, which newer GPT-2 configs leave out (n_positions says the same): a copy.
        copy = os.path.join(tmp, "model")
        shutil.copytree(model_dir, copy)
        json.dump({"n_ctx": config.get("n_positions", 1024), **config}, open(os.path.join(copy, "config.json"), "w"))
        f32_path, q4_path = os.path.join(tmp, "f32.gguf"), os.path.join(tmp, "q4_0.gguf")
        subprocess.run([sys.executable, os.path.join(PEER, "convert", "convert_offline.py"), copy,
                        "--outtype", "f32", "--outfile", f32_path], check=True, capture_output=True)
        subprocess.run([os.path.join(HERE, "llama-quantize.sh"), f32_path, q4_path, "q4_0"], check=True,
                       capture_output=True)
        f32, q4 = read_gguf(f32_path), read_gguf(q4_path)

    types = {}
    identical = total = 0
    for name, (qtype, data, shape) in q4.items():
        types[qtype.name] = types.get(qtype.name, 0) + 1
        if qtype == GGMLQuantizationType.Q4_0:
            ours = quantize(as_floats(f32[name]).astype(np.float32), GGMLQuantizationType.Q4_0)
            identical += int(np.count_nonzero(ours.reshape(-1) == data.reshape(-1)))
            total += data.size
    print(f"llama.cpp's q4_0 file: tensor types {types}")
    print(f"q4_0 tensors requantized by ggml's reference algorithm: {identical} of {total} bytes identical")

    reference = {name: as_floats(entry) for name, entry in f32.items()}
    llama = {name: as_floats(entry) for name, entry in q4.items()}
    attn = dict(reference)
    for name in reference:
        if re.fullmatch(r"blk\.\d+\.(attn_qkv|attn_output|ffn_up|ffn_down)\.weight", name):
            attn[name] = round_trip(reference[name], GGMLQuantizationType.Q4_0)
    head = round_trip(reference.get("output.weight", reference["token_embd.weight"]), GGMLQuantizationType.Q8_0)
    attn["output.weight"] = head

    n_head, eps = config["n_head"], config.get("layer_norm_epsilon", 1e-5)
    sums = {"f32": [0.0, 0], "llama.cpp q4_0": [0.0, 0], "attn --dtype q4": [0.0, 0]}
    steps = 0
    for line in open(os.path.join(golden_dir, "generate.jsonl")):
        golden = json.loads(line)
        prompt, generated = golden["prompt_ids"], golden["generated_ids"]
        ids = prompt + generated[:-1]
        first = len(prompt) - 1  # the position whose logits give generated[0]
        with torch.no_grad():
            base = gpt2_logits(reference, ids, n_head, eps)[first:].log_softmax(-1)
            for label, weights in (("f32", reference), ("llama.cpp q4_0", llama), ("attn --dtype q4", attn)):
                other = base if weights is reference else gpt2_logits(weights, ids, n_head, eps)[first:].log_softmax(-1)
                kl = (base.exp() * (base - other)).sum(-1)
                sums[label][0] += float(kl.sum())
                sums[label][1] += int((other.argmax(-1) == torch.tensor(generated)).sum())
        steps += len(generated)
    print(f"{os.path.basename(os.path.normpath(model_dir))}, {steps} steps along the golden trajectories "
          f"(float64 activations):")
    for label, (kl, agree) in sums.items():
        print(f"  {label:16} mean KL {kl / steps:.3g}, top-1 {agree}/{steps} ({100 * agree / steps:.2f}%)")


if __name__ == "__main__":
    main()
