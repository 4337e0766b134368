#!/usr/bin/env python3
"""Write OUT_DIR: a random-weight SmolLM3ForCausalLM plus a float64 reference (numpy only). Test setup
(make_random_models.sh) runs it: no golden from transformers exists for SmolLM3.

  /usr/bin/python3 tests/make_smollm3_reference.py OUT_DIR [--tokenizer-dir DIR]
  (default tokenizer: $ATTN_SHARED_DIR/models/tiny-llama-brown, ATTN_SHARED_DIR defaulting to ../../shared)

SmolLM3 (transformers models/smollm3) is Llama with one twist: layer i applies RoPE to q and k iff
config.no_rope_layers[i] is truthy (1 = RoPE, 0 = NoPE). When no_rope_layers is null, SmolLM3Config fills it with
[int((i + 1) % no_rope_layer_interval != 0) for i in range(num_hidden_layers)]; here interval 3 gives
[1, 1, 0, 1, 1, 0] and the list is also written explicitly. Sliding window is off, so every layer is full causal.
Everything else is Llama: RMSNorm pre-norm, GQA (query head h reads kv head h // (heads / kv_heads)), rotate-half
RoPE with inv_freq = 1 / theta^(arange(0, head_dim, 2) / head_dim), scale head_dim^-0.5, SwiGLU MLP, final norm,
untied lm_head. The reference is that forward in float64 on the float32 weights as stored.
"""
import argparse, hashlib, json, os, shutil, struct
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# Seed picked among 0..39 (with the gains below) for the widest greedy top-1/top-2 gap: random 32000-way logits
# are full of near-ties, and a float32 engine must reproduce the greedy run without flips.
SEED = 37
D, FF, L, H, KV, HD = 64, 128, 6, 4, 2, 16          # hidden, intermediate, layers, heads, kv heads, head_dim
THETA, EPS, INTERVAL, MAX_POS = 10000.0, 1e-6, 3, 256
NO_ROPE_LAYERS = [int((i + 1) % INTERVAL != 0) for i in range(L)]   # HF's default rule -> [1, 1, 0, 1, 1, 0]
TOKENIZER_FILES = ("tokenizer.model", "tokenizer_config.json", "special_tokens_map.json")
# Init: embeddings N(0, 0.2); a matrix with fan-in n is N(0, GAIN / sqrt(n)); norm weights 1 + N(0, 0.1).
# q/k get a larger gain so attention is sharp and position-sensitive (RoPE changes the logits a lot);
# lm_head's gain spreads the logits (std ~4, |logit| < ~20) so argmaxes are decisive, far from overflow.
GAIN = {"q_proj": 2.0, "k_proj": 2.0, "v_proj": 1.0, "o_proj": 1.0, "gate_proj": 1.0, "up_proj": 1.0,
        "down_proj": 1.0, "lm_head": 4.0}


def sentencepiece_pieces(path):
    """Piece strings of a SentencePiece ModelProto (field 1: repeated SentencePiece{1: piece}), no library."""
    buf, pieces = open(path, "rb").read(), []

    def varint(b, i):
        v = s = 0
        while True:
            c = b[i]; i += 1; v |= (c & 0x7F) << s; s += 7
            if c < 0x80:
                return v, i
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        wire = key & 7
        if wire == 0:
            _, i = varint(buf, i)
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:  # wire 2: length-delimited
            n, i = varint(buf, i)
            if key >> 3 == 1:  # a SentencePiece; its field 1 (tag 0x0A) is the piece string
                sub = buf[i:i + n]
                assert sub[0] == 0x0A
                m, j = varint(sub, 1)
                pieces.append(sub[j:j + m].decode("utf-8"))
            i += n
    return pieces


