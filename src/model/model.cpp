#include "src/model/model.h"

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <system_error>

#include "src/base/error.h"
#include "src/io/hub_cache.h"
#include "src/kernels/gemm.h"
#include "src/kernels/gemm_int8.h"
#include "src/kernels/weight_conversion.h"
#include "src/kernels/weight_kernels.h"

namespace attn {

namespace {

WeightType file_weight_type(const std::string& dtype) {
  return dtype == "F16" ? WeightType::kF16 : dtype == "BF16" ? WeightType::kBF16 : WeightType::kF32;
}

// values (n) = the n elements at `data`, of `type`, as floats.
void to_floats(float* values, const void* data, WeightType type, long n) {
  weight_kernels(type).to_floats(values, data, int(n));
}

// `bytes` of storage (from std::aligned_alloc, so std::free) that every pass reads whole: from
// 2 MiB on, in huge pages where the system gives them (MADV_HUGEPAGE). With 4 KiB pages, a
// one-row product over a large matrix (a tied output head) misses the TLB at every page, and
// the hardware prefetchers stop at each page's end: measured, the bf16 head of BERT-base at one
// row read 47 MB at a third of the one-row kernel's speed.
void* allocate_for_passes(std::size_t bytes) {
  constexpr std::size_t kHugePage = std::size_t(2) << 20;
  const std::size_t alignment = bytes >= kHugePage ? kHugePage : 64;
  auto* storage = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
  if (!storage) throw std::bad_alloc();
  if (alignment == kHugePage) ::madvise(storage, bytes, MADV_HUGEPAGE);  // advice only
  return storage;
}

}  // namespace

TensorSource::TensorSource(Checkpoint& weights, std::vector<std::string> prefixes,
                           std::optional<WeightType> dtype)
    : weights_(weights), prefixes_(std::move(prefixes)), dtype_(dtype) {}

std::string TensorSource::resolve(const std::string& name) const {
  for (const auto& prefix : prefixes_) {
    if (weights_.find(prefix + name)) return prefix + name;
  }
  return prefixes_.front() + name;
}

bool TensorSource::has(const std::string& name) const { return weights_.find(resolve(name)); }

WeightType TensorSource::vector_type(WeightType file_type) const {
  return dtype_ && !is_block_type(*dtype_) ? *dtype_ : file_type;
}

WeightType TensorSource::matrix_type(WeightType file_type, int64_t in) const {
  if (dtype_ && is_block_type(*dtype_)) return in % kQuantBlockSize == 0 ? *dtype_ : file_type;
  return vector_type(file_type);
}

WeightType TensorSource::head_type(WeightType file_type, int64_t in) const {
  // The head decides every token; 4 bits there cost more accuracy than anywhere else, and its
  // reads are one matrix of many (ggml's q4_0 recipe keeps it at 6 bits, q6_K).
  if (dtype_ == WeightType::kQ4_0) return in % kQuantBlockSize == 0 ? WeightType::kQ8_0 : file_type;
  return matrix_type(file_type, in);
}

void* TensorSource::allocate(std::size_t bytes) {
  // Not value-initialized: every byte is written before it is read.
  LoadedStorage& storage = repacked_.emplace_back(
      static_cast<float*>(allocate_for_passes(std::max<std::size_t>(bytes, 1))));
  allocations_[reinterpret_cast<const std::byte*>(storage.get())] = {.bytes = bytes,
                                                                     .storage = &storage};
  return storage.get();
}

const std::pair<const std::byte* const, TensorSource::Allocation>* TensorSource::allocation_of(
    const void* data) const {
  const auto* at = static_cast<const std::byte*>(data);
  auto next = allocations_.upper_bound(at);
  if (next == allocations_.begin()) return nullptr;
  const auto& found = *std::prev(next);
  return at < found.first + found.second.bytes ? &found : nullptr;
}

Linear TensorSource::with_requested_products(Linear linear) const {
  linear.bf16_products = dtype_ == WeightType::kBF16 && linear.type == WeightType::kBF16;
  return linear;
}

Linear TensorSource::stored(const std::string& name, std::vector<int64_t> shape) {
  const std::string full_name = resolve(name);
  if (!weights_.find(full_name)) {
    std::string also;
    for (std::size_t i = 1; i < prefixes_.size(); ++i) {
      also += (also.empty() ? " (nor '" : ", nor '") + prefixes_[i] + name + "'";
    }
    throw Error(weights_.source().string() + ": missing tensor '" + full_name + "'" +
                (also.empty() ? "" : also + ")"));
  }
  const TensorElements elements = weights_.elements(full_name, shape);
  used_.insert(full_name);
  const int64_t columns = shape.size() == 2 ? shape[1] : shape[0];
  return Linear{.weight = elements.data,
                .in = int(columns),
                .out = int(shape.size() == 2 ? shape[0] : 1),
                .row_stride = int(columns),
                .type = file_weight_type(elements.dtype)};
}

const float* TensorSource::get(const std::string& name, std::vector<int64_t> shape) {
  const Linear tensor = stored(name, shape);
  const long n = long(tensor.in) * tensor.out;
  const WeightType type = vector_type(tensor.type);
  if (tensor.type == WeightType::kF32 && type == WeightType::kF32) {
    return static_cast<const float*>(tensor.weight);
  }
  // (n) floats: the stored values, rounded to `type` when that is narrower.
  auto* values = static_cast<float*>(allocate(n * sizeof(float)));
  to_floats(values, tensor.weight, tensor.type, n);
  if (type != WeightType::kF32 && type != tensor.type) {
    std::vector<std::byte> rounded(storage_bytes(type, n));
    convert_row(type, values, rounded.data(), n);
    to_floats(values, rounded.data(), type, n);
  }
  return values;
}

Linear TensorSource::from_floats(const float* values, int64_t in, int64_t out, WeightType type) {
  auto* storage = static_cast<std::byte*>(allocate(storage_bytes(type, in) * out));
  for (int64_t j = 0; j < out; ++j) {
    convert_row(type, values + j * in, storage + j * storage_bytes(type, in), in);
  }
  return Linear{
      .weight = storage, .in = int(in), .out = int(out), .row_stride = int(in), .type = type};
}

Linear TensorSource::converted(const Linear& source, WeightType type) {
  const long n = long(source.in) * source.out;
  values_.resize(n);
  float* values = values_.data();  // (out, in)
  if (!source.in_out_layout) {
    to_floats(values, source.weight, source.type, n);
  } else {
    // Converted matrices are stored [out, in], the layout whose rows the kernels of every type
    // read (a block type's blocks run along the input). Transposed in tiles that stay in cache.
    stored_values_.resize(n);
    const float* stored_values = stored_values_.data();  // (in, out)
    to_floats(stored_values_.data(), source.weight, source.type, n);
    constexpr int kTile = 64;
    for (int i0 = 0; i0 < source.in; i0 += kTile) {
      for (int j0 = 0; j0 < source.out; j0 += kTile) {
        for (int i = i0; i < std::min(i0 + kTile, source.in); ++i) {
          for (int j = j0; j < std::min(j0 + kTile, source.out); ++j) {
            values[long(j) * source.in + i] = stored_values[long(i) * source.out + j];
          }
        }
      }
    }
  }
  weights_.release(source.weight, storage_bytes(source.type, n));
  Linear result = from_floats(values, source.in, source.out, type);
  result.bias = source.bias;
  return result;
}

Linear TensorSource::linear(const std::string& name, int64_t in, int64_t out, bool bias) {
  Linear linear = stored(name + ".weight", {out, in});
  const WeightType type = matrix_type(linear.type, in);
  if (type != linear.type) linear = converted(linear, type);
  if (bias) linear.bias = get(name + ".bias", {out});
  return with_requested_products(linear);
}

Linear TensorSource::output_head(const std::string& name, int64_t in, int64_t out) {
  const Linear head = stored(name + ".weight", {out, in});
  const WeightType type = head_type(head.type, in);
  return with_requested_products(type == head.type ? head : converted(head, type));
}

Linear TensorSource::conv1d(const std::string& name, int64_t in, int64_t out) {
  Linear linear = stored(name + ".weight", {in, out});
  linear.in = int(in);
  linear.out = int(out);
  linear.row_stride = int(out);
  linear.in_out_layout = true;
  const WeightType type = matrix_type(linear.type, in);
  if (type != linear.type) linear = converted(linear, type);
  linear.bias = get(name + ".bias", {out});
  return with_requested_products(linear);
}

Linear TensorSource::embedding(const std::string& name, int64_t rows, int64_t width) {
  const Linear table = stored(name, {rows, width});
  const WeightType type = vector_type(table.type);
  return type == table.type ? table : converted(table, type);
}

Linear TensorSource::tied_head(const Linear& embedding) {
  const WeightType type = head_type(embedding.type, embedding.in);
  return with_requested_products(type == embedding.type ? embedding : converted(embedding, type));
}

Norm TensorSource::layer_norm(const std::string& name, int64_t d, float eps, bool bias) {
  const bool old_names = !has(name + ".weight") && has(name + ".gamma");
  return Norm{.weight = get(name + (old_names ? ".gamma" : ".weight"), {d}),
              .bias = bias ? get(name + (old_names ? ".beta" : ".bias"), {d}) : nullptr,
              .eps = eps,
              .kind = NormKind::kLayerNorm};
}

Norm TensorSource::rms_norm(const std::string& name, int64_t d, float eps) {
  return Norm{.weight = get(name + ".weight", {d}), .eps = eps, .kind = NormKind::kRmsNorm};
}

AttentionWeights TensorSource::per_head_fused_qkv(const std::string& name, const ArchSpec& spec) {
  const int64_t d = spec.d_model, head_dim = spec.head_dim, n_head = spec.n_head;
  const int64_t width = n_head * head_dim;  // of each of q, k and v
  const Linear fused = stored(name + ".weight", {3 * width, d});
  std::vector<float> weight(std::size_t(3 * width) * d);  // (n_head, 3, head_dim, d)
  to_floats(weight.data(), fused.weight, fused.type, long(weight.size()));
  const float* bias = get(name + ".bias", {3 * width});
  // Stored rows: (n_head, 3, head_dim); repacked: (3, n_head, head_dim), each row d wide, and
  // the bias likewise.
  std::vector<float> packed(weight.size());
  auto* packed_bias = static_cast<float*>(allocate(3 * width * sizeof(float)));
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t part = 0; part < 3; ++part) {
      const int64_t from = (h * 3 + part) * head_dim, to = part * width + h * head_dim;
      std::copy_n(weight.data() + from * d, head_dim * d, packed.data() + to * d);
      std::copy_n(bias + from, head_dim, packed_bias + to);
    }
  }
  const WeightType type = matrix_type(fused.type, d);
  auto block = [&](int part) {
    Linear linear = from_floats(packed.data() + part * width * d, d, width, type);
    linear.bias = packed_bias + part * width;
    return with_requested_products(linear);
  };
  return AttentionWeights{.query = block(0), .key = block(1), .value = block(2), .output = {}};
}

