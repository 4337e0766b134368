// attn embed and attn similarity: sentence embeddings of texts (arguments, or the lines of a
// file), printed, as JSON Lines, or as a float32 .npy matrix; and their cosine similarities.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/cli/commands.h"
#include "src/cli/progress.h"
#include "src/io/npy.h"
#include "src/io/output_file.h"
#include "src/tasks/embed.h"

namespace attn {
namespace {

// Values shown per vector in the default output; --json and -o give all of them.
constexpr std::size_t kShownValues = 8;
// Line numbers listed in the warning about skipped lines before "...".
constexpr std::size_t kListedLines = 10;

// `[v0,v1,...]`, each value the shortest decimal that reads back as the same float32 (nlohmann
// would print the longer double); a value that is not finite is null, as nlohmann writes it.
std::string float_array_json(std::span<const float> values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    if (std::isfinite(values[i])) {
      fmt::format_to(std::back_inserter(out), "{}", values[i]);
    } else {
      out += "null";
    }
  }
  return out + "]";
}

std::string string_json(const std::string& text) { return json_text(nlohmann::json(text)); }

void warn_if_truncated(const Model& model, const EmbeddingInput& input,
                       const EmbeddingOptions& options, const std::string& where) {
  if (input.dropped_tokens == 0) return;
  spdlog::warn(
      "{}: {} tokens, more than max_seq_length {}: kept the first {} and the final {} "
      "({} dropped, as sentence-transformers does)",
      where, input.ids.size() + input.dropped_tokens, options.max_seq_length,
      options.max_seq_length - 1, model.tokenizer->token_string(input.ids.back()),
      input.dropped_tokens);
}

// The model, how it pools, and the options the command line gave on top of its folder.
struct Embedder {
  std::unique_ptr<Model> model;
  EmbeddingOptions options;
};

Embedder load_embedder(const EmbedCommand& command) {
  const std::filesystem::path& dir = command.common.model_dir;
  const std::optional<SentenceTransformersConfig> config = read_sentence_transformers_config(dir);
  Embedder embedder;
  embedder.model = load_model(config ? config->transformer_dir : dir, command.common.dtype);
  check_embedding_model(*embedder.model);
  embedder.options = embedding_options(*embedder.model, config);
  if (!config && !command.pooling) {
    // What sentence-transformers does with a plain Hugging Face model.
    embedder.options.pooling = Pooling::kMean;
    spdlog::info("{}: not a sentence-transformers folder (no modules.json): mean pooling",
                 dir.string());
  }
  if (command.pooling) embedder.options.pooling = *command.pooling;
  if (command.normalize) embedder.options.normalize = *command.normalize;
  embedder.options.max_batch_tokens = command.batch_tokens;
  spdlog::debug("{}: {} pooling, {}normalized, max_seq_length {}", dir.string(),
                pooling_name(embedder.options.pooling), embedder.options.normalize ? "" : "not ",
                embedder.options.max_seq_length);
  return embedder;
}

// The header of the text output: "tiny-sbert-brown: mean pooling, normalized, 128 dimensions".
std::string embeddings_header(const Embedder& embedder) {
  const EmbeddingOptions& options = embedder.options;
  return fmt::format(
      "{}: {} pooling, {}, {} dimensions\n", embedder.model->name(), pooling_name(options.pooling),
      options.normalize ? "normalized" : "not normalized", embedder.model->spec().d_model);
}

// One text in the text output: its label ("text 2", "line 7"), the text, its token count and
// norm, and its first values.
std::string embedding_entry(const std::string& label, const std::string& text,
                            const EmbeddingInput& input, std::span<const float> vector) {
  double squares = 0;
  for (float v : vector) squares += double(v) * v;
  std::string out = fmt::format("\n{}: {}\n  {} tokens, norm {:.4f}\n  [", label, text,
                                input.ids.size(), std::sqrt(squares));
  const std::size_t shown = std::min(kShownValues, vector.size());
  for (std::size_t k = 0; k < shown; ++k) out += fmt::format(" {:7.4f}", vector[k]);
  return out + (shown < vector.size()
                    ? fmt::format(" ... ]  ({} of {} values)\n", shown, vector.size())
                    : " ]\n");
}

// The cosine similarity of every pair, one row per text with the text after it:
//            [1]      [2]
//   [1]   1.0000   0.9718  The cat sat on the mat.
//   [2]   0.9718   1.0000  A cat was sitting on the mat.
std::string similarity_table(const std::vector<std::string>& texts,
                             const std::vector<std::vector<float>>& matrix) {
  const int label_width = int(fmt::format("[{}]", texts.size()).size());
  std::string out = fmt::format("{:{}}", "", label_width);
  for (std::size_t j = 0; j < texts.size(); ++j) {
    out += fmt::format("  {:>7}", fmt::format("[{}]", j + 1));
  }
  out += "\n";
  for (std::size_t i = 0; i < texts.size(); ++i) {
    out += fmt::format("{:>{}}", fmt::format("[{}]", i + 1), label_width);
    for (float cosine : matrix[i]) out += fmt::format("  {:7.4f}", cosine);
    out += "  " + texts[i] + "\n";
  }
  return out;
}

std::string similarity_json(const std::vector<std::string>& texts,
                            const std::vector<std::vector<float>>& matrix) {
  std::string out = "{\"texts\":" + json_text(nlohmann::json(texts)) + ",\"similarity\":[";
  for (std::size_t i = 0; i < matrix.size(); ++i) {
    if (i > 0) out += ',';
    out += float_array_json(matrix[i]);
  }
  return out + "]}\n";
}

// "text 2" for the second argument, "line 7" for a line of a file.
std::string entry_label(const InputText& text, std::size_t index) {
  return text.line > 0 ? "line " + std::to_string(text.line) : "text " + std::to_string(index + 1);
}

std::string skipped_line_json(const InputText& text) {
  return "{\"line\":" + std::to_string(text.line) + ",\"text\":" + string_json(text.text) +
         ",\"skipped\":\"empty line\"}\n";
}

// The texts to embed, encoded. A line that is empty after stripping has no vector: it goes to
// `skipped` (an empty argument is an error). A text that cannot be encoded is reported on
// stderr and counted in `failed`.
struct EncodedTexts {
  std::vector<EmbeddingInput> inputs;
  std::vector<const InputText*> texts;    // the text of each input
  std::vector<const InputText*> skipped;  // blank lines, in order
  int failed = 0;                         // the exit status so far: 1 if a text failed
};

EncodedTexts encode_texts(const Embedder& embedder, const std::vector<InputText>& texts) {
  EncodedTexts encoded;
  encoded.failed = for_each_text(texts, [&](const InputText& text) {
    // A blank line is skipped (python_strip also refuses text that is not UTF-8, naming the
    // source); a blank argument is embedded, as sentence-transformers embeds it.
    if (text.line > 0 && python_strip(text.text, text.source).empty()) {
      encoded.skipped.push_back(&text);
      return;
    }
    try {
      encoded.inputs.push_back(encode_for_embedding(*embedder.model, text.text, embedder.options));
    } catch (const Error& e) {
      text.fail(e.what());
    }
    warn_if_truncated(*embedder.model, encoded.inputs.back(), embedder.options, text.source);
    encoded.texts.push_back(&text);
  });
  return encoded;
}

void warn_skipped(const EncodedTexts& encoded, const std::filesystem::path& npy_path) {
  if (encoded.skipped.empty()) return;
  std::string lines;
  for (std::size_t i = 0; i < std::min(encoded.skipped.size(), kListedLines); ++i) {
    lines += (i > 0 ? ", " : "") + std::to_string(encoded.skipped[i]->line);
  }
  if (encoded.skipped.size() > kListedLines) lines += ", ...";
  spdlog::warn("{} skipped, with no row in {} ({} {})",
               plural(long(encoded.skipped.size()), "empty line"), npy_path.string(),
               encoded.skipped.size() > 1 ? "lines" : "line", lines);
}

int similarity(const EmbedCommand& command, const Embedder& embedder, const EncodedTexts& encoded) {
  if (encoded.inputs.size() < 2) {
    throw UsageError("similarity: give at least two texts");
  }
  const std::vector<std::vector<float>> vectors =
      embed(*embedder.model, encoded.inputs, embedder.options);
  std::vector<std::string> texts;
  for (const InputText* text : encoded.texts) texts.push_back(text->text);
  const std::vector<std::vector<float>> matrix = cosine_similarities(vectors);
  write_stdout(command.common.json ? similarity_json(texts, matrix)
                                   : similarity_table(texts, matrix));
  return encoded.failed;
}

}  // namespace

