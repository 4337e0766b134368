#!/usr/bin/python3
"""How far float32 scores can be from exact ones, for the README and the issue-27 note.

Runs tiny-distilbert-seqcls-random (DistilBertForSequenceClassification) in float64 with torch,
written out from transformers 4.45's DistilBERT (embeddings + LayerNorm, post-norm layers, GELU,
pre_classifier + ReLU, classifier), on the inputs of its classify.jsonl golden, and prints, per
input, how far the golden's float32 scores and attn's are from the float64 ones.
Usage: scripts/check-classifier-float64.py [ATTN_BINARY]   (needs python3-torch; not run in CI)
"""
import json
import math
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

MODEL = "../shared/models/tiny-distilbert-seqcls-random/"
GOLDEN = "../shared/golden/tiny-distilbert-seqcls-random/classify.jsonl"


def read_safetensors(path):
    data = open(path, "rb").read()
    header_size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + header_size])
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        array = np.frombuffer(data[8 + header_size + begin:8 + header_size + end], dtype=np.float32)
        tensors[name] = torch.from_numpy(array.reshape(entry["shape"]).copy()).double()
    return tensors


def float64_logits(weights, config, ids):
    d, heads = config["dim"], config["n_heads"]
    n = len(ids)

    def norm(x, name):
        return torch.nn.functional.layer_norm(x, (d,), weights[name + ".weight"],
                                              weights[name + ".bias"], 1e-12)

    def linear(x, name):
        return x @ weights[name + ".weight"].T + weights[name + ".bias"]

    x = (weights["distilbert.embeddings.word_embeddings.weight"][torch.tensor(ids)] +
         weights["distilbert.embeddings.position_embeddings.weight"][:n])
    x = norm(x, "distilbert.embeddings.LayerNorm")
    for layer in range(config["n_layers"]):
        p = f"distilbert.transformer.layer.{layer}."
        q, k, v = (linear(x, p + "attention." + m).view(n, heads, -1).transpose(0, 1)
                   for m in ("q_lin", "k_lin", "v_lin"))
        attended = torch.softmax((q / math.sqrt(d // heads)) @ k.transpose(1, 2), -1) @ v
        x = norm(linear(attended.transpose(0, 1).reshape(n, d), p + "attention.out_lin") + x,
                 p + "sa_layer_norm")
        ffn = linear(torch.nn.functional.gelu(linear(x, p + "ffn.lin1")), p + "ffn.lin2")
        x = norm(ffn + x, p + "output_layer_norm")
    return linear(torch.relu(linear(x[0], "pre_classifier")), "classifier").tolist()


def softmax(values):
    top = max(values)
    exps = [math.exp(v - top) for v in values]
    return [e / sum(exps) for e in exps]


def main():
    attn = sys.argv[1] if len(sys.argv) > 1 else "build/attn"
    weights = read_safetensors(MODEL + "model.safetensors")
    config = json.load(open(MODEL + "config.json"))
    golden = [json.loads(line) for line in open(GOLDEN)]
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as texts:
        texts.write("".join(line["text"] + "\n" for line in golden))
        texts.flush()
        out = subprocess.run([attn, "classify", "-m", MODEL, "--json", "-f", texts.name],
                             capture_output=True, text=True, check=True).stdout.splitlines()
    worst = {"golden": 0.0, "attn": 0.0, "attn vs golden": 0.0}
    for line, result in zip(golden, map(json.loads, out)):
        exact = softmax(float64_logits(weights, config, line["input_ids"]))
        for key, a, b in (("golden", line["scores"], exact), ("attn", result["scores"], exact),
                          ("attn vs golden", result["scores"], line["scores"])):
            worst[key] = max(worst[key], max(abs(x - y) for x, y in zip(a, b)))
    print(f"{len(golden)} inputs; worst score difference: golden (float32) vs float64 "
          f"{worst['golden']:.3g}, attn vs float64 {worst['attn']:.3g}, "
          f"attn vs golden {worst['attn vs golden']:.3g}")


if __name__ == "__main__":
    main()
