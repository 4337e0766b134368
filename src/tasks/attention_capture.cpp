#include "src/tasks/attention_capture.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/tasks/attention_view_html.h"  // generated from src/tasks/attention_view.html
#include "src/tasks/translate.h"

namespace attn {
namespace {

// Where the page template takes the JSON document.
constexpr std::string_view kHtmlDataMarker = "{{ATTENTION_DATA}}";

std::string_view trim_spaces(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

// A JSON string literal (invalid UTF-8 replaced by U+FFFD). Inside an HTML <script> element
// "</script>" must not appear, so the page's copy writes '<' as \u003c.
std::string json_string(std::string_view text, bool for_html) {
  std::string literal =
      nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!for_html) return literal;
  std::string escaped;
  for (char c : literal) {
    if (c == '<') {
      escaped += "\\u003c";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

template <typename T>
std::string json_list(const std::vector<T>& values, bool for_html) {
  std::string list = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) list += ',';
    if constexpr (std::is_same_v<T, std::string>) {
      list += json_string(values[i], for_html);
    } else {
      list += std::to_string(values[i]);
    }
  }
  return list + "]";
}

// The page template before and after the place of the JSON document.
std::pair<std::string_view, std::string_view> page_around_document() {
  const std::size_t marker = kAttentionViewHtml.find(kHtmlDataMarker);
  if (marker == std::string_view::npos) throw std::logic_error("attention page has no marker");
  return {kAttentionViewHtml.substr(0, marker),
          kAttentionViewHtml.substr(marker + kHtmlDataMarker.size())};
}

// Writes values (n) as a JSON array, formatted in `scratch` first so that the output gets one
// write per row.
void write_weight_row(TextSink& out, const float* values, int n, int precision,
                      std::string& scratch) {
  scratch.resize(std::size_t(n) * (precision + 3) + 2);
  char* begin = scratch.data();
  char* end = begin;
  *end++ = '[';
  for (int i = 0; i < n; ++i) {
    if (i > 0) *end++ = ',';
    end = format_weight(end, values[i], precision);
  }
  *end++ = ']';
  out.write(std::string_view(begin, end - begin));
}

// Writes probabilities (n_rows, n_columns) as a JSON array of rows.
void write_weight_matrix(TextSink& out, const float* probabilities, int n_rows, int n_columns,
                         int precision, std::string& scratch) {
  out.write('[');
  for (int row = 0; row < n_rows; ++row) {
    if (row > 0) out.write(',');
    write_weight_row(out, probabilities + long(row) * n_columns, n_columns, precision, scratch);
  }
  out.write(']');
}

const char* section_key(AttentionSection section, AttentionFormat format) {
  const bool bertviz = format == AttentionFormat::kBertviz;
  switch (section) {
    case AttentionSection::kEncoder:
      return bertviz ? "encoder_attention" : "encoder";
    case AttentionSection::kDecoder:
      return bertviz ? "decoder_attention" : "decoder";
    case AttentionSection::kCross:
      return bertviz ? "cross_attention" : "cross";
  }
  return "";
}

}  // namespace

bool AttentionSelection::contains(int layer, int head) const {
  return std::binary_search(layers.begin(), layers.end(), layer) &&
         std::binary_search(heads.begin(), heads.end(), head);
}

std::vector<int> parse_index_list(std::string_view list, int count, std::string_view option,
                                  std::string_view what) {
  const std::string name(what);
  auto fail = [&](const std::string& problem) {
    throw UsageError(std::string(option) + ": " + problem);
  };
  auto parse_index = [&](std::string_view text, std::string_view item) {
    int index = -1;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), index);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || index < 0) {
      fail("'" + std::string(item) + "' is not a " + name + " index or range (write e.g. 0,5-7)");
    }
    if (index >= count) {
      fail(name + " " + std::to_string(index) + " is out of range: the model has " +
           std::to_string(count) + " " + name + "s (0-" + std::to_string(count - 1) + ")");
    }
    return index;
  };

  std::vector<bool> chosen(count, list.empty());
  for (std::size_t start = 0; !list.empty() && start <= list.size();) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view item = trim_spaces(list.substr(start, comma - start));
    start = comma + 1;
    const std::size_t dash = item.find('-');
    const int first = parse_index(item.substr(0, dash), item);
    const int last =
        dash == std::string_view::npos ? first : parse_index(item.substr(dash + 1), item);
    if (first > last) {
      fail("'" + std::string(item) + "' is a reversed range (write " + std::to_string(last) + "-" +
           std::to_string(first) + ")");
    }
    std::fill(chosen.begin() + first, chosen.begin() + last + 1, true);
  }
  std::vector<int> indexes;
  for (int i = 0; i < count; ++i) {
    if (chosen[i]) indexes.push_back(i);
  }
  return indexes;
}

