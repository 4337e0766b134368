#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/error.h"
#include "src/kernels/weight_type.h"
#include "src/tasks/attention_capture.h"
#include "src/tasks/beam_search.h"
#include "src/tasks/embed.h"
#include "src/tasks/generate.h"
#include "src/tasks/head_stats.h"
#include "src/tasks/perplexity.h"

// The subcommands of the attn command line. main.cpp parses the options into these structs and
// calls run_*; each returns the process exit status.
//
// Exit status: 0 success; 1 bad input data (a model file, or text that is not UTF-8, empty or
// longer than the context, whether given as an option, a positional argument, a file or standard
// input); 2 bad command-line usage (an unknown command or option, a bad option value or
// combination); 130 Ctrl-C stopped generate or translate, which printed what it had
// (src/cli/interrupt.h; 128 + SIGINT, as a shell reports for it); 141 standard output was a pipe
// that closed (as a shell reports for SIGPIPE).
namespace attn {

// Tokens in one packed batch, at most (fill-mask --batch-tokens, bench --batch x -p): the
// activations grow with it, about 100 kB per token for BERT-base.
constexpr int kMaxBatchTokens = 16384;

struct CommonOptions {
  // -m: a model folder or, once resolve_model_folder has run, the Hugging Face cache's snapshot
  // of a repository id (ORG/NAME) at --revision.
  std::filesystem::path model_dir;
  std::optional<std::string> revision;
  std::optional<WeightType> dtype;  // --dtype: compute in this type; default, the file's
  int threads = 0;                  // 0 = all cores
  bool verbose = false;
  bool quiet = false;
};

// Which generation settings the command line gave: the others come from the model folder's
// generation_config.json when it has them.
struct GenerationFlagsGiven {
  bool max_new_tokens = false;
  bool temperature = false;
  bool top_k = false;
  bool top_p = false;
  bool min_p = false;
  bool typical_p = false;
  bool repetition_penalty = false;
  bool seed = false;
};

struct GenerateCommand {
  CommonOptions common;
  GenerationFlagsGiven given;
  std::optional<std::string> prompt;
  std::optional<std::filesystem::path> prompt_file;  // "-" = standard input
  GenerateOptions options;
  BeamSearchOptions beam;  // used when beam.beams > 1
  bool truncate = false;
  bool json = false;
  bool stream = false;  // with json: JSON Lines, one per token, before the summary
  // JSON Lines with the attention row behind each generated token, when given.
  std::optional<std::filesystem::path> attention_out;
  AttentionOptions attention;
};

struct TokenizeCommand {
  CommonOptions common;
  std::vector<std::string> texts;             // none: --file, or standard input, a text a line
  std::optional<std::filesystem::path> file;  // one text per line; "-": standard input
  std::optional<std::string> pair;
  bool no_special = false;    // add_special_tokens=False
  bool decode = false;        // the inputs are ids, printed back as text
  bool skip_special = false;  // with decode: skip_special_tokens=True
  bool json = false;
};

struct BenchCommand {
  CommonOptions common;
  int prompt_tokens = 128;
  int new_tokens = 128;
  int repetitions = 5;
  int batch = 1;  // encoders: sequences per packed batch
  bool json = false;
};

struct FillMaskCommand {
  CommonOptions common;
  std::optional<std::string> text;
  std::optional<std::string> pair;
  std::optional<std::filesystem::path> file;  // one text per line; "-" = standard input
  int top_k = 5;
  int batch_tokens = 1024;  // --file: tokens per packed batch
  bool truncate = false;
  bool json = false;
};

// attn embed, and attn similarity (similarity = true).
struct EmbedCommand {
  CommonOptions common;
  std::vector<std::string> texts;
  std::optional<std::filesystem::path> file;    // one text per line; "-" = standard input
  std::optional<std::filesystem::path> output;  // -o: a float32 .npy matrix, one row per text
  std::optional<Pooling> pooling;               // --pooling: over the folder's 1_Pooling
  std::optional<bool> normalize;                // --normalize / --no-normalize: over its Normalize
  int batch_tokens = 1024;                      // tokens per packed batch
  bool json = false;
  bool similarity = false;  // print the cosine similarity matrix instead of the vectors
};

struct AttentionCommand {
  CommonOptions common;
  std::string text;
  std::optional<std::string> pair;
  // Encoder-decoders: the decoder's text, teacher-forced; without it, the model's own
  // translation of `text`.
  std::optional<std::string> target;
  std::optional<std::filesystem::path> output;  // standard output when absent
  AttentionFormat format = AttentionFormat::kJson;
  AttentionOptions attention;
};

struct TranslateCommand {
  CommonOptions common;
  std::optional<std::string> text;
  std::optional<std::filesystem::path> file;  // one source per line; "-" = standard input
  std::optional<int> max_new_tokens;          // default: generation_config.json, else 256
  BeamSearchOptions beam;                     // beams from generation_config.json when not given
  bool beams_given = false;
  bool truncate = false;
  bool json = false;
  // JSON Lines with the cross-attention row behind each generated token, when given.
  std::optional<std::filesystem::path> attention_out;
  AttentionOptions attention;
};

struct PerplexityCommand {
  CommonOptions common;
  std::optional<std::string> text;                        // -p
  std::optional<std::filesystem::path> file;              // "-" = standard input
  std::optional<int> window;                              // default: the model's context
  std::optional<int> stride;                              // default: the window
  int batch_tokens = PerplexityOptions{}.max_batch_rows;  // windows packed per batch, in tokens
  std::optional<std::filesystem::path> per_token;         // JSON Lines: id, token, nll per position
  bool json = false;
};

enum class HeadsFormat {
  kText,  // a table by layer and head, then one line per role
  kJson,  // every number
  kHtml,  // a page with every layer and head (src/tasks/heads_view.html)
};

struct HeadsCommand {
  CommonOptions common;
  std::vector<std::string> texts;
  std::optional<std::filesystem::path> file;    // one text per line; "-" = standard input
  std::optional<std::filesystem::path> output;  // -o; standard output when absent
  HeadsFormat format = HeadsFormat::kText;
  int batch_tokens = 1024;  // tokens per packed batch
  // --probe induction / none; default: on for decoders.
  std::optional<bool> probe;
  InductionProbeOptions probe_options;
  bool probe_options_given = false;  // --probe-sequences, --probe-length or --seed
  // Encoder-decoders: report the cross-attention heads instead of the encoder's and decoder's
  // self-attention heads.
  bool cross = false;
  // Encoder-decoders: the decoder reads the model's greedy translation of each text, at most
  // this many tokens (default kHeadsTargetTokens).
  std::optional<int> max_new_tokens;
};

constexpr int kHeadsTargetTokens = 64;

// A text given by an option, a file or standard input, and where it came from, which every
// error about it names. Bad text is bad input (exit status 1) wherever it came from.
struct Prompt {
  std::string text;
  std::string source;  // e.g. "--prompt", "--file PATH" or "standard input"

