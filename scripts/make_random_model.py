#!/usr/bin/env python3
"""Write a deterministic random-weight Hugging Face model folder (numpy only: no torch, no transformers).

  make_random_model.py gpt2 OUT_DIR --seed 1 [--n-layer 12 --n-embd 768 --n-head 12 --vocab 50257 --n-positions 1024]
  make_random_model.py bert OUT_DIR --seed 1 [--n-layer 12 --hidden 768 --n-head 12 --intermediate 3072
                                              --vocab 30522 --max-positions 512 --type-vocab 2]
  make_random_model.py bert-cls OUT_DIR --seed 1 [the options of bert]: BertForSequenceClassification, BERT-base
                                              shape with an NLI head (id2label entailment / neutral / contradiction)
  make_random_model.py llama OUT_DIR --seed 1 [--n-layer 12 --hidden 768 --n-head 12 --n-kv-head 4
                                               --intermediate 2048 --vocab 32000 --max-positions 2048
                                               --rope-theta 10000 --rms-norm-eps 1e-5]
  common: --tokenizer-dir DIR (tokenizer files copied into OUT_DIR; default $ATTN_SHARED_DIR/tokenizers/
          {gpt2,bert-base-uncased,llama2}, ATTN_SHARED_DIR defaulting to ../../shared from this script, i.e. the
          shared folder beside the attn checkout; --tokenizer-dir none to skip)

This is ../shared/tools/make_random_model.py with the llama and bert-cls kinds added; gpt2 and bert write the same
bytes as that tool. The default llama shape has 124.7M parameters (embeddings 24.6M, untied head 24.6M, 12 layers
of 6.3M).

Output: OUT_DIR/config.json, OUT_DIR/model.safetensors (all tensors F32, little-endian, C order), tokenizer files,
and for gpt2 and llama generation_config.json. Tensor names and shapes are exactly those of transformers'
GPT2LMHeadModel / BertForMaskedLM / BertForSequenceClassification / LlamaForCausalLM state_dict() (non-persistent
buffers excluded), minus the weights that HF ties and does not store (GPT-2 lm_head.weight ==
transformer.wte.weight; BERT cls.predictions.decoder.weight == bert.embeddings.word_embeddings.weight and
cls.predictions.decoder.bias == cls.predictions.bias; Llama ties nothing: tie_word_embeddings false, lm_head.weight
stored), i.e. the key set that `save_pretrained(safe_serialization=True)` writes. GPT-2 projection weights use HF's
Conv1D layout [in_features, out_features]; BERT and Llama nn.Linear weights are [out_features, in_features]. Llama
has no biases; its q/k weights are in HF's rotate-half layout (random weights: any layout is as good as another).

Initialisation (numpy.random.default_rng(seed); tensors drawn in state_dict order, float32 standard normals):
  token / position (and BERT token-type) embeddings : normal(0, 0.2)   (decisive logits for argmax tests)
  other weight matrices                             : normal(0, 0.02)
  LayerNorm / RMSNorm weight                        : 1 + normal(0, 0.1)
  LayerNorm bias and every other bias               : normal(0, 0.02)
safetensors layout (https://github.com/huggingface/safetensors#format): u64 little-endian header size N, then N
bytes of UTF-8 JSON {"__metadata__": {"format": "pt", ...}, name: {"dtype": "F32", "shape": [...],
"data_offsets": [begin, end]}, ...} padded with spaces to a multiple of 8, then the raw data buffer. Tensors are
laid out in sorted-name order (the header's keys are sorted too), so the bytes depend only on (arch, config, seed).
"""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EMB_STD, W_STD, LN_W_STD, B_STD = 0.2, 0.02, 0.1, 0.02


