#pragma once

// Attention weights out of the model: which layers and heads to report, capturing them through
// the ForwardObserver hook of the one attention implementation, and writing them as a streamed
// JSON document (attn's own schema, bertviz's, or a self-contained HTML page around the JSON)
// or, during generation, as JSON Lines. The formats are described in README.md.

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/io/output_file.h"
#include "src/model/model.h"

namespace attn {

// The command-line choices: layers and heads as the user wrote them ("0,5-7"; empty = all) and
// the decimal digits of each weight.
struct AttentionOptions {
  std::string layers;
  std::string heads;
  int precision = 4;
};

// The layers and heads to report, each ascending without repeats, never empty.
struct AttentionSelection {
  std::vector<int> layers;
  std::vector<int> heads;
  bool contains(int layer, int head) const;
  int head_count() const { return int(layers.size() * heads.size()); }
};

// Parses a list such as "0,5-7" (empty = all) into ascending indexes below `count`. Errors are
// UsageErrors naming `option` ("--layers") and what the indexes count ("layer").
std::vector<int> parse_index_list(std::string_view list, int count, std::string_view option,
                                  std::string_view what);

AttentionSelection select_attention(const ArchSpec& spec, const AttentionOptions& options);

// Receives the post-softmax attention of one head: probabilities (n_tokens, n_tokens), rows =
// queries, columns = keys.
using AttentionHeadCallback =
    std::function<void(int layer, int head, const float* probabilities, int n_tokens)>;

// Runs one encoded text through the model's input stack (an encoder-decoder's encoder), stopping
// after the last selected layer, and hands every selected head to `on_head`: layer by layer,
// heads ascending within a layer.
void capture_attention(const Model& model, const Encoding& encoding,
                       const AttentionSelection& selection, const AttentionHeadCallback& on_head);

// The three kinds of attention of an encoder-decoder, in the order they are reported.
enum class AttentionSection { kEncoder, kDecoder, kCross };

// Receives one head of one section: probabilities (n_queries, n_keys).
using SectionHeadCallback =
    std::function<void(AttentionSection section, int layer, int head, const float* probabilities,
                       int n_queries, int n_keys)>;

// An encoder-decoder's attention: the encoder over source_ids, then the decoder over
// decoder_ids (teacher-forced, one pass) reading the source. Hands every selected head to
// `on_head` section by section (encoder, decoder, cross), each layer by layer with heads
// ascending. `encoder_selection` indexes the encoder's layers and heads, `decoder_selection`
// the decoder's.
void capture_encoder_decoder_attention(const Model& model, std::span<const int> source_ids,
                                       std::span<const int> decoder_ids,
                                       const AttentionSelection& encoder_selection,
                                       const AttentionSelection& decoder_selection,
                                       const SectionHeadCallback& on_head);

// Writes a probability with `precision` (1-9) decimals, rounded half away from zero, trailing
// zeros trimmed ("0.25", "1", "0"); returns the end. Needs at most precision + 2 characters.
// Throws Error for NaN.
char* format_weight(char* out, float weight, int precision);

enum class AttentionFormat {
  kJson,     // attn's schema: model, tokens, attention[layer].heads[head].weights
  kBertviz,  // {"attention": [{"name", "attn": [layer][head][T][T], "left_text", "right_text"}]}
  kHtml,     // a self-contained page (src/tasks/attention_view.html) with the kJson document inside
};

// What the document says about its input, besides the weights.
struct AttentionDocumentInfo {
  std::string model;
  std::string model_type;
  std::string text;
  std::optional<std::string> pair;
  Encoding encoding;
  std::vector<std::string> tokens;  // token_string of each id, as valid UTF-8
  int n_layers = 0;
  int n_heads = 0;
  // Each layer's attention window (0: every key) when some layer has one, and whether the model
  // is a decoder (the window is the last keys) or an encoder (a band around the query): the
  // picture shows the keys outside a window as masked.
  std::vector<int> windows = {};
  bool causal = false;
  // Encoder-decoders: the decoder's input ([start] + target), the target text when the user
  // gave one, and the decoder's sizes; the fields above describe the source and the encoder.
  std::vector<int> decoder_ids = {};
  std::vector<std::string> decoder_tokens = {};
  std::optional<std::string> target = std::nullopt;
  int n_decoder_layers = 0;
  int n_decoder_heads = 0;
};

// The token strings of `ids`, as the tokenizer shows them, made valid UTF-8.
std::vector<std::string> token_strings(const Tokenizer& tokenizer, std::span<const int> ids);

// Upper bound of the document size in bytes, for the warning about very large outputs.
double estimated_attention_bytes(const AttentionSelection& selection, int n_tokens, bool causal,
                                 int precision);

// Streams one attention document to `out`: the header from the constructor, then add_head for
// every selected head in capture order, then finish(). Nothing is held back but one row. An
// encoder-decoder's document (info.decoder_ids not empty) has three sections instead of one
// ("encoder", "decoder", "cross"; bertviz's encoder_attention, decoder_attention,
// cross_attention): begin_section before each section's heads.
class AttentionWriter {
 public:
  AttentionWriter(TextSink& out, AttentionFormat format, int precision,
                  const AttentionDocumentInfo& info);
  void begin_section(AttentionSection section);
  void add_head(int layer, int head, const float* probabilities, int n_queries, int n_keys);
  // After the heads (attn's schema only): a key of the document holding `count` matrices
  // (rows, columns) one after another in `values`, e.g. "rollout" with one per layer.
  void add_matrices(std::string_view key, std::span<const double> values, int count, int rows,
                    int columns);
  void finish();