  [[noreturn]] void fail(const std::string& problem) const { throw Error(source + ": " + problem); }
};

// `text` (from the option named text_option), else the file (`-`: standard input), else
// standard input; valid UTF-8 and not empty. Errors call it the `noun` ("prompt", "text").
Prompt read_prompt(const std::optional<std::string>& text,
                   const std::optional<std::filesystem::path>& file, const char* text_option,
                   const std::string& noun);

int run_generate(const GenerateCommand& command);
int run_perplexity(const PerplexityCommand& command);
int run_tokenize(const TokenizeCommand& command);
int run_info(const CommonOptions& common, bool json);
int run_bench(const BenchCommand& command);
int run_fill_mask(const FillMaskCommand& command);
int run_attention(const AttentionCommand& command);
int run_translate(const TranslateCommand& command);
int run_embed(const EmbedCommand& command);
int run_heads(const HeadsCommand& command);

// Throws Error "<what>: invalid UTF-8 at byte N" for text that is not UTF-8.
void require_utf8(std::string_view text, const std::string& what);

// JSON text that never throws: bytes that are not UTF-8 (in a folder name, say) become U+FFFD.
template <class Json>
std::string json_text(const Json& json, int indent = -1) {
  return json.dump(indent, ' ', false, Json::error_handler_t::replace);
}

// The lines of an input file (--file), without their "\n" or "\r\n"; lines[i] is line i + 1. A
// final "\n" does not start another line.
std::vector<std::string> split_lines(std::string_view contents);

// Prints "attn: error: <message>" on stderr as exactly one line: control characters (a newline
// in a file name, an escape sequence) are shown as \xNN, and a very long message is cut short.
void print_error(std::string_view message);

}  // namespace attn