def gpt2_spec(c):
    d, L, V, P = c["n_embd"], c["n_layer"], c["vocab_size"], c["n_positions"]
    inner = c["n_inner"] or 4 * d
    spec = [("transformer.wte.weight", (V, d), "emb"), ("transformer.wpe.weight", (P, d), "emb")]
    for i in range(L):
        p = f"transformer.h.{i}."
        spec += [(p + "ln_1.weight", (d,), "ln_w"), (p + "ln_1.bias", (d,), "bias"),
                 (p + "attn.c_attn.weight", (d, 3 * d), "w"), (p + "attn.c_attn.bias", (3 * d,), "bias"),
                 (p + "attn.c_proj.weight", (d, d), "w"), (p + "attn.c_proj.bias", (d,), "bias"),
                 (p + "ln_2.weight", (d,), "ln_w"), (p + "ln_2.bias", (d,), "bias"),
                 (p + "mlp.c_fc.weight", (d, inner), "w"), (p + "mlp.c_fc.bias", (inner,), "bias"),
                 (p + "mlp.c_proj.weight", (inner, d), "w"), (p + "mlp.c_proj.bias", (d,), "bias")]
    spec += [("transformer.ln_f.weight", (d,), "ln_w"), ("transformer.ln_f.bias", (d,), "bias")]
    return spec  # lm_head.weight is tied to transformer.wte.weight (not stored)


def bert_encoder_spec(c):
    d, L, V, P, T, I = (c["hidden_size"], c["num_hidden_layers"], c["vocab_size"], c["max_position_embeddings"],
                        c["type_vocab_size"], c["intermediate_size"])
    e = "bert.embeddings."
    spec = [(e + "word_embeddings.weight", (V, d), "emb"), (e + "position_embeddings.weight", (P, d), "emb"),
            (e + "token_type_embeddings.weight", (T, d), "emb"),
            (e + "LayerNorm.weight", (d,), "ln_w"), (e + "LayerNorm.bias", (d,), "bias")]
    for i in range(L):
        p = f"bert.encoder.layer.{i}."
        for n in ("query", "key", "value"):
            spec += [(p + f"attention.self.{n}.weight", (d, d), "w"), (p + f"attention.self.{n}.bias", (d,), "bias")]
        spec += [(p + "attention.output.dense.weight", (d, d), "w"), (p + "attention.output.dense.bias", (d,), "bias"),
                 (p + "attention.output.LayerNorm.weight", (d,), "ln_w"),
                 (p + "attention.output.LayerNorm.bias", (d,), "bias"),
                 (p + "intermediate.dense.weight", (I, d), "w"), (p + "intermediate.dense.bias", (I,), "bias"),
                 (p + "output.dense.weight", (d, I), "w"), (p + "output.dense.bias", (d,), "bias"),
                 (p + "output.LayerNorm.weight", (d,), "ln_w"), (p + "output.LayerNorm.bias", (d,), "bias")]
    return spec


def bert_spec(c):
    d, V = c["hidden_size"], c["vocab_size"]
    spec = bert_encoder_spec(c)
    spec += [("cls.predictions.bias", (V,), "bias"),
             ("cls.predictions.transform.dense.weight", (d, d), "w"),
             ("cls.predictions.transform.dense.bias", (d,), "bias"),
             ("cls.predictions.transform.LayerNorm.weight", (d,), "ln_w"),
             ("cls.predictions.transform.LayerNorm.bias", (d,), "bias")]
    return spec  # decoder.weight tied to word_embeddings, decoder.bias tied to cls.predictions.bias (not stored)


def bert_cls_spec(c):
    """BertForSequenceClassification: the encoder, BertModel's pooler (dense + tanh on [CLS]), then classifier."""
    d = c["hidden_size"]
    return bert_encoder_spec(c) + [
        ("bert.pooler.dense.weight", (d, d), "w"), ("bert.pooler.dense.bias", (d,), "bias"),
        ("classifier.weight", (len(c["id2label"]), d), "w"), ("classifier.bias", (len(c["id2label"]),), "bias")]