namespace {

// Calls visit(linear) for every weight matrix of `weights` that products read (not the token
// embedding, which is looked up by row).
template <class Visit>
void for_each_matrix(TransformerWeights& weights, const Visit& visit) {
  auto attention = [&](AttentionWeights& a) {
    for (Linear* linear : {&a.query, &a.key, &a.value, &a.output}) visit(*linear);
  };
  for (LayerWeights& layer : weights.layers) {
    attention(layer.attention);
    if (layer.cross) attention(layer.cross->attention);
    if (layer.ffn.gate) visit(*layer.ffn.gate);
    visit(layer.ffn.up);
    visit(layer.ffn.down);
  }
  if (weights.embedding_projection) visit(*weights.embedding_projection);
  if (weights.head) {
    if (weights.head->transform) visit(weights.head->transform->dense);
    visit(weights.head->decoder);
  }
  if (weights.classifier) {
    if (weights.classifier->dense) visit(*weights.classifier->dense);
    visit(weights.classifier->classifier);
  }
}

// Bytes from a matrix's first stored element to the end of its last.
std::size_t stored_span(const Linear& linear) {
  const long rows = linear.in_out_layout ? linear.in : linear.out;
  const long row = linear.in_out_layout ? linear.out : linear.in;
  return storage_bytes(linear.type, (rows - 1) * linear.row_stride + row);
}

}  // namespace