// Each text's vector as it is computed (texts are packed into batches): in the text output, or
// one JSON line each ({"text", "embedding"}, with "line" for a line of a file; a blank line
// appears as {"line", "text", "skipped"}), or a row of the .npy matrix.
int run_embed(const EmbedCommand& command) {
  const std::vector<InputText> texts = read_texts(command.input);
  if (command.similarity && command.npy_output) {
    throw UsageError("-o: not a .npy file with --similarity, which prints a table");
  }
  if (command.npy_output && command.common.json) {
    throw UsageError("-o FILE.npy and --json: the vectors go to the .npy file; leave out --json");
  }
  // Opened first, so that an unwritable path fails before the model is even loaded.
  std::optional<OutputFile> npy_file;
  if (command.npy_output) npy_file.emplace(command.npy_output, "-o");
  const Embedder embedder = load_embedder(command);
  const Model& model = *embedder.model;
  const EncodedTexts encoded = encode_texts(embedder, texts);
  if (encoded.inputs.empty()) {
    if (encoded.failed) return 1;
    throw Error(texts.front().source + ": no text (only blank lines)");
  }
  if (command.similarity) return similarity(command, embedder, encoded);

  Progress progress("embed", "texts", command.common.quiet);
  std::int64_t tokens_done = 0;
  auto count_done = [&](std::size_t i) {
    tokens_done += std::int64_t(encoded.inputs[i].ids.size());
    progress.update(std::int64_t(i) + 1, std::int64_t(encoded.inputs.size()), tokens_done);
  };
  if (npy_file) {
    NpyMatrixWriter writer(*npy_file, encoded.inputs.size(), std::size_t(model.spec().d_model));
    embed(model, encoded.inputs, embedder.options,
          [&](std::size_t i, std::span<const float> vector) {
            writer.write_row(vector);
            count_done(i);
          });
    writer.finish();
    npy_file->commit();
    spdlog::info("-o {}: {} x {} float32, one row per text in order", command.npy_output->string(),
                 encoded.inputs.size(), model.spec().d_model);
    warn_skipped(encoded, *command.npy_output);
    return encoded.failed;
  }

  if (!command.common.json) write_stdout(embeddings_header(embedder));
  // Skipped lines are written in their place among the results, which come in input order.
  std::size_t next_skipped = 0;
  const auto write_skipped_before = [&](int line) {
    for (; next_skipped < encoded.skipped.size() && encoded.skipped[next_skipped]->line < line;
         ++next_skipped) {
      const InputText& text = *encoded.skipped[next_skipped];
      write_stdout(command.common.json
                       ? skipped_line_json(text)
                       : "\nline " + std::to_string(text.line) + ": (empty, skipped)\n");
    }
  };
  embed(model, encoded.inputs, embedder.options, [&](std::size_t i, std::span<const float> vector) {
    const InputText& text = *encoded.texts[i];
    write_skipped_before(text.line);
    if (command.common.json) {
      write_stdout((text.line > 0 ? "{\"line\":" + std::to_string(text.line) + "," : "{") +
                   "\"text\":" + string_json(text.text) +
                   ",\"embedding\":" + float_array_json(vector) + "}\n");
    } else {
      write_stdout(embedding_entry(entry_label(text, i), text.text, encoded.inputs[i], vector));
    }
    count_done(i);
  });
  write_skipped_before(std::numeric_limits<int>::max());
  if (!command.common.json && std::size_t(model.spec().d_model) > kShownValues) {
    write_stdout("\nall values: --json, or -o FILE.npy\n");
  }
  flush_stdout();
  return encoded.failed;
}

}  // namespace attn