def llama_spec(c):
    d, L, V, I = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"], c["intermediate_size"]
    head_dim = d // c["num_attention_heads"]
    q_dim, kv_dim = c["num_attention_heads"] * head_dim, c["num_key_value_heads"] * head_dim
    spec = [("model.embed_tokens.weight", (V, d), "emb")]
    for i in range(L):  # LlamaDecoderLayer registers self_attn, mlp, input_layernorm, post_attention_layernorm
        p = f"model.layers.{i}."
        spec += [(p + "self_attn.q_proj.weight", (q_dim, d), "w"), (p + "self_attn.k_proj.weight", (kv_dim, d), "w"),
                 (p + "self_attn.v_proj.weight", (kv_dim, d), "w"), (p + "self_attn.o_proj.weight", (d, q_dim), "w"),
                 (p + "mlp.gate_proj.weight", (I, d), "w"), (p + "mlp.up_proj.weight", (I, d), "w"),
                 (p + "mlp.down_proj.weight", (d, I), "w"),
                 (p + "input_layernorm.weight", (d,), "ln_w"), (p + "post_attention_layernorm.weight", (d,), "ln_w")]
    spec += [("model.norm.weight", (d,), "ln_w"), ("lm_head.weight", (V, d), "w")]
    return spec  # untied: lm_head.weight is stored


def gpt2_config(a):
    return {
        "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
        "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": a.n_positions, "n_embd": a.n_embd,
        "n_head": a.n_head, "n_inner": None, "n_layer": a.n_layer, "n_positions": a.n_positions,
        "reorder_and_upcast_attn": False, "resid_pdrop": 0.1, "scale_attn_by_inverse_layer_idx": False,
        "scale_attn_weights": True, "summary_activation": None, "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True, "summary_type": "cls_index", "summary_use_proj": True,
        "tie_word_embeddings": True, "torch_dtype": "float32", "use_cache": True, "vocab_size": a.vocab,
    }


def bert_config(a):
    return {
        "architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1, "classifier_dropout": None,
        "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": a.hidden, "initializer_range": 0.02,
        "intermediate_size": a.intermediate, "layer_norm_eps": 1e-12, "max_position_embeddings": a.max_positions,
        "model_type": "bert", "num_attention_heads": a.n_head, "num_hidden_layers": a.n_layer, "pad_token_id": 0,
        "position_embedding_type": "absolute", "tie_word_embeddings": True, "torch_dtype": "float32",
        "type_vocab_size": a.type_vocab, "use_cache": True, "vocab_size": a.vocab,
    }


# bert-cls: an NLI head (MNLI's labels in the order of the usual NLI cross-encoders).
NLI_LABELS = ["entailment", "neutral", "contradiction"]


def bert_cls_config(a):
    cfg = bert_config(a)
    cfg["architectures"] = ["BertForSequenceClassification"]
    cfg["id2label"] = {str(i): label for i, label in enumerate(NLI_LABELS)}
    cfg["label2id"] = {label: i for i, label in enumerate(NLI_LABELS)}
    return cfg


def llama_config(a):  # the keys transformers 4.40's LlamaConfig saves (as in ../shared/models/tiny-llama-brown)
    return {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": a.hidden,
        "initializer_range": 0.02, "intermediate_size": a.intermediate, "max_position_embeddings": a.max_positions,
        "model_type": "llama", "num_attention_heads": a.n_head, "num_hidden_layers": a.n_layer,
        "num_key_value_heads": a.n_kv_head, "pretraining_tp": 1, "rms_norm_eps": a.rms_norm_eps,
        "rope_scaling": None, "rope_theta": a.rope_theta, "tie_word_embeddings": False, "torch_dtype": "float32",
        "use_cache": True, "vocab_size": a.vocab,
    }


def make_tensors(spec, seed):
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape, kind in spec:
        z = rng.standard_normal(size=shape, dtype=np.float32)
        if kind == "emb":
            t = z * np.float32(EMB_STD)
        elif kind == "w":
            t = z * np.float32(W_STD)
        elif kind == "ln_w":
            t = np.float32(1.0) + z * np.float32(LN_W_STD)
        else:
            t = z * np.float32(B_STD)
        out[name] = np.ascontiguousarray(t, dtype="<f4")
    return out


