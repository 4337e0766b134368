// config.json of one architecture (FUZZ_MODEL: a shipped model folder) through load_model(),
// beside that model's real weights and a cut-down copy of its tokenizer. The outcome must be a
// model or an attn::Error; a model that loads must have sane sizes and run a forward pass of
// two tokens to finite logits (the weights are real, so anything else is a silently wrong
// answer).

#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "src/model/model.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using nlohmann::json;

// The model's tokenizer.json with the vocabulary cut to its first kKeptIds ids (and the added
// tokens), and the merges to those of kept tokens. load_model reads the tokenizer for every
// input whose model_type and vocab_size are valid; the whole GPT-2 tokenizer made that 55% of
// each execution, and the config is what this harness fuzzes. The ids keep their values (GPT-2's
// <|endoftext|> stays 50256); a vocab_size above the tokenizer's size is valid, as in real
// checkpoints whose embeddings are padded.
std::string cut_down_tokenizer(const std::filesystem::path& path) {
  constexpr int kKeptIds = 512;
  std::ifstream in(path, std::ios::binary);
  const std::string contents{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  json tokenizer = json::parse(contents);
  std::set<int> added_ids;
  for (const json& token : tokenizer["added_tokens"]) added_ids.insert(token["id"].get<int>());
  json& model = tokenizer["model"];
  json kept = json::object();
  for (const auto& [text, id] : model["vocab"].items()) {
    if (id.get<int>() < kKeptIds || added_ids.contains(id.get<int>())) kept[text] = id;
  }
  model["vocab"] = kept;
  if (model.contains("merges")) {
    json kept_merges = json::array();
    for (const json& merge : model["merges"]) {
      // "left right" (most files) or ["left", "right"] (newer ones).
      std::string left, right;
      if (merge.is_array()) {
        left = merge[0].get<std::string>();
        right = merge[1].get<std::string>();
      } else {
        const std::string pair = merge.get<std::string>();
        const std::size_t space = pair.find(' ');
        left = pair.substr(0, space);
        right = pair.substr(space + 1);
      }
      if (kept.contains(left) && kept.contains(right) && kept.contains(left + right)) {
        kept_merges.push_back(merge);
      }
    }
    model["merges"] = kept_merges;
  }
  return tokenizer.dump();
}

// A folder holding the fuzzed config.json, the cut-down tokenizer.json and links to every other
// file of the model (but the slow tokenizer's files, which tokenizer.json replaces).
const attn::fuzz::ScratchDir& model_folder() {
  static const attn::fuzz::ScratchDir folder;
  static const bool linked = [] {
    const std::filesystem::path model = attn::fuzz::shipped_model(FUZZ_MODEL);
    const std::set<std::string> replaced = {"config.json", "tokenizer.json", "vocab.json",
                                            "merges.txt", "vocab.txt"};
    for (const auto& entry : std::filesystem::directory_iterator(model)) {
      const std::string name = entry.path().filename().string();
      if (!replaced.contains(name)) folder.link(name, entry.path());
    }
    folder.write("tokenizer.json", cut_down_tokenizer(model / "tokenizer.json"));
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