void TensorSource::pack_matrices(ModelParts& parts, bool every_stack) {
  std::vector<TransformerWeights*> stacks;
  if (every_stack || !parts.spec.causal) stacks.push_back(&parts.weights);
  if (parts.encoder) stacks.push_back(&parts.encoder->weights);
  auto for_each_packable = [&](const auto& visit) {
    for (TransformerWeights* stack : stacks) for_each_matrix(*stack, visit);
  };
  const GemmKernels& f32_kernels = gemm_kernels();
  const Int8GemmKernels& int8_kernels = int8_gemm_kernels();
  const Bf16GemmKernels* bf16_kernels = f32_kernels.bf16;
  // Whether the matrix's source can go once it is packed: pages of the mapping (read again
  // should anything need them), or storage made at load that no token embedding shares (lookups
  // read it).
  auto source_can_go = [&](const Linear& linear) {
    if (weights_.maps(linear.weight, stored_span(linear))) return true;
    const auto* storage = allocation_of(linear.weight);
    if (!storage) return false;
    for (const ModelParts* stack : {&parts, parts.encoder.get()}) {
      if (stack && storage == allocation_of(stack->weights.token_embedding.weight)) return false;
    }
    return true;
  };
  // The kernels a matrix is packed for, and its panels' bytes; 0 bytes: it stays as it is. f32
  // weights go into the f32 panels, q8_0 and q4_0 into the int8 ones, bf16 weights the user
  // asked to multiply in bf16 (Linear::bf16_products) into the bf16 ones where the CPU has them.
  auto packing = [&](const Linear& linear) -> std::pair<const void*, std::size_t> {
    if (!linear.weight || !source_can_go(linear)) return {nullptr, 0};
    if (linear.type == WeightType::kF32) {
      return {&f32_kernels, std::size_t(weight_panels_size(f32_kernels, linear)) * sizeof(float)};
    }
    if (is_block_type(linear.type)) {
      return {&int8_kernels, std::size_t(int8_weight_panels_bytes(int8_kernels, linear))};
    }
    if (linear.type == WeightType::kBF16 && linear.bf16_products && bf16_kernels) {
      return {bf16_kernels,
              std::size_t(bf16_weight_panels_size(*bf16_kernels, linear)) * sizeof(uint32_t)};
    }
    return {nullptr, 0};
  };
  // The matrices to pack, each once (ALBERT's layers share theirs): where each one's panels
  // start in the storage (64-byte aligned), the kernels they are for, and whether they are
  // packed yet.
  struct Packing {
    std::size_t offset;
    const void* kernels;
    bool done = false;
  };
  std::map<const void*, Packing> packings;
  std::size_t total = 0;
  for_each_packable([&](Linear& linear) {
    const auto [kernels, bytes] = packing(linear);
    if (bytes == 0 || packings.contains(linear.weight)) return;
    packings[linear.weight] = {.offset = total, .kernels = kernels};
    total += (bytes + 63) / 64 * 64;
  });
  if (total == 0) return;
  // One block in huge pages where the system gives them (2 MiB): a pass reads every panel, and
  // 4 KiB pages would cost as many page faults at load, and TLB misses at every pass, as there
  // are pages.
  auto* storage = static_cast<std::byte*>(allocate_for_passes(total));
  panels_storage_ = std::shared_ptr<std::byte>(storage, std::free);
  // Bytes of each allocation (by its start) whose matrices are packed so far.
  std::map<const std::byte*, std::size_t> allocation_packed;
  auto let_go = [&](const Linear& linear) {
    if (weights_.maps(linear.weight, stored_span(linear))) {
      weights_.release(linear.weight, stored_span(linear));
      return;
    }
    // Storage whose every matrix is packed (a fused matrix's slices together) is no longer
    // read: freed at once, so that it and the panels are not held together.
    const auto& [start, allocation] = *allocation_of(linear.weight);
    if ((allocation_packed[start] += stored_span(linear)) == allocation.bytes) {
      allocation.storage->reset();
      malloc_trim(0);  // to the system, not to the heap's free lists
    }
  };
  for_each_packable([&](Linear& linear) {
    const auto found = packings.find(linear.weight);
    if (found == packings.end()) return;
    Packing& entry = found->second;
    std::byte* panels = storage + entry.offset;
    const void* kernels = entry.kernels;
    if (!entry.done) {
      entry.done = true;
      if (kernels == &f32_kernels) {
        pack_weight_panels(f32_kernels, reinterpret_cast<float*>(panels), linear);
      } else if (kernels == &int8_kernels) {
        pack_int8_weight_panels(int8_kernels, panels, linear);
      } else {
        pack_bf16_weight_panels(*bf16_kernels, reinterpret_cast<uint32_t*>(panels), linear);
      }
      let_go(linear);
    }
    linear.panels = panels;
    linear.packed_by = kernels;
  });
}

