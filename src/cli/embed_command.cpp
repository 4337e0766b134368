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
#include "src/cli/options.h"
#include "src/cli/progress.h"
#include "src/io/npy.h"
#include "src/io/output_file.h"
#include "src/tasks/embed.h"

namespace attn {
namespace {

// attn embed, and attn similarity (similarity = true).
struct EmbedCommand final : Command {
  explicit EmbedCommand(bool similarity)
      : Command(similarity ? "similarity" : "embed",
                similarity ? "cosine similarity of every pair of texts' sentence embeddings"
                           : "sentence embeddings with an encoder, as sentence-transformers "
                             "computes them"),
        similarity(similarity) {}
  void add_options(CLI::App& app) override;
  int run(const CLI::App& app) override;

  // -o FILE.npy: the vectors as a float32 matrix, one row per text, instead of the printout.
  std::optional<std::filesystem::path> npy_output;
  std::optional<Pooling> pooling;  // --pooling: over the folder's 1_Pooling
  std::optional<bool> normalize;   // --normalize / --no-normalize: over its Normalize
  int batch_tokens = 1024;         // tokens per packed batch
  bool similarity;                 // print the cosine similarity matrix instead of the vectors
};

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

// The texts to embed, encoded (a text that cannot be is reported on stderr).
EncodedTexts<EmbeddingInput> encode_texts(const Embedder& embedder,
                                          const std::vector<InputText>& texts) {
  return encode_each<EmbeddingInput>(texts, [&](const InputText& text) {
    EmbeddingInput input;
    try {
      input = encode_for_embedding(*embedder.model, text.text, embedder.options);
    } catch (const Error& e) {
      text.fail(e.what());
    }
    warn_if_truncated(*embedder.model, input, embedder.options, text.source);
    return input;
  });
}

// The .npy rows are those of the texts: a blank line of a file, being no text, has none.
void warn_blank_lines(const std::vector<InputText>& texts, const std::filesystem::path& npy_path) {
  std::vector<int> blank;
  for (const InputText& text : texts) {
    if (is_blank_line(text)) blank.push_back(text.line);
  }
  if (blank.empty()) return;
  std::string lines;
  for (std::size_t i = 0; i < std::min(blank.size(), kListedLines); ++i) {
    lines += (i > 0 ? ", " : "") + std::to_string(blank[i]);
  }
  if (blank.size() > kListedLines) lines += ", ...";
  spdlog::warn("{} skipped, with no row in {} ({} {})", plural(long(blank.size()), "blank line"),
               npy_path.string(), blank.size() > 1 ? "lines" : "line", lines);
}

int print_similarity(const EmbedCommand& command, const Embedder& embedder,
                     const EncodedTexts<EmbeddingInput>& encoded) {
  // One matrix over all the texts: with a text missing it would be another matrix, so a text
  // that failed ends the command, as heads and ablate end.
  if (encoded.status != 0) return encoded.status;
  if (encoded.items.size() < 2) {
    throw UsageError("similarity: give at least two texts");
  }
  const std::vector<std::vector<float>> vectors =
      embed(*embedder.model, encoded.items, embedder.options);
  std::vector<std::string> texts;
  for (const InputText* text : encoded.sources) texts.push_back(text->text);
  const std::vector<std::vector<float>> matrix = cosine_similarities(vectors);
  write_stdout(command.common.json ? similarity_json(texts, matrix)
                                   : similarity_table(texts, matrix));
  return encoded.status;
}

}  // namespace

// Each text's vector as it is computed (texts are packed into batches): in the text output, or
// one JSON line each ({"line" for a line of a file, "text", "embedding"}), or a row of the .npy
// matrix.
void EmbedCommand::add_options(CLI::App& app) {
  add_common_options(app, common, "tiny-bert-brown");
  add_output_options(app, common,
                     similarity ? "{\"texts\": [...], \"similarity\": [[...]]}"
                                : "one JSON object per text: {\"text\", \"embedding\"} (with "
                                  "--similarity: the matrix); -o FILE.npy writes a float32 "
                                  "matrix, one row per text");
  add_text_options(app, input, similarity ? "two or more texts" : "texts to embed");
  app.add_option_function<std::string>(
         "--pooling", [this](const std::string& name) { pooling = parse_pooling(name); },
         "how the token states become one vector: mean, cls, max or mean_sqrt_len (default: the "
         "folder's 1_Pooling/config.json, else mean)")
      ->check(CLI::IsMember({"mean", "cls", "max", "mean_sqrt_len"}));
  add_batch_tokens_option(app, batch_tokens);
  // -o FILE.npy: the vectors, written by embed itself, not the results file main.cpp opens.
  app.parse_complete_callback([this] {
    if (common.output && common.output->extension() == ".npy") {
      npy_output = std::exchange(common.output, std::nullopt);
    }
  });
  if (similarity) {
    add_examples(app,
                 {"attn similarity \"The jury met.\" \"The court sat.\" \"It rained.\"",
                  "attn similarity -m sentence-transformers/all-MiniLM-L6-v2 -f texts.txt --json"});
    return;
  }
  CLI::Option* normalize_flag = app.add_flag_callback(
      "--normalize", [this] { normalize = true; },
      "L2-normalize the vectors (default: whether the folder has a Normalize module)");
  app.add_flag_callback(
         "--no-normalize", [this] { normalize = false; }, "do not L2-normalize")
      ->excludes(normalize_flag);
  app.add_flag("--similarity", similarity,
               "print the cosine similarity of every pair of texts (as attn similarity)");
  add_examples(app,
               {"attn embed \"The jury met.\" \"The court sat.\"",
                "attn embed -m sentence-transformers/all-MiniLM-L6-v2 -f texts.txt -o vectors.npy",
                "attn embed -m BAAI/bge-small-en-v1.5 --json -f texts.txt"});
}

int EmbedCommand::run(const CLI::App&) {
  const EmbedCommand& command = *this;
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
  const auto encoded = encode_texts(embedder, texts);
  if (encoded.items.empty()) return encoded.status;
  if (command.similarity) return print_similarity(command, embedder, encoded);

  Progress progress("embed", "texts", command.common.quiet);
  std::int64_t tokens_done = 0;
  auto count_done = [&](std::size_t i) {
    tokens_done += std::int64_t(encoded.items[i].ids.size());
    progress.update(std::int64_t(i) + 1, std::int64_t(encoded.items.size()), tokens_done);
  };
  if (npy_file) {
    NpyMatrixWriter writer(*npy_file, encoded.items.size(), std::size_t(model.spec().d_model));
    embed(model, encoded.items, embedder.options,
          [&](std::size_t i, std::span<const float> vector) {
            writer.write_row(vector);
            count_done(i);
          });
    writer.finish();
    // Whole or not at all, as -o always is: a run in which a text failed leaves no file.
    if (encoded.status == 0) npy_file->commit();
    spdlog::info("-o {}: {} x {} float32, one row per text in order", command.npy_output->string(),
                 encoded.items.size(), model.spec().d_model);
    warn_blank_lines(texts, *command.npy_output);
    return encoded.status;
  }

  if (!command.common.json) write_stdout(embeddings_header(embedder));
  embed(model, encoded.items, embedder.options, [&](std::size_t i, std::span<const float> vector) {
    const InputText& text = *encoded.sources[i];
    if (command.common.json) {
      // The vector in its shortest float32 form, which nlohmann would print as doubles.
      std::string line = json_text(text_json(text));
      line.pop_back();  // the closing brace
      write_stdout(line + ",\"embedding\":" + float_array_json(vector) + "}\n");
    } else {
      write_stdout(embedding_entry(entry_label(text, i), text.text, encoded.items[i], vector));
    }
    count_done(i);
  });
  if (!command.common.json && std::size_t(model.spec().d_model) > kShownValues) {
    write_stdout("\nall values: --json, or -o FILE.npy\n");
  }
  flush_stdout();
  return encoded.status;
}

std::unique_ptr<Command> make_embed_command() { return std::make_unique<EmbedCommand>(false); }
std::unique_ptr<Command> make_similarity_command() { return std::make_unique<EmbedCommand>(true); }

}  // namespace attn
