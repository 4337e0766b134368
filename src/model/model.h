#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "src/io/json_util.h"
#include "src/io/safetensors.h"
#include "src/model/transformer.h"
#include "src/tokenizer/tokenizer.h"

namespace attn {

// Looks weights up by their Hugging Face names, trying each prefix in turn (checkpoints saved
// from GPT2LMHeadModel say "transformer.h.0...", OpenAI's original GPT-2 file says "h.0..."),
// and checks every shape against what config.json implies.
class TensorSource {
 public:
  TensorSource(SafeTensors& file, std::vector<std::string> prefixes);

  bool has(const std::string& name) const;
  const float* get(const std::string& name, std::vector<int64_t> shape);
  // A LayerNorm stored as NAME.weight/NAME.bias or, in older BERT checkpoints, NAME.gamma/beta.
  Norm norm(const std::string& name, int64_t d, float eps);
  // Elements of every tensor used so far, each counted once (tied weights are one tensor).
  int64_t parameter_count() const;

 private:
  std::string resolve(const std::string& name) const;

  SafeTensors& file_;
  std::vector<std::string> prefixes_;
  std::set<std::string> used_;
};

// What an architecture file produces: the generic transformer's description and weights.
struct ModelParts {
  ArchSpec spec;
  TransformerWeights weights;
  std::unique_ptr<PositionEncoding> positions;
  // Why the model has no output head, when it has none (e.g. a bare BertModel).
  std::string missing_head;
};

// Architecture files: map config.json and the Hugging Face tensor names onto ModelParts.
ModelParts map_gpt2(const JsonFile& config, TensorSource& tensors);
ModelParts map_bert(const JsonFile& config, TensorSource& tensors);

// A loaded Hugging Face model folder.
struct Model {
  std::filesystem::path dir;
  std::string model_type;    // config.json model_type ("gpt2", "bert")
  std::string architecture;  // config.json architectures[0], when given
  std::unique_ptr<SafeTensors> weights_file;
  std::unique_ptr<Transformer> transformer;
  std::unique_ptr<Tokenizer> tokenizer;
  int64_t parameter_count = 0;
  std::string missing_head;
  double load_ms = 0;

  const ArchSpec& spec() const { return transformer->spec(); }
  std::string name() const;
};

// Loads config.json, model.safetensors and the tokenizer of a model folder. Errors name the
// file and what is wrong.
std::unique_ptr<Model> load_model(const std::filesystem::path& dir);

}  // namespace attn
