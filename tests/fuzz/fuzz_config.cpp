// config.json of one architecture (FUZZ_MODEL: a shipped model folder) through load_model(),
// beside that model's real weights and tokenizer. The outcome must be a model or an
// attn::Error; a model that loads must have sane sizes and run a forward pass of two tokens
// to finite logits (the weights are real, so anything else is a silently wrong answer).

#include <cmath>
#include <string>
#include <vector>

#include "src/model/model.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// A folder holding the fuzzed config.json and links to every other file of the model.
const attn::fuzz::ScratchDir& model_folder() {
  static const attn::fuzz::ScratchDir folder;
  static const bool linked = [] {
    for (const auto& entry :
         std::filesystem::directory_iterator(attn::fuzz::shipped_model(FUZZ_MODEL))) {
      const std::string name = entry.path().filename().string();
      if (name != "config.json") folder.link(name, entry.path());
    }
    return true;
  }();
  (void)linked;
  return folder;
}

void check_model(const attn::Model& model) {
  const attn::ArchSpec& spec = model.spec();
  FUZZ_CHECK(spec.n_layer >= 1 && spec.n_layer <= attn::kMaxLayers, "n_layer");
  FUZZ_CHECK(spec.d_model >= 1 && spec.d_model <= attn::kMaxModelWidth, "d_model");
  FUZZ_CHECK(spec.n_kv_head >= 1 && spec.n_head % spec.n_kv_head == 0,
             "n_kv_head must divide n_head");
  FUZZ_CHECK(spec.head_dim >= 1 && spec.q_dim() <= attn::kMaxModelWidth, "head_dim");
  FUZZ_CHECK(spec.d_ff >= 1 && spec.d_ff <= attn::kMaxFfWidth, "d_ff");
  FUZZ_CHECK(spec.max_positions >= 1, "max_positions");
  FUZZ_CHECK(model.tokenizer->vocab_size() <= spec.vocab_size,
             "tokenizer larger than the model's vocabulary");

  // Two tokens (one if the context holds only one), as a prompt would be run.
  const int rows = std::min(2, spec.max_positions);
  std::vector<int> ids = {0, spec.vocab_size - 1};
  ids.resize(rows);
  attn::Batch batch;
  batch.add_sequence(ids);
  attn::KVCache cache(spec, rows, spec.n_layer);
  attn::RunState state(spec, rows, rows);
  model.transformer->forward(batch, cache, state);
  if (!model.transformer->has_head()) return;
  std::vector<float> logits(std::size_t(spec.vocab_size) * rows);
  const std::vector<int> all_rows = rows == 2 ? std::vector<int>{0, 1} : std::vector<int>{0};
  model.transformer->compute_logits(state, all_rows, logits.data());
  for (float logit : logits) FUZZ_CHECK(std::isfinite(logit), "non-finite logit");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& folder = model_folder();
  folder.write("config.json", std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    check_model(*attn::load_model(folder.path()));
  } catch (const attn::Error&) {
    // A clean refusal.
  }
  return 0;
}