AttentionSelection select_attention(const ArchSpec& spec, const AttentionOptions& options) {
  return {parse_index_list(options.layers, spec.n_layer, "--layers", "layer"),
          parse_index_list(options.heads, spec.n_head, "--heads", "head")};
}

void capture_attention(const Model& model, const Encoding& encoding,
                       const AttentionSelection& selection, const AttentionHeadCallback& on_head) {
  const Transformer& stack = model.input_stack();
  const ArchSpec& spec = stack.spec();
  const int n = int(encoding.ids.size());
  // Layers past the last selected one are never run, so they need no cache either.
  const int n_layers = selection.layers.back() + 1;
  KVCache cache(spec, n, n_layers);
  RunState state(spec, n, n);
  Batch batch;
  batch.add_sequence(encoding.ids, encoding.type_ids);

  ForwardObserver observer;
  observer.wants_attention = [&](int layer, int head) { return selection.contains(layer, head); };
  observer.on_attention = [&](int layer, int head, int, const float* probabilities, int, int) {
    on_head(layer, head, probabilities, n);
  };
  stack.forward(batch, cache, state, &observer, n_layers);
}

void capture_encoder_decoder_attention(const Model& model, std::span<const int> source_ids,
                                       std::span<const int> decoder_ids,
                                       const AttentionSelection& encoder_selection,
                                       const AttentionSelection& decoder_selection,
                                       const SectionHeadCallback& on_head) {
  ForwardObserver encoder_observer;
  encoder_observer.wants_attention = [&](int layer, int head) {
    return encoder_selection.contains(layer, head);
  };
  encoder_observer.on_attention = [&](int layer, int head, int, const float* p, int n_queries,
                                      int n_keys) {
    on_head(AttentionSection::kEncoder, layer, head, p, n_queries, n_keys);
  };
  const CrossAttentionMemory memory = encode_source(model, source_ids, &encoder_observer);

  // The decoder reports self- and cross-attention layer by layer, interleaved: the cross heads
  // ((T, S) each) wait until the decoder section is written.
  struct Held {
    int layer, head;
    std::vector<float> probabilities;
  };
  std::vector<Held> cross;
  const int n = int(decoder_ids.size());
  ForwardObserver decoder_observer;
  decoder_observer.wants_attention = [&](int layer, int head) {
    return decoder_selection.contains(layer, head);
  };
  decoder_observer.on_attention = [&](int layer, int head, int, const float* p, int n_queries,
                                      int n_keys) {
    on_head(AttentionSection::kDecoder, layer, head, p, n_queries, n_keys);
  };
  decoder_observer.on_cross_attention = [&](int layer, int head, int, const float* p, int n_queries,
                                            int n_keys) {
    cross.push_back({layer, head, std::vector<float>(p, p + long(n_queries) * n_keys)});
  };
  const ArchSpec& spec = model.spec();
  const int n_layers = decoder_selection.layers.back() + 1;
  KVCache cache(spec, n, n_layers);
  RunState state(spec, n, std::max(n, memory.length));
  Batch batch;
  batch.add_sequence(decoder_ids);
  batch.memory = &memory;
  model.transformer->forward(batch, cache, state, &decoder_observer, n_layers);
  for (const Held& head : cross) {
    on_head(AttentionSection::kCross, head.layer, head.head, head.probabilities.data(), n,
            memory.length);
  }
}

