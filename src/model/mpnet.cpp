// MPNet (MPNetForMaskedLM, or the bare MPNetModel of sentence-transformers' all-mpnet-base-v2):
// BERT's post-norm encoder without token types, under the prefix "mpnet.", with positions counted
// from padding_idx + 1 as RoBERTa's (padding_idx is always 1), and one relative position bias,
// T5's bidirectional buckets (32, up to distance 128, whatever the config says), added to the
// scaled scores of every layer. The head "lm_head" is RoBERTa's.
#include "src/model/family_config.h"
#include "src/model/model.h"

namespace attn {

ModelParts map_mpnet(const JsonFile& config, TensorSource& tensors) {
  const float eps = read_bert_norm_eps(config);
  ModelParts parts;
  ArchSpec& spec = parts.spec;
  spec.topology = BlockTopology::kPostNorm;
  spec.causal = false;
  read_common_sizes(config, spec, 0);
  spec.activation = read_activation(config, "hidden_act", "gelu");
  // Hugging Face's MPNetEmbeddings: padding_idx = 1, positions from 2.
  constexpr int kPaddingIdx = 1;
  const int table_rows = spec.max_positions;
  if (kPaddingIdx + 1 >= table_rows) {
    config.fail("max_position_embeddings", "is " + std::to_string(table_rows) +
                                               ", which leaves no position: MPNet counts "
                                               "positions from 2");
  }
  read_bert_embeddings(tensors, parts, eps);
  parts.positions.padding_token = kPaddingIdx;
  parts.positions.table_offset = kPaddingIdx + 1;
  spec.max_positions = table_rows - parts.positions.table_offset;

  // compute_position_bias always uses 32 buckets and max distance 128; the table may have more.
  constexpr int kBuckets = 32;
  const int table_buckets =
      config.optional_positive_int("relative_attention_num_buckets", kMaxPositions).value_or(32);
  if (table_buckets < kBuckets) {
    config.fail("relative_attention_num_buckets",
                "is " + std::to_string(table_buckets) + "; MPNet looks up 32 buckets");
  }
  parts.positions.relative_bias = RelativePositionBias{
      .table = tensors.get("encoder.relative_attention_bias.weight", {table_buckets, spec.n_head}),
      .num_buckets = kBuckets,
      .max_distance = 128,
      .bidirectional = true};

  const EncoderLayerNames names = {.query = "attention.attn.q",
                                   .key = "attention.attn.k",
                                   .value = "attention.attn.v",
                                   .output = "attention.attn.o",
                                   .attention_norm = "attention.LayerNorm",
                                   .up = "intermediate.dense",
                                   .down = "output.dense",
                                   .ffn_norm = "output.LayerNorm"};
  for (int i = 0; i < spec.n_layer; ++i) {
    parts.weights.layers.push_back(
        read_encoder_layer(tensors, spec, "encoder.layer." + std::to_string(i) + ".", names, eps));
  }
  read_roberta_lm_head(tensors, parts, eps);
  // MPNetClassificationHead is RoBERTa's: dense and tanh on <s>, then out_proj.
  read_classifier_head(config, tensors, parts,
                       {.dense = "classifier.dense",
                        .activation = ClassifierHead::DenseActivation::kTanh,
                        .classifier = "classifier.out_proj",
                        .token_classifier = "classifier"});
  return parts;
}

}  // namespace attn