int64_t TensorSource::parameter_count() const {
  int64_t count = 0;
  for (const auto& name : used_) {
    int64_t elements = 1;
    for (int64_t dim : weights_.find(name)->shape) elements *= dim;
    count += elements;
  }
  return count;
}

OutputHead decoder_head(TensorSource& tensors, const ModelParts& parts, bool tied,
                        const std::string& name, bool bias) {
  const int64_t d = parts.spec.d_model, vocab = parts.spec.vocab_size;
  Linear decoder =
      tied ? tensors.tied_head(parts.weights.token_embedding) : tensors.output_head(name, d, vocab);
  if (bias) decoder.bias = tensors.get(name + ".bias", {vocab});
  return OutputHead{.transform = std::nullopt, .decoder = decoder};
}

void read_classifier_head(const JsonFile& config, TensorSource& tensors, ModelParts& parts,
                          const ClassifierHeadNames& names) {
  const nlohmann::json& architectures = config.json().value("architectures", nlohmann::json());
  if (!architectures.is_array() || architectures.empty() || !architectures[0].is_string()) return;
  const std::string architecture = architectures[0].get<std::string>();
  const bool per_token = architecture.ends_with("ForTokenClassification");
  if (!per_token && !architecture.ends_with("ForSequenceClassification")) return;

  // id2label: {"0": "NEGATIVE", "1": "POSITIVE"}, every id from 0 on once.
  const std::string file = config.path().string();
  const nlohmann::json& id2label = config.json().value("id2label", nlohmann::json());
  if (!id2label.is_object() || id2label.empty()) {
    throw Error(file + ": " + architecture + " needs id2label, an object of label names by id");
  }
  std::vector<std::string> labels(id2label.size());
  std::vector<bool> seen(id2label.size());
  for (const auto& [key, value] : id2label.items()) {
    std::size_t id = 0;
    const bool number =
        !key.empty() && key.size() < 8 && key.find_first_not_of("0123456789") == std::string::npos;
    if (number) id = std::stoul(key);
    if (!number || id >= labels.size() || seen[id] || !value.is_string()) {
      throw Error(file + ": id2label must name each id from 0 to " +
                  std::to_string(labels.size() - 1) + " once, got " + brief_json(id2label));
    }
    seen[id] = true;
    labels[id] = value.get<std::string>();
  }

  const int64_t d = parts.spec.d_model;
  const int64_t n_labels = static_cast<int64_t>(labels.size());
  ClassifierHead head;
  if (per_token) {
    head.pooling = ClassifierHead::Pooling::kEveryToken;
  } else if (!names.dense.empty()) {
    head.dense = tensors.linear(names.dense, d, d, true);
    head.dense_activation = names.activation;
  }
  try {
    head.classifier =
        tensors.linear(per_token ? names.token_classifier : names.classifier, d, n_labels, true);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (" + std::to_string(n_labels) +
                " labels in its id2label)");
  }
  parts.weights.classifier = std::move(head);
  parts.labels = std::move(labels);
}