 private:
  void close_layer();
  void close_section();

  TextSink& out_;
  AttentionFormat format_;
  int precision_;
  bool section_open_ = false;
  bool sections_ = false;  // an encoder-decoder's document, whose sections are named
  int current_layer_ = -1;
  std::string row_;  // scratch for one formatted row
};

// What the attention document of one input says besides the weights: `model`'s sizes and
// windows, and the tokens of `encoding` (text, with `pair`); for an encoder-decoder, also those
// of the decoder's input `decoder_ids` (with `target`, the text it was made of, when given).
AttentionDocumentInfo attention_document_info(const Model& model, std::string text,
                                              std::optional<std::string> pair, Encoding encoding,
                                              std::vector<int> decoder_ids = {},
                                              std::optional<std::string> target = std::nullopt);

// Runs the input of `info` through `model` and hands every head `options` selects to `writer`,
// in capture order: a single stack's, or an encoder-decoder's three sections.
void write_attention_heads(const Model& model, const AttentionDocumentInfo& info,
                           const AttentionOptions& options, AttentionWriter& writer);

// Records, during generation, the attention of the last position of every forward pass: the
// query whose output chose the next token. Give observer() to GenerateCallbacks. Rows are kept
// until write_jsonl, because the token a pass chooses is known only after generate() returns.
//
// With `cross` (an encoder-decoder's translation) it records the cross-attention instead: each
// line is the row of the decoder query at position k over the source tokens.
class GenerationAttentionRecorder {
 public:
  explicit GenerationAttentionRecorder(AttentionSelection selection, bool cross = false);
  GenerationAttentionRecorder(const GenerationAttentionRecorder&) = delete;
  GenerationAttentionRecorder& operator=(const GenerationAttentionRecorder&) = delete;

  const ForwardObserver* observer() const { return &observer_; }

  // One line per generated token: line k holds the row of position n_prompt - 1 + k, the
  // attention that chose generated token k (README.md, "Attention during generation").
  void write_jsonl(TextSink& out, const Tokenizer& tokenizer, std::span<const int> generated_ids,
                   int precision) const;

 private:
  AttentionSelection selection_;
  bool cross_;
  ForwardObserver observer_;
  // Per forward pass: the selected heads' last rows one after another in (layer, head) order,
  // each as long as the keys of that pass.
  std::vector<std::vector<float>> passes_;
};

}  // namespace attn