char* format_weight(char* out, float weight, int precision) {
  static constexpr uint32_t kPowersOfTen[] = {1,      10,      100,      1000,      10000,
                                              100000, 1000000, 10000000, 100000000, 1000000000};
  if (std::isnan(weight)) {
    throw Error("an attention weight is NaN (does the model hold NaN or infinite weights?)");
  }
  const uint32_t one = kPowersOfTen[precision];
  // Exact: a float's 24-bit significand times 10^9 = 2^9 5^9 (21 bits) fits a double's 53 bits.
  const double scaled_exactly = double(weight) * one;
  if (scaled_exactly < 0.5) {
    *out++ = '0';
    return out;
  }
  // Also catches softmax's multiplication by 1/sum overshooting 1 by an ulp.
  if (scaled_exactly >= one - 0.5) {
    *out++ = '1';
    return out;
  }
  uint32_t digits = uint32_t(scaled_exactly + 0.5);
  int n_digits = precision;
  for (; digits % 10 == 0; digits /= 10) --n_digits;
  *out++ = '0';
  *out++ = '.';
  char* end = out + n_digits;
  for (char* p = end; p > out; digits /= 10) *--p = char('0' + digits % 10);
  return end;
}

std::vector<std::string> token_strings(const Tokenizer& tokenizer, std::span<const int> ids) {
  std::vector<std::string> tokens;
  for (int id : ids) tokens.push_back(replace_invalid_utf8(tokenizer.token_string(id)));
  return tokens;
}

double estimated_attention_bytes(const AttentionSelection& selection, int n_tokens, bool causal,
                                 int precision) {
  const double cells = double(n_tokens) * n_tokens;
  const double nonzero = causal ? double(n_tokens) * (n_tokens + 1) / 2 : cells;
  // "0.1234," for a weight, "0," for a causal zero, "[" "]," around every row.
  const double per_head = nonzero * (precision + 3) + (cells - nonzero) * 2 + 3.0 * n_tokens;
  return per_head * selection.head_count();
}

AttentionDocumentInfo attention_document_info(const Model& model, std::string text,
                                              std::optional<std::string> pair, Encoding encoding,
                                              std::vector<int> decoder_ids,
                                              std::optional<std::string> target) {
  const bool encoder_decoder = model.kind() == ModelKind::kEncoderDecoder;
  const ArchSpec& spec = model.input_stack().spec();
  AttentionDocumentInfo info{.model = model.name(),
                             .model_type = model.model_type,
                             .text = std::move(text),
                             .pair = std::move(pair),
                             .encoding = std::move(encoding),
                             .tokens = {},
                             .n_layers = spec.n_layer,
                             .n_heads = spec.n_head};
  info.tokens = token_strings(*model.tokenizer, info.encoding.ids);
  const auto windowed = [](const LayerSpec& layer) { return layer.window > 0; };
  if (!encoder_decoder && std::any_of(spec.layers.begin(), spec.layers.end(), windowed)) {
    for (const LayerSpec& layer : spec.layers) info.windows.push_back(layer.window);
    info.causal = spec.causal;
  }
  if (encoder_decoder) {
    info.decoder_tokens = token_strings(*model.tokenizer, decoder_ids);
    info.decoder_ids = std::move(decoder_ids);
    info.target = std::move(target);
    info.n_decoder_layers = model.spec().n_layer;
    info.n_decoder_heads = model.spec().n_head;
  }
  return info;
}

void write_attention_heads(const Model& model, const AttentionDocumentInfo& info,
                           const AttentionOptions& options, AttentionWriter& writer) {
  if (info.decoder_ids.empty()) {
    capture_attention(model, info.encoding, select_attention(model.spec(), options),
                      [&](int layer, int head, const float* probabilities, int n) {
                        writer.add_head(layer, head, probabilities, n, n);
                      });
    return;
  }
  std::optional<AttentionSection> current;
  capture_encoder_decoder_attention(
      model, info.encoding.ids, info.decoder_ids, select_attention(model.encoder->spec(), options),
      select_attention(model.spec(), options),
      [&](AttentionSection section, int layer, int head, const float* probabilities, int n_queries,
          int n_keys) {
        if (section != current) writer.begin_section(section);
        current = section;
        writer.add_head(layer, head, probabilities, n_queries, n_keys);
      });
}