void read_masked_lm_head(TensorSource& tensors, ModelParts& parts, const MaskedLmHeadNames& names,
                         int64_t width, Activation activation, float eps) {
  // All of it, or (a bare encoder) none of it.
  std::string missing;
  for (const std::string& name :
       {names.dense + ".weight", names.dense + ".bias", names.norm, names.bias}) {
    const bool present = name == names.norm
                             ? tensors.has(name + ".weight") || tensors.has(name + ".gamma")
                             : tensors.has(name);
    if (!present) missing += (missing.empty() ? "" : ", ") + name;
  }
  if (!missing.empty()) {
    parts.missing_head = "the weights have no masked-LM head (missing " + missing + ")";
    return;
  }
  const int64_t d = parts.spec.d_model, vocab = parts.spec.vocab_size;
  const std::string decoder_weight = names.decoder + ".weight";
  Linear decoder = tensors.has(decoder_weight) ? tensors.output_head(names.decoder, width, vocab)
                                               : tensors.tied_head(parts.weights.token_embedding);
  decoder.bias = tensors.get(names.bias, {vocab});
  parts.weights.head =
      OutputHead{.transform = HeadTransform{.dense = tensors.linear(names.dense, d, width, true),
                                            .activation = activation,
                                            .norm = tensors.layer_norm(names.norm, width, eps)},
                 .decoder = decoder};
}

