// RoBERTa and XLM-RoBERTa (RobertaForMaskedLM, XLMRobertaForMaskedLM, or their bare models):
// BERT's encoder under the prefix "roberta.", with positions counted from padding_idx + 1 (so
// a table of max_position_embeddings rows holds that many minus padding_idx + 1 positions), and
// the head "lm_head", whose activation is always the exact GELU.
#include "src/model/model.h"

namespace attn {

ModelParts map_roberta(const JsonFile& config, TensorSource& tensors) {
  const float eps = read_bert_norm_eps(config);
  ModelParts parts = map_bert_encoder(config, tensors, eps);
  ArchSpec& spec = parts.spec;
  const int table_rows = spec.max_positions;
  const int padding_idx =
      config.optional_int_in_range("pad_token_id", 0, kMaxPositions).value_or(1);
  if (padding_idx + 1 >= table_rows) {
    config.fail("max_position_embeddings",
                "is " + std::to_string(table_rows) + ", which leaves no position: RoBERTa counts " +
                    "positions from pad_token_id + 1 = " + std::to_string(padding_idx + 1));
  }
  parts.positions.padding_token = padding_idx;
  parts.positions.table_offset = padding_idx + 1;
  spec.max_positions = table_rows - parts.positions.table_offset;

  read_roberta_lm_head(tensors, parts, eps);
  read_classifier_head(config, tensors, parts,
                       {.dense = "classifier.dense",
                        .activation = ClassifierHead::DenseActivation::kTanh,
                        .classifier = "classifier.out_proj",
                        .token_classifier = "classifier"});
  return parts;
}

void read_roberta_lm_head(TensorSource& tensors, ModelParts& parts, float eps) {
  read_masked_lm_head(tensors, parts,
                      {.dense = "lm_head.dense",
                       .norm = "lm_head.layer_norm",
                       .bias = "lm_head.bias",
                       .decoder = "lm_head.decoder"},
                      parts.spec.d_model, Activation::kGeluErf, eps);
}

}  // namespace attn