AttentionWriter::AttentionWriter(TextSink& out, AttentionFormat format, int precision,
                                 const AttentionDocumentInfo& info)
    : out_(out), format_(format), precision_(precision) {
  const bool for_html = format == AttentionFormat::kHtml;
  const bool encoder_decoder = !info.decoder_ids.empty();
  if (format == AttentionFormat::kBertviz && encoder_decoder) {
    out_.write("{\"encoder_tokens\":" + json_list(info.tokens, false) +
               ",\"decoder_tokens\":" + json_list(info.decoder_tokens, false));
    return;
  }
  if (format == AttentionFormat::kBertviz) {
    const std::string tokens = json_list(info.tokens, false);
    out_.write(R"({"attention":[{"name":"All","left_text":)" + tokens +
               ",\"right_text\":" + tokens + ",\"attn\":[\n");
    section_open_ = true;
    return;
  }
  if (for_html) out_.write(page_around_document().first);
  std::string header = "{\"model\":" + json_string(info.model, for_html) +
                       ",\"model_type\":" + json_string(info.model_type, for_html) +
                       ",\"text\":" + json_string(info.text, for_html);
  if (info.pair) header += ",\"pair\":" + json_string(*info.pair, for_html);
  header += ",\"tokens\":" + json_list(info.tokens, for_html) +
            ",\"token_ids\":" + json_list(info.encoding.ids, for_html);
  if (info.pair) header += ",\"type_ids\":" + json_list(info.encoding.type_ids, for_html);
  if (encoder_decoder) {
    if (info.target) header += ",\"target\":" + json_string(*info.target, for_html);
    header += ",\"decoder_tokens\":" + json_list(info.decoder_tokens, for_html) +
              ",\"decoder_ids\":" + json_list(info.decoder_ids, for_html);
  }
  header += ",\"n_layers\":" + std::to_string(info.n_layers) +
            ",\"n_heads\":" + std::to_string(info.n_heads);
  if (!info.windows.empty()) {
    header += ",\"windows\":" + json_list(info.windows, for_html) +
              ",\"causal\":" + (info.causal ? "true" : "false");
  }
  if (encoder_decoder) {
    header += ",\"n_decoder_layers\":" + std::to_string(info.n_decoder_layers) +
              ",\"n_decoder_heads\":" + std::to_string(info.n_decoder_heads);
  } else {
    header += ",\"attention\":[\n";
    section_open_ = true;
  }
  out_.write(header);
}

void AttentionWriter::begin_section(AttentionSection section) {
  close_section();
  out_.write(std::string(",\"") + section_key(section, format_) + "\":[\n");
  section_open_ = true;
  sections_ = true;
}

void AttentionWriter::close_section() {
  if (current_layer_ >= 0) close_layer();
  current_layer_ = -1;
  if (section_open_) out_.write("]");
  section_open_ = false;
}

void AttentionWriter::close_layer() {
  out_.write(format_ == AttentionFormat::kBertviz ? "]" : "]}");
}

void AttentionWriter::add_head(int layer, int head, const float* probabilities, int n_queries,
                               int n_keys) {
  if (layer != current_layer_) {
    if (current_layer_ >= 0) {
      close_layer();
      out_.write(",\n");
    }
    current_layer_ = layer;
    out_.write(format_ == AttentionFormat::kBertviz
                   ? std::string("[\n")
                   : "{\"layer\":" + std::to_string(layer) + ",\"heads\":[\n");
  } else {
    out_.write(",\n");
  }
  if (format_ == AttentionFormat::kBertviz) {
    write_weight_matrix(out_, probabilities, n_queries, n_keys, precision_, row_);
    return;
  }
  out_.write("{\"head\":" + std::to_string(head) + ",\"weights\":");
  write_weight_matrix(out_, probabilities, n_queries, n_keys, precision_, row_);
  out_.write('}');
}