LayerWeights read_encoder_layer(TensorSource& tensors, const ArchSpec& spec,
                                const std::string& prefix, const EncoderLayerNames& names,
                                float eps) {
  const int64_t d = spec.d_model, ff = spec.d_ff;
  auto dense = [&](const std::string& name, int64_t in, int64_t out) {
    return tensors.linear(prefix + name, in, out, true);
  };
  return LayerWeights{
      .attention_norm = tensors.layer_norm(prefix + names.attention_norm, d, eps),
      .attention = {.query = dense(names.query, d, d),
                    .key = dense(names.key, d, d),
                    .value = dense(names.value, d, d),
                    .output = dense(names.output, d, d)},
      .ffn_norm = tensors.layer_norm(prefix + names.ffn_norm, d, eps),
      .ffn = {.gate = std::nullopt, .up = dense(names.up, d, ff), .down = dense(names.down, ff, d)},
  };
}

void read_bert_embeddings(TensorSource& tensors, ModelParts& parts, float eps) {
  const ArchSpec& spec = parts.spec;
  const int64_t e = spec.embedding_width();
  const std::string prefix = "embeddings.";
  parts.weights.token_embedding =
      tensors.embedding(prefix + "word_embeddings.weight", spec.vocab_size, e);
  if (spec.n_token_types > 0) {
    parts.weights.token_type_embedding =
        tensors.get(prefix + "token_type_embeddings.weight", {spec.n_token_types, e});
  }
  parts.positions.learned_table =
      tensors.get(prefix + "position_embeddings.weight",
                  {int64_t(parts.positions.table_offset) + spec.max_positions, e});
  parts.weights.embedding_norm = tensors.layer_norm(prefix + "LayerNorm", e, eps);
}

float* TensorSource::new_table(int64_t elements) {
  return static_cast<float*>(allocate(std::size_t(elements) * sizeof(float)));
}

std::string Model::name() const {
  // A model of the Hugging Face cache by its id, not by the commit its folder is named after.
  return repo_id_of_snapshot(dir).value_or(dir.filename().string());
}

ModelKind Model::kind() const {
  if (encoder) return ModelKind::kEncoderDecoder;
  return spec().causal ? ModelKind::kDecoder : ModelKind::kEncoder;
}

std::string Model::description() const {
  const ClassifierHead* head = transformer->classifier();
  const std::string name = architecture.empty() ? model_type : architecture;
  if (head && head->pooling == ClassifierHead::Pooling::kEveryToken) {
    return name + ", a token classifier (try attn ner)";
  }
  if (head) return name + ", a sequence classifier (try attn classify or attn rerank)";
  if (architecture.ends_with("ForSequenceClassification") ||
      architecture.ends_with("ForTokenClassification")) {
    return name + ", whose classifier head attn does not read for " + model_type;
  }
  switch (kind()) {
    case ModelKind::kEncoderDecoder:
      return name + ", a sequence-to-sequence model (try attn translate)";
    case ModelKind::kDecoder:
      return name + ", a language model (try attn generate)";
    case ModelKind::kEncoder:
      break;
  }
  return !transformer->has_head()
             ? name + ", an encoder without a head (try attn embed)"
             : name + ", a masked language model (try attn fill-mask or attn embed)";
}

