#pragma once

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "src/io/checkpoint.h"
#include "src/io/json_util.h"
#include "src/model/family_config.h"
#include "src/model/generation_config.h"
#include "src/model/transformer.h"
#include "src/tokenizer/tokenizer.h"

namespace attn {

// Looks weights up by their Hugging Face names, trying each prefix in turn (checkpoints saved
// from GPT2LMHeadModel say "transformer.h.0...", OpenAI's original GPT-2 file says "h.0..."),
// and checks every shape against what config.json implies.
//
// Weight matrices stay in the file's type, used in place from the mapping, unless the user asked
// for another (--dtype): then each is converted once, here. f16 and bf16 round every tensor, as
// if the checkpoint had been saved in that type (so an F16 file and an F32 file run with
// --dtype f16 compute the same); q8_0 and q4_0 quantize the linear layers' matrices (whose
// input width is a multiple of 32) and leave everything else as the file has it, except that
// with q4_0 the output head (the matrix that gives the logits) is q8_0.
struct ModelParts;

// A block of weights made at load (converted, repacked), from std::aligned_alloc.
struct FreeStorage {
  void operator()(float* storage) const { std::free(storage); }
};
using LoadedStorage = std::unique_ptr<float[], FreeStorage>;

class TensorSource {
 public:
  TensorSource(Checkpoint& weights, std::vector<std::string> prefixes,
               std::optional<WeightType> dtype = std::nullopt);

  bool has(const std::string& name) const;
  // A vector or small table (biases, norms, positions), as floats.
  const float* get(const std::string& name, std::vector<int64_t> shape);
  // nn.Linear NAME.weight [out, in], with NAME.bias (out) when `bias`.
  Linear linear(const std::string& name, int64_t in, int64_t out, bool bias);
  // An output head NAME.weight [out, in] without its bias, in head_type.
  Linear output_head(const std::string& name, int64_t in, int64_t out);
  // GPT-2's Conv1D NAME.weight [in, out] with NAME.bias (out). Converted, it is stored [out, in].
  Linear conv1d(const std::string& name, int64_t in, int64_t out);
  // A token embedding table NAME [rows, width], looked up by row: as a Linear width -> rows, the
  // map a tied output head multiplies by. In the type of the model's vectors (never a block
  // type).
  Linear embedding(const std::string& name, int64_t rows, int64_t width);
  // `embedding` as an output head: itself, or a copy in head_type.
  Linear tied_head(const Linear& embedding);
  // New storage for a table computed at load (Marian's sinusoidal positions), living as long
  // as the model.
  float* new_table(int64_t elements);
  // A LayerNorm stored as NAME.weight/NAME.bias or, in older BERT checkpoints, NAME.gamma/beta;
  // without `bias` (ModernBERT's norm_bias false), NAME.weight only.
  Norm layer_norm(const std::string& name, int64_t d, float eps, bool bias = true);
  // An RMSNorm: NAME.weight only.
  Norm rms_norm(const std::string& name, int64_t d, float eps);
  // A fused query/key/value projection NAME [3 x n_head x head_dim, d] whose rows are grouped
  // per head ((q, k, v) of head 0, then of head 1: GPT-NeoX, BLOOM), with its bias, repacked
  // once into separate query, key and value blocks.
  AttentionWeights per_head_fused_qkv(const std::string& name, const ArchSpec& spec);
  // Packs the matrices of the encoder stack of `parts` (an encoder's, or an encoder-decoder's
  // encoder) for the GEMM (Linear::panels), once each however many layers share it (ALBERT):
  // f32 into f32 panels, q8_0 and q4_0 into int8 panels, and bf16 that the user asked to
  // multiply in bf16 into bf16 panels where the CPU has them. Only matrices whose source can go:
  // the weight files' mapped pages, let go once packed (read again should anything need them),
  // or storage made at load, freed once all it holds is packed, but never the token embedding's,
  // which lookups read. Every product of a packed matrix reads only its panels, so no matrix is
  // held twice. Decoders' matrices stay as they are, unless `every_stack`: a decode step reads
  // the stored layout at the memory's speed (weight_kernels.h), one row through the panels
  // reaches less of it. A command that never decodes (an analysis) packs every stack.
  void pack_matrices(ModelParts& parts, bool every_stack);
  // Elements of every tensor used so far, each counted once (tied weights are one tensor).
  int64_t parameter_count() const;
  // Buffers of repacked and converted weights, which must live as long as the model.
  std::deque<LoadedStorage> take_repacked() { return std::move(repacked_); }
  // The storage of every packed panel (pack_matrices), or null.
  std::shared_ptr<std::byte> take_panels() { return std::move(panels_storage_); }

