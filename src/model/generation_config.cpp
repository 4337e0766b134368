#include "src/model/generation_config.h"

#include <string>

#include "src/base/files.h"

namespace attn {

namespace {

// eos_token_id: absent, null, an id, or a list of ids.
std::vector<int> read_token_ids(const JsonFile& file, const char* key, int vocab_size) {
  if (!file.has(key)) return {};
  const nlohmann::json& value = file.json().at(key);
  const nlohmann::json list = value.is_array() ? value : nlohmann::json::array({value});
  std::vector<int> ids;
  for (const auto& id : list) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab_size) {
      file.fail(key, "must be a token id below vocab_size " + std::to_string(vocab_size) +
                         " or a list of them, got " + brief_json(value));
    }
    ids.push_back(int(id.get<int64_t>()));
  }
  return ids;
}

}  // namespace

GenerationConfig read_generation_config(const std::filesystem::path& dir, const JsonFile& config,
                                        int vocab_size, bool encoder_decoder) {
  const std::filesystem::path path = dir / "generation_config.json";
  std::optional<JsonFile> own_file;
  if (entry_exists(path)) own_file.emplace(path);
  const JsonFile& file = own_file ? *own_file : config;
  GenerationConfig generation;
  generation.eos_token_ids = read_token_ids(file, "eos_token_id", vocab_size);
  if (own_file && generation.eos_token_ids.empty()) {
    generation.eos_token_ids = read_token_ids(config, "eos_token_id", vocab_size);
  }
  generation.do_sample = file.optional_bool("do_sample");
  generation.temperature = file.optional_float_in_range("temperature", 0, 1e6);
  if (file.has("top_k")) {
    // 0 is Hugging Face's "off"; optional_positive_int would refuse it.
    generation.top_k = file.json().at("top_k") == 0 ? 0 : file.positive_int("top_k");
  }
  generation.top_p = file.optional_float_in_range("top_p", 0, 1);
  generation.min_p = file.optional_float_in_range("min_p", 0, 1);
  generation.typical_p = file.optional_float_in_range("typical_p", 0, 1);
  generation.repetition_penalty = file.optional_float_in_range("repetition_penalty", 1e-6, 1e6);
  generation.max_new_tokens = file.optional_positive_int("max_new_tokens");
  generation.num_beams = file.optional_positive_int("num_beams", 1000);
  // Read for encoder-decoders only: nothing else uses it, and a decoder's stray bos_token_id
  // must not fail its load.
  for (const char* key : {"decoder_start_token_id", "bos_token_id"}) {
    for (const JsonFile* source : {&file, &config}) {
      if (!encoder_decoder) break;
      if (generation.decoder_start_token_id || !source->has(key) || source->json()[key].is_null()) {
        continue;
      }
      const std::vector<int> ids = read_token_ids(*source, key, vocab_size);
      if (ids.size() != 1)
        source->fail(key, "must be one token id, got " + brief_json(source->json()[key]));
      generation.decoder_start_token_id = ids[0];
    }
  }
  return generation;
}

}  // namespace attn
