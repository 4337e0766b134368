#!/usr/bin/env python3
"""Write OUT_DIR: an ALBERT classifier made from ../shared's tiny-albert-random, plus a float64 reference (numpy
only). Test setup (make_random_models.sh) runs it: ../shared has no ALBERT classifier and no golden for one.

  /usr/bin/python3 tests/make_albert_classifier_reference.py {seqcls|tokcls} OUT_DIR [--albert-dir DIR]
  (default DIR: $ATTN_SHARED_DIR/models/tiny-albert-random, ATTN_SHARED_DIR defaulting to ../../shared)

seqcls: AlbertForSequenceClassification (transformers models/albert/modeling_albert.py): AlbertModel's pooler
  `albert.pooler` (nn.Linear hidden -> hidden, then tanh) on the first token's state, then `classifier`
  (hidden -> labels). tokcls: AlbertForTokenClassification: `classifier` on every token's state, no pooler
  (AlbertModel(add_pooling_layer=False)). The encoder's tensors are tiny-albert-random's, its masked-LM head
  (`predictions.*`) left out as those classes have none; the head tensors are new, drawn with a fixed seed. The
  config is tiny-albert-random's with the architecture and id2label / label2id of the head.

The reference is ALBERT's forward in float64 on the float32 weights as stored: embeddings LayerNorm(word + position
+ token type) of embedding_size, embedding_hidden_mapping_in to hidden_size, then num_hidden_layers steps of the one
shared layer (attention: q, k, v, softmax(q k^T / sqrt(head_dim)), dense, LayerNorm(x + .); ffn: ffn, gelu_new,
ffn_output, full_layer_layer_norm(x + .)), then the head. Before writing anything, the same forward is checked
against transformers' own hidden states of tiny-albert-random (../shared/golden/tiny-albert-random/hidden/), so
the reference is known to compute ALBERT as transformers does. Inputs: the first texts of that golden's
tokens.jsonl with transformers' ids, alone, and (seqcls) in pairs [CLS] a [SEP] b [SEP] with token types 0 / 1,
as AlbertTokenizer builds them.
"""
import argparse
import json
import os
import shutil
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 27
LABELS = {"seqcls": ["NEGATIVE", "NEUTRAL", "POSITIVE"],
          "tokcls": ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]}
ARCHITECTURE = {"seqcls": "AlbertForSequenceClassification", "tokcls": "AlbertForTokenClassification"}
TOKENIZER_FILES = ("spiece.model", "tokenizer_config.json", "special_tokens_map.json")
N_SINGLES, N_PAIRS = 8, 4


def read_safetensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", name
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[8 + n + begin:8 + n + end], dtype="<f4").reshape(info["shape"]).copy()
    return tensors