 private:
  std::string resolve(const std::string& name) const;
  // The tensor's elements in place, in the file's type.
  Linear stored(const std::string& name, std::vector<int64_t> shape);
  // A matrix [out, in] of floats as a Linear of `type` in new storage.
  Linear from_floats(const float* values, int64_t in, int64_t out, WeightType type);
  // `source` (any layout) converted to `type`, stored [out, in]; the source's pages of the
  // mapping are released.
  Linear converted(const Linear& source, WeightType type);
  // The type a matrix of `in` inputs stored as `file_type` is computed in.
  WeightType matrix_type(WeightType file_type, int64_t in) const;
  // `linear` with bf16_products set where the user asked to compute in bf16 (ops.h).
  Linear with_requested_products(Linear linear) const;
  // The type an output head of `in` inputs stored as `file_type` is computed in.
  WeightType head_type(WeightType file_type, int64_t in) const;
  // The type vectors and embeddings stored as `file_type` are used in.
  WeightType vector_type(WeightType file_type) const;
  // Storage that lives as long as the model, aligned for every weight type.
  void* allocate(std::size_t bytes);

  Checkpoint& weights_;
  std::vector<std::string> prefixes_;
  std::optional<WeightType> dtype_;
  std::set<std::string> used_;
  std::deque<LoadedStorage> repacked_;
  std::shared_ptr<std::byte> panels_storage_;
  // Each allocate()d block, by its first byte: its size and its entry of repacked_.
  struct Allocation {
    std::size_t bytes;
    LoadedStorage* storage;
  };
  std::map<const std::byte*, Allocation> allocations_;
  // The allocation `data` lies in, or nullptr.
  const std::pair<const std::byte* const, Allocation>* allocation_of(const void* data) const;
  // Scratch of converted(), kept between calls: a fresh allocation of this size would be new
  // pages, which the kernel must fault in and zero for every matrix.
  std::vector<float> values_;         // (out, in)
  std::vector<float> stored_values_;  // (in, out) before the transposition
};

// What a family file produces: the generic transformer's description and weights.
struct ModelParts {
  ArchSpec spec;
  TransformerWeights weights;
  PositionScheme positions;
  // Why the model has no output head, when it has none (e.g. a bare BertModel).
  std::string missing_head;
  // A classifier's labels, by id (config.json's id2label); empty without a classifier head.
  std::vector<std::string> labels;
  // An encoder-decoder's encoder; the parts above are then its decoder, whose layers have
  // cross-attention.
  std::unique_ptr<ModelParts> encoder = nullptr;
};

// A decoder's output head: the token embedding when `tied` (tie_word_embeddings), else the
// tensor NAME.weight [vocab, d]; with NAME.bias (vocab) when `bias`.
OutputHead decoder_head(TensorSource& tensors, const ModelParts& parts, bool tied,
                        const std::string& name, bool bias);

// Tensor names of an encoder's masked-LM head.
struct MaskedLmHeadNames {
  std::string dense;    // nn.Linear d_model -> width
  std::string norm;     // LayerNorm over width
  std::string bias;     // (vocab) the decoder's bias
  std::string decoder;  // NAME.weight (vocab, width) when stored; else tied to the token embedding
};

// The masked-LM head (dense, `activation`, LayerNorm, decoder) into parts.weights.head, `width`
// wide (d_model, or ALBERT's embedding size); or, when the file has none of its tensors (a bare
// BertModel), the reason into parts.missing_head.
void read_masked_lm_head(TensorSource& tensors, ModelParts& parts, const MaskedLmHeadNames& names,
                         int64_t width, Activation activation, float eps);

// BERT-style embeddings under "embeddings.": word_embeddings, token_type_embeddings (when
// spec.n_token_types > 0), position_embeddings (spec.max_positions + positions.table_offset
// rows), all spec.embedding_width() wide, and their LayerNorm. Shared by the encoder families.
void read_bert_embeddings(TensorSource& tensors, ModelParts& parts, float eps);

// Tensor names, after a layer's prefix, of a BERT-style post-norm layer: biased projections and
// two LayerNorms.
struct EncoderLayerNames {
  std::string query, key, value, output;  // attention projections
  std::string attention_norm;             // LayerNorm after the attention's residual add
  std::string up, down;                   // feed-forward
  std::string ffn_norm;                   // LayerNorm after the feed-forward's residual add
};

// One such layer, its tensors named prefix + each name, with spec's sizes.
LayerWeights read_encoder_layer(TensorSource& tensors, const ArchSpec& spec,
                                const std::string& prefix, const EncoderLayerNames& names,
                                float eps);

// Tensor names of a classifier head, after the family's prefixes.
struct ClassifierHeadNames {
  std::string dense;  // a sequence classifier's d -> d layer before its output ("pooler.dense")
  ClassifierHead::DenseActivation activation = ClassifierHead::DenseActivation::kTanh;
  std::string classifier;        // a sequence classifier's output layer
  std::string token_classifier;  // a token classifier's output layer
};

// For a config.json architecture that ends in ForSequenceClassification or
// ForTokenClassification: its head into parts.weights.classifier and id2label into
// parts.labels (their sizes must agree). Nothing for any other architecture.
void read_classifier_head(const JsonFile& config, TensorSource& tensors, ModelParts& parts,
                          const ClassifierHeadNames& names);

// RoBERTa's masked-LM head "lm_head" (dense, exact GELU, layer_norm, decoder tied unless stored),
// also MPNet's.
void read_roberta_lm_head(TensorSource& tensors, ModelParts& parts, float eps);

// BERT's LayerNorm epsilon: config.json's layer_norm_eps, 1e-12 when absent.
float read_bert_norm_eps(const JsonFile& config);

// The BERT encoder: config.json sizes, embeddings and post-norm layers under BERT's tensor names,
// its LayerNorms with epsilon `eps`; shared by BERT, RoBERTa and XLM-R, which add their heads
// (with the same epsilon) and position rules.
ModelParts map_bert_encoder(const JsonFile& config, TensorSource& tensors, float eps);

// Family files: map config.json and the Hugging Face tensor names onto ModelParts.
ModelParts map_gpt2(const JsonFile& config, TensorSource& tensors);
ModelParts map_bert(const JsonFile& config, TensorSource& tensors);
ModelParts map_roberta(const JsonFile& config, TensorSource& tensors);
ModelParts map_distilbert(const JsonFile& config, TensorSource& tensors);
ModelParts map_albert(const JsonFile& config, TensorSource& tensors);
ModelParts map_mpnet(const JsonFile& config, TensorSource& tensors);
ModelParts map_llama(const JsonFile& config, TensorSource& tensors);
ModelParts map_qwen2(const JsonFile& config, TensorSource& tensors);
ModelParts map_qwen3(const JsonFile& config, TensorSource& tensors);
ModelParts map_modernbert(const JsonFile& config, TensorSource& tensors);
ModelParts map_smollm3(const JsonFile& config, TensorSource& tensors);
ModelParts map_phi3(const JsonFile& config, TensorSource& tensors);
ModelParts map_gemma2(const JsonFile& config, TensorSource& tensors);
ModelParts map_gemma3_text(const JsonFile& config, TensorSource& tensors);
ModelParts map_gpt_neox(const JsonFile& config, TensorSource& tensors);
ModelParts map_phi(const JsonFile& config, TensorSource& tensors);
ModelParts map_bloom(const JsonFile& config, TensorSource& tensors);
ModelParts map_marian(const JsonFile& config, TensorSource& tensors);
ModelParts map_t5(const JsonFile& config, TensorSource& tensors);

// What a model is made of, which decides the commands that run it.
enum class ModelKind {
  kDecoder,         // generate, perplexity (GPT-2, Llama, ...)
  kEncoder,         // fill-mask, embed (BERT, ...)
  kEncoderDecoder,  // translate (Marian, T5)
};

// The families attn runs of one kind, for help and errors: "BERT, RoBERTa, XLM-R, ...".
std::string family_names(ModelKind kind);

// A loaded Hugging Face model folder.
struct Model {
  std::filesystem::path dir;
  std::string model_type;               // config.json model_type ("gpt2", "bert", "llama", ...)
  std::string architecture;             // config.json architectures[0], when given
  std::unique_ptr<Checkpoint> weights;  // the weight files, mapped
  std::deque<LoadedStorage> repacked_weights;  // weights rearranged or converted at load
  std::shared_ptr<std::byte>
      packed_panels;  // the encoder's f32 matrices packed for the GEMM, or null
  // The model, or an encoder-decoder's decoder (whose layers then have cross-attention).
  std::unique_ptr<Transformer> transformer;
  std::unique_ptr<Transformer> encoder;  // an encoder-decoder's encoder, else null
  std::unique_ptr<Tokenizer> tokenizer;
  GenerationConfig generation;
  int64_t parameter_count = 0;
  std::string missing_head;
  std::vector<std::string> labels;  // a classifier's labels by id (config.json's id2label)
  std::string problem_type;         // config.json's problem_type, when given
  double load_ms = 0;