def write_safetensors(path, tensors, metadata):
    header = {"__metadata__": metadata}
    off = 0
    names = sorted(tensors)
    for n in names:
        t = tensors[n]
        header[n] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + t.nbytes]}
        off += t.nbytes
    hb = json.dumps(header, separators=(",", ":"), sort_keys=True).encode("utf-8")
    hb += b" " * ((8 - len(hb) % 8) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for n in names:
            f.write(tensors[n].tobytes(order="C"))
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("arch", choices=["gpt2", "bert", "bert-cls", "llama"])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--n-layer", type=int, default=12)
    ap.add_argument("--n-head", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=None)
    # gpt2
    ap.add_argument("--n-embd", type=int, default=768)
    ap.add_argument("--n-positions", type=int, default=1024)
    # bert and llama
    ap.add_argument("--hidden", type=int, default=None, help="bert/llama hidden size (default: --n-embd)")
    ap.add_argument("--intermediate", type=int, default=None,
                    help="FFN size (default: bert 4*hidden, llama 2048)")
    ap.add_argument("--max-positions", type=int, default=None, help="default: bert 512, llama 2048")
    # bert
    ap.add_argument("--type-vocab", type=int, default=2)
    # llama
    ap.add_argument("--n-kv-head", type=int, default=4)
    ap.add_argument("--rope-theta", type=float, default=10000.0)
    ap.add_argument("--rms-norm-eps", type=float, default=1e-5)
    ap.add_argument("--tokenizer-dir", default=None)
    a = ap.parse_args()
    if a.arch == "gpt2":
        a.vocab = a.vocab or 50257
        assert a.n_embd % a.n_head == 0
        cfg = gpt2_config(a)
        spec = gpt2_spec(cfg)
    elif a.arch in ("bert", "bert-cls"):
        a.vocab = a.vocab or 30522
        a.hidden = a.hidden or a.n_embd
        a.intermediate = a.intermediate or 4 * a.hidden
        a.max_positions = a.max_positions or 512
        assert a.hidden % a.n_head == 0
        cfg = bert_config(a) if a.arch == "bert" else bert_cls_config(a)
        spec = bert_spec(cfg) if a.arch == "bert" else bert_cls_spec(cfg)
    else:
        a.vocab = a.vocab or 32000
        a.hidden = a.hidden or a.n_embd
        a.intermediate = a.intermediate or 2048
        a.max_positions = a.max_positions or 2048
        assert a.hidden % a.n_head == 0 and a.n_head % a.n_kv_head == 0
        cfg = llama_config(a)
        spec = llama_spec(cfg)
    os.makedirs(a.out, exist_ok=True)
    tensors = make_tensors(spec, a.seed)
    init = f"emb N(0,{EMB_STD}); weights N(0,{W_STD}); LayerNorm w 1+N(0,{LN_W_STD}); biases N(0,{B_STD})"
    if a.arch == "llama":
        init = f"emb N(0,{EMB_STD}); weights N(0,{W_STD}); RMSNorm w 1+N(0,{LN_W_STD})"
    meta = {"format": "pt", "generator": "make_random_model.py", "arch": a.arch, "seed": str(a.seed), "init": init}
    write_safetensors(os.path.join(a.out, "model.safetensors"), tensors, meta)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    special_ids = {"gpt2": (50256, 50256), "llama": (1, 2)}
    if a.arch in special_ids:
        bos, eos = special_ids[a.arch]
        with open(os.path.join(a.out, "generation_config.json"), "w") as f:
            json.dump({"bos_token_id": bos, "eos_token_id": eos}, f, indent=2)
            f.write("\n")
    tdir = a.tokenizer_dir
    if tdir is None:
        shared = os.environ.get("ATTN_SHARED_DIR") or os.path.join(HERE, "..", "..", "shared")
        tokenizer = {"gpt2": "gpt2", "bert": "bert-base-uncased", "bert-cls": "bert-base-uncased",
                     "llama": "llama2"}[a.arch]
        tdir = os.path.join(shared, "tokenizers", tokenizer)
    if tdir != "none":
        for fn in sorted(os.listdir(tdir)):
            if fn in ("config.json", "model.safetensors", "pytorch_model.bin", "generation_config.json"):
                continue
            src = os.path.join(tdir, fn)
            if os.path.isfile(src):
                shutil.copyfile(src, os.path.join(a.out, fn))
    n = sum(t.size for t in tensors.values())
    print(f"{a.arch}: {len(tensors)} tensors, {n} params -> {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