def write_safetensors(path, tensors):
    """F32, tensors and header keys in sorted-name order, header padded with spaces to a multiple of 8."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name in sorted(tensors):
        size = tensors[name].size * 4
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text)
        for name in sorted(tensors):
            out.write(np.ascontiguousarray(tensors[name], dtype="<f4").tobytes())


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def encoder(W, config, ids, types):
    """Token states (tokens, hidden) of one sequence, in float64."""
    W = {k: v.astype(np.float64) for k, v in W.items()}
    eps, heads, d = config["layer_norm_eps"], config["num_attention_heads"], config["hidden_size"]
    hd = d // heads
    e = "albert.embeddings."
    x = (W[e + "word_embeddings.weight"][ids] + W[e + "position_embeddings.weight"][np.arange(len(ids))]
         + W[e + "token_type_embeddings.weight"][types])
    x = layer_norm(x, W[e + "LayerNorm.weight"], W[e + "LayerNorm.bias"], eps)

    def linear(name, v):
        return v @ W[name + ".weight"].T + W[name + ".bias"]

    x = linear("albert.encoder.embedding_hidden_mapping_in", x)
    assert config.get("num_hidden_groups", 1) == 1 and config.get("inner_group_num", 1) == 1
    p = "albert.encoder.albert_layer_groups.0.albert_layers.0."
    for _ in range(config["num_hidden_layers"]):
        q, k, v = (linear(p + "attention." + n, x).reshape(len(ids), heads, hd).transpose(1, 0, 2)
                   for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(hd)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = (scores / scores.sum(-1, keepdims=True)) @ v  # (heads, tokens, hd)
        context = context.transpose(1, 0, 2).reshape(len(ids), d)
        x = layer_norm(x + linear(p + "attention.dense", context), W[p + "attention.LayerNorm.weight"],
                       W[p + "attention.LayerNorm.bias"], eps)
        ffn = linear(p + "ffn_output", gelu_new(linear(p + "ffn", x)))
        x = layer_norm(x + ffn, W[p + "full_layer_layer_norm.weight"], W[p + "full_layer_layer_norm.bias"], eps)
    return x


def head_logits(W, kind, states):
    W = {k: v.astype(np.float64) for k, v in W.items() if k.startswith(("albert.pooler", "classifier"))}
    if kind == "seqcls":
        pooled = np.tanh(states[0] @ W["albert.pooler.weight"].T + W["albert.pooler.bias"])
        return pooled @ W["classifier.weight"].T + W["classifier.bias"]
    return states @ W["classifier.weight"].T + W["classifier.bias"]


def check_against_transformers(W, config, golden):
    """The forward above against transformers 4.40's float32 hidden states of tiny-albert-random."""
    info = json.load(open(os.path.join(golden, "hidden", "info.json")))
    ids = np.array(info["ids"])
    states = encoder(W, config, ids, np.zeros_like(ids))
    want = np.load(os.path.join(golden, "hidden", "layer_%02d.npy" % (config["num_hidden_layers"] - 1)))
    worst = np.abs(states - want).max()
    assert worst < 1e-4, f"the float64 forward is {worst} from transformers' last hidden states"
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=sorted(LABELS))
    ap.add_argument("out")
    shared = os.environ.get("ATTN_SHARED_DIR", os.path.join(HERE, "..", "..", "shared"))
    ap.add_argument("--albert-dir", default=os.path.join(shared, "models", "tiny-albert-random"))
    a = ap.parse_args()
    golden = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a.albert_dir))), "golden",
                          os.path.basename(os.path.normpath(a.albert_dir)))

    config = json.load(open(os.path.join(a.albert_dir, "config.json")))
    W = {k: v for k, v in read_safetensors(os.path.join(a.albert_dir, "model.safetensors")).items()
         if k.startswith("albert.")}
    worst_hidden = check_against_transformers(W, config, golden)

    # The head: nn.Linear layout [out, in]; weights N(0, 1.5 / sqrt(fan-in)) so that the logits spread over a
    # few units (distinct labels and orders), biases N(0, 0.02).
    rng = np.random.default_rng(SEED)
    labels = LABELS[a.kind]
    d = config["hidden_size"]
    shapes = [("classifier", len(labels))]
    if a.kind == "seqcls":
        shapes.insert(0, ("albert.pooler", d))
    for name, out in shapes:
        W[name + ".weight"] = rng.standard_normal((out, d), dtype=np.float32) * np.float32(1.5 / np.sqrt(d))
        W[name + ".bias"] = rng.standard_normal(out, dtype=np.float32) * np.float32(0.02)

    config["architectures"] = [ARCHITECTURE[a.kind]]
    config["id2label"] = {str(i): label for i, label in enumerate(labels)}
    config["label2id"] = {label: i for i, label in enumerate(labels)}

    texts = [json.loads(line) for line in open(os.path.join(golden, "tokens.jsonl"))][:N_SINGLES + 2 * N_PAIRS]
    inputs = [{"text": t["text"], "input_ids": t["ids"], "token_type_ids": [0] * len(t["ids"])}
              for t in texts[:N_SINGLES]]
    if a.kind == "seqcls":
        for first, second in zip(texts[N_SINGLES::2], texts[N_SINGLES + 1::2]):
            inputs.append({"text": first["text"], "text_pair": second["text"],
                           "input_ids": first["ids"] + second["ids"][1:],
                           "token_type_ids": [0] * len(first["ids"]) + [1] * (len(second["ids"]) - 1)})
    for item in inputs:
        states = encoder(W, config, np.array(item["input_ids"]), np.array(item["token_type_ids"]))
        item["logits"] = head_logits(W, a.kind, states).tolist()

    os.makedirs(a.out, exist_ok=True)
    for name in TOKENIZER_FILES:
        shutil.copy(os.path.join(a.albert_dir, name), os.path.join(a.out, name))
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_safetensors(os.path.join(a.out, "model.safetensors"), W)
    with open(os.path.join(a.out, "reference.json"), "w") as f:
        json.dump({"seed": SEED, "forward_vs_transformers_max_abs": float(worst_hidden), "inputs": inputs}, f)
    print(f"{a.out}: {ARCHITECTURE[a.kind]}, {len(inputs)} reference inputs "
          f"(forward vs transformers' hidden states: max |d| {worst_hidden:.2e})")


if __name__ == "__main__":
    main()