  const ArchSpec& spec() const { return transformer->spec(); }
  // The stack that reads the input text: an encoder-decoder's encoder, else the model itself.
  const Transformer& input_stack() const { return encoder ? *encoder : *transformer; }
  ModelKind kind() const;
  std::string name() const;
  // What the model is, with the commands that fit it, for messages refusing a command:
  // "BertForTokenClassification, a token classifier (try attn ner)".
  std::string description() const;
  // Refuses an encoder-decoder for a command that runs one stack alone (`command`: "generate"),
  // pointing to attn translate.
  void require_single_stack(const std::string& command) const;
  // The weight types the matrices are computed in, the most bytes first: "f16", or
  // "q8_0 + f32" when some matrices could not be quantized.
  std::string compute_dtype() const;
};

// The passes a command runs: any, one row at a time included (generation), or mostly passes over
// many rows (an analysis, a perplexity), for which every stack's matrices are packed at load
// (TensorSource::pack_matrices). A one-row pass over packed matrices is right, only slower.
enum class Passes { kAny, kManyRows };

// Loads config.json, the weights (see Checkpoint) and the tokenizer of a model folder, computing in
// the file's weight types or, when given, in `dtype` (see TensorSource). Errors name the file and
// what is wrong.
std::unique_ptr<Model> load_model(const std::filesystem::path& dir,
                                  std::optional<WeightType> dtype = std::nullopt,
                                  Passes passes = Passes::kAny);

}  // namespace attn