def make_weights(rng, vocab):
    """Tensors in SmolLM3ForCausalLM state_dict order, nn.Linear layout [out, in], float32."""
    spec = [("model.embed_tokens.weight", (vocab, D))]
    for i in range(L):
        p = f"model.layers.{i}."
        spec += [(p + "self_attn.q_proj.weight", (H * HD, D)), (p + "self_attn.k_proj.weight", (KV * HD, D)),
                 (p + "self_attn.v_proj.weight", (KV * HD, D)), (p + "self_attn.o_proj.weight", (D, H * HD)),
                 (p + "mlp.gate_proj.weight", (FF, D)), (p + "mlp.up_proj.weight", (FF, D)),
                 (p + "mlp.down_proj.weight", (D, FF)),
                 (p + "input_layernorm.weight", (D,)), (p + "post_attention_layernorm.weight", (D,))]
    spec += [("model.norm.weight", (D,)), ("lm_head.weight", (vocab, D))]
    out = {}
    for name, shape in spec:
        z = rng.standard_normal(size=shape, dtype=np.float32)
        if name.endswith("embed_tokens.weight"):
            t = z * np.float32(0.2)
        elif len(shape) == 1:
            t = np.float32(1.0) + z * np.float32(0.1)
        else:
            t = z * np.float32(GAIN[name.split(".")[-2]] / np.sqrt(shape[1]))
        out[name] = np.ascontiguousarray(t, dtype="<f4")
    return out


def write_safetensors(path, tensors):
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for n in sorted(tensors):
        header[n] = {"dtype": "F32", "shape": list(tensors[n].shape), "data_offsets": [off, off + tensors[n].nbytes]}
        off += tensors[n].nbytes
    hb = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    hb += b" " * (-len(hb) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb)
        for n in sorted(tensors):
            f.write(tensors[n].tobytes())