void Model::require_single_stack(const std::string& command) const {
  if (encoder) {
    throw UsageError(command + ": '" + model_type +
                     "' is an encoder-decoder (translation) model; use attn translate");
  }
}

std::string Model::compute_dtype() const {
  // The types of the weight matrices, the most bytes first ("q8_0", or "q8_0 + f32" when some
  // matrices could not be quantized).
  const std::array<int64_t, kWeightTypeCount> bytes = transformer->matrix_bytes_per_token();
  std::vector<int> types;
  for (int type = 0; type < kWeightTypeCount; ++type) {
    if (bytes[type] > 0) types.push_back(type);
  }
  std::stable_sort(types.begin(), types.end(), [&](int a, int b) { return bytes[a] > bytes[b]; });
  std::string names;
  for (int type : types)
    names += (names.empty() ? "" : " + ") + std::string(weight_type_name(WeightType(type)));
  return names;
}

namespace {

struct Architecture {
  const char* model_type;
  const char* family;  // its name for people, in help and errors ("GPT-2")
  ModelKind kind;
  std::vector<std::string> tensor_prefixes;
  std::function<ModelParts(const JsonFile&, TensorSource&)> map;
};

const std::vector<Architecture>& architectures() {
  static const std::vector<Architecture> table = {
      {"gpt2", "GPT-2", ModelKind::kDecoder, {"transformer.", ""}, map_gpt2},
      {"bert", "BERT", ModelKind::kEncoder, {"bert.", ""}, map_bert},
      {"roberta", "RoBERTa", ModelKind::kEncoder, {"roberta.", ""}, map_roberta},
      {"xlm-roberta", "XLM-R", ModelKind::kEncoder, {"roberta.", ""}, map_roberta},
      {"distilbert", "DistilBERT", ModelKind::kEncoder, {"distilbert.", ""}, map_distilbert},
      {"albert", "ALBERT", ModelKind::kEncoder, {"albert.", ""}, map_albert},
      {"mpnet", "MPNet", ModelKind::kEncoder, {"mpnet.", ""}, map_mpnet},
      {"modernbert", "ModernBERT", ModelKind::kEncoder, {"model.", ""}, map_modernbert},
      {"llama", "Llama", ModelKind::kDecoder, {"model.", ""}, map_llama},
      {"mistral", "Mistral", ModelKind::kDecoder, {"model.", ""}, map_llama},
      {"qwen2", "Qwen2", ModelKind::kDecoder, {"model.", ""}, map_qwen2},
      {"qwen3", "Qwen3", ModelKind::kDecoder, {"model.", ""}, map_qwen3},
      {"smollm3", "SmolLM3", ModelKind::kDecoder, {"model.", ""}, map_smollm3},
      {"phi3", "Phi-3", ModelKind::kDecoder, {"model.", ""}, map_phi3},
      {"gemma2", "Gemma-2", ModelKind::kDecoder, {"model.", ""}, map_gemma2},
      {"gemma3_text", "Gemma-3", ModelKind::kDecoder, {"model.", ""}, map_gemma3_text},
      {"gpt_neox", "GPT-NeoX", ModelKind::kDecoder, {"gpt_neox.", ""}, map_gpt_neox},
      {"phi", "Phi", ModelKind::kDecoder, {"model.", ""}, map_phi},
      {"bloom", "BLOOM", ModelKind::kDecoder, {"transformer.", ""}, map_bloom},
      {"marian", "Marian", ModelKind::kEncoderDecoder, {"model.", ""}, map_marian},
      {"t5", "T5", ModelKind::kEncoderDecoder, {""}, map_t5},
  };
  return table;
}

// The architecture files check every config.json value's type before reading it; the catch is
// the last resort that keeps a case they missed a one-line error rather than a crash.
ModelParts map_architecture(const Architecture& arch, const JsonFile& config,
                            TensorSource& tensors) {
  try {
    return arch.map(config, tensors);
  } catch (const nlohmann::json::exception& error) {
    throw Error(config.path().string() + ": unexpected value (" + brief_text(error.what(), 200) +
                ")");
  }
}

}  // namespace

std::string family_names(ModelKind kind) {
  std::string names;
  for (const Architecture& arch : architectures()) {
    if (arch.kind == kind) names += (names.empty() ? "" : ", ") + std::string(arch.family);
  }
  return names;
}

