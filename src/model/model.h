#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <set>
#include <string>
#include <utility>
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

// Limits on the sizes config.json gives, far above every real checkpoint (the widest have
// d_model 25600 and d_ff 4 times that, vocabularies of 262k, contexts of 10M) and low enough
// that every size computed from them fits the ints of ArchSpec: 3 x d_model and 4 x d_model
// (GPT-2's default d_ff) included.
constexpr int kMaxModelWidth = 1 << 20;  // d_model
constexpr int kMaxFfWidth = 1 << 22;     // d_ff
constexpr int kMaxVocabSize = 1 << 24;
constexpr int kMaxPositions = 1 << 24;
constexpr int kMaxLayers = 1 << 12;
constexpr int kMaxTokenTypes = 1 << 12;
// Products of sizes (elements of the token embedding, of the KV cache for the full context) are
// computed in 64 bits and must stay within this: 2^40 floats is 4 TB.
constexpr int64_t kMaxElements = int64_t{1} << 40;
// LayerNorm epsilon: BERT uses 1e-12, GPT-2 1e-5, T5 and Llama 1e-6. Anything outside this range
// is a broken file (1e300 would make every norm output 0; 1e-300 is 0 in float).
constexpr double kMinNormEpsilon = 1e-30;
constexpr double kMaxNormEpsilon = 0.1;

// A size that is the product of config.json fields, each given with its name, must stay within
// kMaxElements: "config.json: n_layer x n_positions x n_embd = ... (the KV cache for the full
// context) is more than attn's limit of ... elements". Computed in 64 bits, before anything is
// allocated from it.
void check_size_product(const JsonFile& config,
                        std::initializer_list<std::pair<const char*, int>> factors,
                        const char* what);

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