def forward(W, ids, rope_layers, dtype=np.float64):
    """Logits [n, vocab] of SmolLM3ForCausalLM for one unpadded sequence at positions 0..n-1, computed in
    `dtype` (float64 for the reference; float32 to measure how far a float32 computation lands from it)."""
    w = lambda name: W[name].astype(dtype)
    rms = lambda x, g: x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * g
    n = len(ids)
    x = w("model.embed_tokens.weight")[ids]
    inv_freq = 1.0 / THETA ** (np.arange(0, HD, 2, dtype=np.float64) / HD)
    ang = np.arange(n, dtype=np.float64)[:, None] * inv_freq[None, :]
    cos = np.cos(np.concatenate([ang, ang], -1))[:, None].astype(dtype)
    sin = np.sin(np.concatenate([ang, ang], -1))[:, None].astype(dtype)
    rope = lambda t: t * cos + np.concatenate([-t[..., HD // 2:], t[..., :HD // 2]], -1) * sin  # rotate_half
    mask = np.triu(np.full((n, n), -np.inf), 1).astype(dtype)
    for i in range(L):
        p = f"model.layers.{i}."
        h = rms(x, w(p + "input_layernorm.weight"))
        q = (h @ w(p + "self_attn.q_proj.weight").T).reshape(n, H, HD)
        k = (h @ w(p + "self_attn.k_proj.weight").T).reshape(n, KV, HD)
        v = (h @ w(p + "self_attn.v_proj.weight").T).reshape(n, KV, HD)
        if rope_layers[i]:
            q, k = rope(q), rope(k)
        k, v = np.repeat(k, H // KV, axis=1), np.repeat(v, H // KV, axis=1)  # HF repeat_kv
        s = np.einsum("qhd,khd->hqk", q, k) * HD ** -0.5 + mask
        a = np.exp(s - s.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        x = x + np.einsum("hqk,khd->qhd", a, v).reshape(n, H * HD) @ w(p + "self_attn.o_proj.weight").T
        h = rms(x, w(p + "post_attention_layernorm.weight"))
        g = h @ w(p + "mlp.gate_proj.weight").T
        x = x + ((g / (1.0 + np.exp(-g))) * (h @ w(p + "mlp.up_proj.weight").T)) @ w(p + "mlp.down_proj.weight").T
    return rms(x, w("model.norm.weight")) @ w("lm_head.weight").T


def top2_gap(row):
    a, b = np.partition(row, -2)[-2:]
    return float(b - a)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    shared = os.environ.get("ATTN_SHARED_DIR") or os.path.join(HERE, "..", "..", "shared")
    ap.add_argument("--tokenizer-dir", default=os.path.join(shared, "models", "tiny-llama-brown"))
    ap.add_argument("out")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for fn in TOKENIZER_FILES:
        shutil.copyfile(os.path.join(a.tokenizer_dir, fn), os.path.join(a.out, fn))
    pieces = sentencepiece_pieces(os.path.join(a.out, "tokenizer.model"))
    vocab, bos, eos = len(pieces), pieces.index("<s>"), pieces.index("</s>")

    config = {  # the keys SmolLM3Config.save_pretrained writes (transformers 4.5x), plus head_dim and mlp_bias
        "architectures": ["SmolLM3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": bos, "eos_token_id": eos, "head_dim": HD, "hidden_act": "silu", "hidden_size": D,
        "initializer_range": 0.02, "intermediate_size": FF, "layer_types": ["full_attention"] * L,
        "max_position_embeddings": MAX_POS, "mlp_bias": False, "model_type": "smollm3",
        "no_rope_layer_interval": INTERVAL, "no_rope_layers": NO_ROPE_LAYERS, "num_attention_heads": H,
        "num_hidden_layers": L, "num_key_value_heads": KV, "pad_token_id": None, "rms_norm_eps": EPS,
        "rope_scaling": None, "rope_theta": THETA, "sliding_window": None, "tie_word_embeddings": False,
        "torch_dtype": "float32", "transformers_version": "4.54.0", "use_cache": True, "use_sliding_window": False,
        "vocab_size": vocab,
    }
    gen = {"bos_token_id": bos, "do_sample": False, "eos_token_id": eos}
    for fn, obj in (("config.json", config), ("generation_config.json", gen)):
        with open(os.path.join(a.out, fn), "w") as f:
            json.dump(obj, f, indent=2, sort_keys=True)
            f.write("\n")
    rng = np.random.default_rng(SEED)
    W = make_weights(rng, vocab)
    write_safetensors(os.path.join(a.out, "model.safetensors"), W)

    # Token ids: bos then ids drawn from the non-special range [3, vocab).
    seqs = [[bos] + rng.integers(3, vocab, size=n - 1).tolist() for n in (7, 40, 120)]
    ref = {"no_rope_layers": NO_ROPE_LAYERS, "sequences": []}
    for ids in seqs:
        lg = forward(W, ids, NO_ROPE_LAYERS)
        # The same forward in float32: its distance from float64 is the rounding any float32 engine carries
        # (the test allows attn that much beyond its tolerance against a float32 golden).
        float32_distance = float(np.abs(forward(W, ids, NO_ROPE_LAYERS, np.float32)[-1] - lg[-1]).max())
        ref["sequences"].append({"ids": ids, "last_logits": [float(v) for v in lg[-1]],
                                 "float32_max_abs_dlogit": float32_distance,
                                 "argmax": lg.argmax(-1).tolist(),
                                 "argmax_margin": min(top2_gap(r) for r in lg)})
        # Wrong RoPE placements an implementation might make; each must move the logits clearly.
        d = {name: float(np.abs(forward(W, ids, mask)[-1] - lg[-1]).max())
             for name, mask in (("all-rope", [1] * L), ("no-rope", [0] * L),
                                ("inverted", [1 - r for r in NO_ROPE_LAYERS]))}
        print(f"len {len(ids):3d}: max|d last_logits| " + ", ".join(f"{k} {v:.4f}" for k, v in d.items()))
        assert min(d.values()) > 0.1, "RoPE placement barely matters: raise the q/k gain"
    ids, margin = list(seqs[0]), float("inf")
    for _ in range(20):  # greedy, full recompute each step
        last = forward(W, ids, NO_ROPE_LAYERS)[-1]
        margin = min(margin, top2_gap(last))
        ids.append(int(last.argmax()))
    ref["greedy"], ref["greedy_margin"] = ids[len(seqs[0]):], margin
    ref["model_sha256"] = hashlib.sha256(open(os.path.join(a.out, "model.safetensors"), "rb").read()).hexdigest()
    with open(os.path.join(a.out, "reference.json"), "w") as f:
        json.dump(ref, f, sort_keys=True, separators=(",", ":"))
        f.write("\n")
    print(f"vocab {vocab}, bos {bos}, eos {eos}; greedy {ref['greedy']} margin {margin:.4f}; "
          f"argmax margins {[round(s['argmax_margin'], 4) for s in ref['sequences']]}")


if __name__ == "__main__":
    main()
