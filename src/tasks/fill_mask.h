#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/model/model.h"

// Masked-token prediction with an encoder and its masked-LM head, as Hugging Face's
// FillMaskPipeline: one forward pass over the whole input (all masks present), then for every
// mask position independently a softmax over the full vocabulary and its top k.
namespace attn {

struct FillMaskCandidate {
  int token_id = 0;
  std::string token;     // tokenizer.decode([token_id]), HF's token_str
  float score = 0;       // probability: softmax over the full vocabulary at the mask
  std::string sequence;  // the input with this mask replaced by the candidate, decoded
};

struct MaskPrediction {
  int position = 0;                           // index of the mask in the input's token ids
  std::vector<FillMaskCandidate> candidates;  // best first
};

// An input ready for the model: its token ids (with [CLS] ... [SEP]), segments and masks.
struct MaskedInput {
  std::vector<int> ids;
  std::vector<int> type_ids;        // (ids.size())
  std::vector<int> mask_positions;  // ascending, at least one
  int dropped_tokens = 0;           // tokens cut off by truncation
};

struct FillMaskOptions {
  int top_k = 5;
  // Inputs are packed into batches of up to this many tokens, so that the linear layers run on
  // one tall matrix. An input longer than this gets a batch of its own. On BERT-base, 1024 runs
  // as fast as 4096 and needs 325 MB less (the KV cache grows with the batch).
  int max_batch_tokens = 1024;
};

// Throws Error unless `model` can fill masks: an encoder with a masked-LM head whose tokenizer
// names a mask token.
void check_fill_mask_model(const Model& model);

// Throws UsageError unless 1 <= top_k <= the vocabulary size.
void check_top_k(const Model& model, int top_k);

// Tokenizes one input (and its optional second sentence) and finds its masks. Throws Error when
// it has no mask token, or when it is longer than the model's max_position_embeddings unless
// `truncate`: then the first (max - 1) tokens are kept, followed by the input's final [SEP]
// (masks cut off are dropped; none left is the same error as none at all).
MaskedInput encode_masked_input(const Model& model, std::string_view text,
                                std::optional<std::string_view> pair = std::nullopt,
                                bool truncate = false);

// Fills the masks of every input, packing the inputs into batches; calls on_result(i, masks)
// for input i as soon as its batch is done, in input order.
void fill_mask(const Model& model, std::span<const MaskedInput> inputs,
               const FillMaskOptions& options,
               const std::function<void(std::size_t, std::vector<MaskPrediction>)>& on_result);

// The same, collecting the results: one vector of mask predictions per input.
std::vector<std::vector<MaskPrediction>> fill_mask(const Model& model,
                                                   std::span<const MaskedInput> inputs,
                                                   const FillMaskOptions& options);

// Encodes and fills a list of texts; throws Error (naming the text's index when there are
// several) at the first text that cannot be filled.
std::vector<std::vector<MaskPrediction>> fill_mask(const Model& model,
                                                   std::span<const std::string> texts,
                                                   const FillMaskOptions& options);

}  // namespace attn