void AttentionWriter::add_matrices(std::string_view key, std::span<const double> values, int count,
                                   int rows, int columns) {
  if (format_ == AttentionFormat::kBertviz) throw std::logic_error("add_matrices in bertviz");
  close_section();
  out_.write(",\"" + std::string(key) + "\":[\n");
  std::vector<float> row(columns);
  for (int m = 0; m < count; ++m) {
    if (m > 0) out_.write(",\n");
    out_.write('[');
    for (int r = 0; r < rows; ++r) {
      if (r > 0) out_.write(',');
      const double* source = values.data() + (std::size_t(m) * rows + r) * columns;
      std::copy_n(source, columns, row.begin());
      write_weight_row(out_, row.data(), columns, precision_, row_);
    }
    out_.write(']');
  }
  out_.write(']');
}

void AttentionWriter::finish() {
  // A single-stack document's one section stays open inside its wrapping ("attention": [...]}
  // in attn's schema, "attn": [...]}]} in bertviz's); an encoder-decoder's sections are keys of
  // the document itself.
  const bool single_section = !sections_;
  close_section();
  if (format_ == AttentionFormat::kBertviz && single_section) {
    out_.write("}]}\n");
    return;
  }
  out_.write("}");
  if (format_ == AttentionFormat::kHtml) {
    out_.write(page_around_document().second);
  } else {
    out_.write("\n");
  }
}

GenerationAttentionRecorder::GenerationAttentionRecorder(AttentionSelection selection, bool cross)
    : selection_(std::move(selection)), cross_(cross) {
  observer_.wants_attention = [this](int layer, int head) {
    return selection_.contains(layer, head);
  };
  auto& report = cross ? observer_.on_cross_attention : observer_.on_attention;
  report = [this](int layer, int head, int, const float* probabilities, int n_queries, int n_keys) {
    // The first selected head of a pass starts the pass's record.
    if (layer == selection_.layers.front() && head == selection_.heads.front()) {
      passes_.emplace_back();
    }
    const float* last_row = probabilities + long(n_queries - 1) * n_keys;
    passes_.back().insert(passes_.back().end(), last_row, last_row + n_keys);
  };
}

void GenerationAttentionRecorder::write_jsonl(TextSink& out, const Tokenizer& tokenizer,
                                              std::span<const int> generated_ids,
                                              int precision) const {
  // A pass that chose end-of-text (not kept) leaves one more pass than generated tokens.
  const std::size_t n_lines = std::min(passes_.size(), generated_ids.size());
  std::string scratch;
  for (std::size_t step = 0; step < n_lines; ++step) {
    const std::vector<float>& rows = passes_[step];
    const int n_keys = int(rows.size() / selection_.head_count());
    const std::string token = replace_invalid_utf8(tokenizer.token_string(generated_ids[step]));
    out.write("{\"step\":" + std::to_string(step) + ",\"token_id\":" +
              std::to_string(generated_ids[step]) + ",\"token\":" + json_string(token, false) +
              ",\"position\":" + std::to_string(cross_ ? step : n_keys - 1) + ",\"attention\":[");
    const float* row = rows.data();
    for (std::size_t l = 0; l < selection_.layers.size(); ++l) {
      out.write(std::string(l > 0 ? "," : "") +
                "{\"layer\":" + std::to_string(selection_.layers[l]) + ",\"heads\":[");
      for (std::size_t h = 0; h < selection_.heads.size(); ++h) {
        out.write(std::string(h > 0 ? "," : "") +
                  "{\"head\":" + std::to_string(selection_.heads[h]) + ",\"weights\":");
        write_weight_row(out, row, n_keys, precision, scratch);
        out.write('}');
        row += n_keys;
      }
      out.write("]}");
    }
    out.write("]}\n");
  }
}

}  // namespace attn