std::unique_ptr<Model> load_model(const std::filesystem::path& dir, std::optional<WeightType> dtype,
                                  Passes passes) {
  const auto start = std::chrono::steady_clock::now();
  // The error_code overload: a name too long, a symbolic-link loop or a folder we may not enter
  // must give an Error naming the path, not a std::filesystem_error.
  std::error_code status_error;
  const auto status = std::filesystem::status(dir, status_error);
  if (status.type() == std::filesystem::file_type::not_found) {
    throw Error(dir.string() + ": model folder not found");
  }
  if (status_error) {
    throw Error(dir.string() + ": cannot open model folder (" + status_error.message() + ")");
  }
  if (status.type() != std::filesystem::file_type::directory) {
    // -m model.gguf, -m model.safetensors: a file where the folder that holds it is meant.
    const std::string extension = dir.extension().string();
    const std::string hint = extension == ".gguf"
                                 ? "; attn reads Hugging Face model folders, not GGUF files"
                             : status.type() == std::filesystem::file_type::regular
                                 ? "; -m takes the folder that holds config.json and the weights"
                                 : "";
    throw Error(dir.string() + ": model folder not found (not a folder" + hint + ")");
  }
  const JsonFile config(dir / "config.json");
  auto model = std::make_unique<Model>();
  model->dir = dir;
  model->model_type = config.string("model_type");
  if (config.has("architectures") && config.json()["architectures"].is_array() &&
      !config.json()["architectures"].empty() && config.json()["architectures"][0].is_string()) {
    model->architecture = config.json()["architectures"][0].get<std::string>();
  }
  const Architecture* arch = nullptr;
  for (const auto& candidate : architectures()) {
    if (model->model_type == candidate.model_type) arch = &candidate;
  }
  if (!arch) {
    std::string known;
    for (const auto& candidate : architectures()) known += std::string(" ") + candidate.model_type;
    config.fail("model_type", "is '" + brief_text(model->model_type) +
                                  "', which attn does not support (known:" + known + ")");
  }

  // The tokenizer before the weights: its files are small, and a vocabulary larger than the
  // model's is refused before anything large is mapped or converted.
  const int vocab_size = config.positive_int("vocab_size", kMaxVocabSize);
  model->tokenizer = load_tokenizer(dir);
  if (model->tokenizer->vocab_size() > vocab_size) {
    config.fail("vocab_size", "is " + std::to_string(vocab_size) + " but the tokenizer has " +
                                  std::to_string(model->tokenizer->vocab_size()) + " tokens");
  }

  model->weights = std::make_unique<Checkpoint>(dir);
  for (const auto& file : model->weights->files()) {
    spdlog::debug("weights: {} ({}, {} tensors)", file->path().string(), file->format(),
                  file->tensors().size());
  }
  TensorSource tensors(*model->weights, arch->tensor_prefixes, dtype);
  ModelParts parts = map_architecture(*arch, config, tensors);
  tensors.pack_matrices(parts, passes == Passes::kManyRows);
  model->parameter_count = tensors.parameter_count();
  model->repacked_weights = tensors.take_repacked();
  model->packed_panels = tensors.take_panels();
  model->missing_head = parts.missing_head;
  model->labels = std::move(parts.labels);
  model->problem_type = config.optional_string("problem_type").value_or("");
  model->generation = read_generation_config(dir, config, vocab_size, parts.encoder != nullptr);
  if (model->generation.eos_token_ids.empty() && model->tokenizer->eos_id()) {
    model->generation.eos_token_ids = {*model->tokenizer->eos_id()};
  }
  model->transformer = std::make_unique<Transformer>(parts.spec, std::move(parts.weights),
                                                     std::move(parts.positions));
  if (parts.encoder) {
    model->encoder =
        std::make_unique<Transformer>(parts.encoder->spec, std::move(parts.encoder->weights),
                                      std::move(parts.encoder->positions));
  }
  model->load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  spdlog::debug("loaded {} ({}, {} parameters) in {:.1f} ms", dir.string(), model->model_type,
                model->parameter_count, model->load_ms);
  return model;
}

}  // namespace attn
