// attn embed and attn similarity: sentence embeddings of argument texts or of every line of a
// file, printed, as JSON (Lines), or as a float32 .npy matrix; and their cosine similarities.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/cli/commands.h"
#include "src/cli/progress.h"
#include "src/io/npy.h"
#include "src/io/output_file.h"
#include "src/tasks/embed.h"
#include "src/tokenizer/unicode.h"

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
    throw UsageError(dir.string() +
                     ": not a sentence-transformers folder (no modules.json); give --pooling "
                     "mean, cls or max");
  }
  if (command.pooling) embedder.options.pooling = *command.pooling;
  if (command.normalize) embedder.options.normalize = *command.normalize;
  embedder.options.max_batch_tokens = command.batch_tokens;
  spdlog::debug("{}: {} pooling, {}normalized, max_seq_length {}", dir.string(),
                pooling_name(embedder.options.pooling), embedder.options.normalize ? "" : "not ",
                embedder.options.max_seq_length);
  return embedder;
}

// ---- Texts given as arguments ----

// "tiny-sbert-brown: mean pooling, normalized, 128 dimensions", then per text its number, the
// text, its token count and norm, and its first values.
std::string embeddings_table(const Embedder& embedder, const std::vector<std::string>& texts,
                             const std::vector<EmbeddingInput>& inputs,
                             const std::vector<std::vector<float>>& vectors) {
  const EmbeddingOptions& options = embedder.options;
  const int d = embedder.model->spec().d_model;
  std::string out = fmt::format("{}: {} pooling, {}, {} dimensions\n", embedder.model->name(),
                                pooling_name(options.pooling),
                                options.normalize ? "normalized" : "not normalized", d);
  for (std::size_t i = 0; i < texts.size(); ++i) {
    double squares = 0;
    for (float v : vectors[i]) squares += double(v) * v;
    out += fmt::format("\ntext {}: {}\n  {} tokens, norm {:.4f}\n  [", i + 1, texts[i],
                       inputs[i].ids.size(), std::sqrt(squares));
    const std::size_t shown = std::min(kShownValues, vectors[i].size());
    for (std::size_t k = 0; k < shown; ++k) out += fmt::format(" {:7.4f}", vectors[i][k]);
    out +=
        shown < vectors[i].size() ? fmt::format(" ... ]  ({} of {} values)\n", shown, d) : " ]\n";
  }
  if (vectors.size() > 0 && std::size_t(d) > kShownValues) {
    out += "\nall values: --json, or -o FILE.npy\n";
  }
  return out;
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

int embed_texts(const EmbedCommand& command, const Embedder& embedder,
                std::optional<OutputFile>& npy_file) {
  const Model& model = *embedder.model;
  std::vector<EmbeddingInput> inputs;
  for (std::size_t i = 0; i < command.texts.size(); ++i) {
    const std::string where =
        command.texts.size() > 1 ? fmt::format("text {}", i + 1) : std::string("text");
    const std::string& text = command.texts[i];
    // python_strip also refuses text that is not UTF-8, naming `where`.
    if (python_strip(text, where).empty()) throw Error(where + ": is empty");
    try {
      inputs.push_back(encode_for_embedding(model, text, embedder.options));
    } catch (const Error& e) {
      throw Error(where + ": " + e.what());
    }
    warn_if_truncated(model, inputs.back(), embedder.options, where);
  }
  const std::vector<std::vector<float>> vectors = embed(model, inputs, embedder.options);

  if (command.similarity) {
    const std::vector<std::vector<float>> matrix = cosine_similarities(vectors);
    write_stdout(command.json ? similarity_json(command.texts, matrix)
                              : similarity_table(command.texts, matrix));
  } else if (npy_file) {
    NpyMatrixWriter writer(*npy_file, vectors.size(), std::size_t(model.spec().d_model));
    for (const std::vector<float>& vector : vectors) writer.write_row(vector);
    writer.finish();
    npy_file->commit();
    spdlog::info("-o {}: {} x {} float32, one row per text in order", command.output->string(),
                 vectors.size(), model.spec().d_model);
  } else if (command.json) {
    std::string out = "[";
    for (std::size_t i = 0; i < vectors.size(); ++i) {
      if (i > 0) out += ',';
      out += fmt::format("{{\"text\":{},\"embedding\":{}}}", string_json(command.texts[i]),
                         float_array_json(vectors[i]));
    }
    write_stdout(out + "]\n");
  } else {
    write_stdout(embeddings_table(embedder, command.texts, inputs, vectors));
  }
  return 0;
}

// ---- One text per line of a file or of standard input ----

struct SkippedLine {
  int line = 0;
  std::string text;
};

std::string skipped_line_json(const SkippedLine& skipped) {
  return "{\"line\":" + std::to_string(skipped.line) + ",\"text\":" + string_json(skipped.text) +
         ",\"skipped\":\"empty line\"}\n";
}

// One text per line. A line that is empty after stripping has no vector: in JSON Lines it
// appears as {"line", "text", "skipped"}; with -o it has no row, and a warning lists it. A line
// that cannot be embedded (not UTF-8) is reported on stderr with its number, the rest still run,
// and the exit status is 1 at the end.
int embed_lines(const EmbedCommand& command, const Embedder& embedder,
                std::optional<OutputFile>& npy_file) {
  const Model& model = *embedder.model;
  const std::filesystem::path path = command.file.value_or("-");
  const std::string source = command.file ? "--file " + path.string() : "standard input";
  const std::string contents = read_input_text(path, "--file", kMaxInputTextBytes);
  if (contents.empty()) throw Error(source + ": is empty");

  std::vector<EmbeddingInput> inputs;
  std::vector<int> line_numbers;
  std::vector<std::string> texts;
  std::vector<SkippedLine> skipped;
  int failed_lines = 0;
  int line_number = 0;
  for (std::string& line : split_lines(contents)) {
    ++line_number;
    const std::string where = source + ": line " + std::to_string(line_number);
    bool empty = false;
    try {
      empty = python_strip(line, where).empty();  // refuses a line that is not UTF-8
    } catch (const Error& e) {
      print_error(e.what());  // the message names `where`
      ++failed_lines;
      continue;
    }
    if (empty) {
      skipped.push_back({.line = line_number, .text = std::move(line)});
      continue;
    }
    try {
      inputs.push_back(encode_for_embedding(model, line, embedder.options));
    } catch (const Error& e) {
      print_error(where + ": " + e.what());
      ++failed_lines;
      continue;
    }
    warn_if_truncated(model, inputs.back(), embedder.options, where);
    line_numbers.push_back(line_number);
    texts.push_back(std::move(line));
  }
  if (inputs.empty() && failed_lines == 0) throw Error(source + ": has only empty lines");
  if (inputs.empty()) return 1;

  Progress progress("embed", "lines", command.common.quiet);
  std::int64_t tokens_done = 0;
  auto count_done = [&](std::size_t i) {
    tokens_done += std::int64_t(inputs[i].ids.size());
    progress.update(std::int64_t(i) + 1, std::int64_t(inputs.size()), tokens_done);
  };
  if (npy_file) {
    NpyMatrixWriter writer(*npy_file, inputs.size(), std::size_t(model.spec().d_model));
    embed(model, inputs, embedder.options, [&](std::size_t i, std::span<const float> vector) {
      writer.write_row(vector);
      count_done(i);
    });
    writer.finish();
    npy_file->commit();
    spdlog::info("-o {}: {} x {} float32, one row per embedded line in file order",
                 command.output->string(), inputs.size(), model.spec().d_model);
    if (!skipped.empty()) {
      std::string lines;
      for (std::size_t i = 0; i < std::min(skipped.size(), kListedLines); ++i) {
        lines += (i > 0 ? ", " : "") + std::to_string(skipped[i].line);
      }
      if (skipped.size() > kListedLines) lines += ", ...";
      spdlog::warn("{}: {} empty line{} skipped, with no row in {} (line{} {})", source,
                   skipped.size(), skipped.size() > 1 ? "s" : "", command.output->string(),
                   skipped.size() > 1 ? "s" : "", lines);
    }
  } else {
    // Skipped lines are written in their place among the results, which come in input order.
    std::size_t next_skipped = 0;
    embed(model, inputs, embedder.options, [&](std::size_t i, std::span<const float> vector) {
      for (; next_skipped < skipped.size() && skipped[next_skipped].line < line_numbers[i];
           ++next_skipped) {
        write_stdout(skipped_line_json(skipped[next_skipped]));
      }
      write_stdout("{\"line\":" + std::to_string(line_numbers[i]) + ",\"text\":" +
                   string_json(texts[i]) + ",\"embedding\":" + float_array_json(vector) + "}\n");
      count_done(i);
    });
    for (; next_skipped < skipped.size(); ++next_skipped) {
      write_stdout(skipped_line_json(skipped[next_skipped]));
    }
  }
  flush_stdout();
  spdlog::debug("{}: embedded {} lines, skipped {}, {} failed", source, inputs.size(),
                skipped.size(), failed_lines);
  return failed_lines > 0 ? 1 : 0;
}

}  // namespace

int run_embed(const EmbedCommand& command) {
  const bool from_lines = command.file || command.texts.empty();
  if (!command.texts.empty() && command.file) {
    throw UsageError("TEXT and --file: give the texts one way, not both");
  }
  if (command.similarity) {
    if (from_lines) throw UsageError("--similarity: give the texts as arguments, not --file");
    if (command.texts.size() < 2) throw UsageError("similarity: give at least two texts");
    if (command.output) throw UsageError("-o: not with --similarity, which prints a table");
  }
  if (command.output && command.json) {
    throw UsageError("-o and --json: the vectors go to the .npy file; leave out --json");
  }
  // Opened first, so that an unwritable path fails before the model is even loaded.
  std::optional<OutputFile> npy_file;
  if (command.output) npy_file.emplace(command.output, "-o");
  const Embedder embedder = load_embedder(command);
  return from_lines ? embed_lines(command, embedder, npy_file)
                    : embed_texts(command, embedder, npy_file);
}

}  // namespace attn
