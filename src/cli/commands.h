#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/error.h"
#include "src/cli/text_input.h"
#include "src/kernels/weight_type.h"
#include "src/tasks/attention_capture.h"
#include "src/tasks/beam_search.h"
#include "src/tasks/chat.h"
#include "src/tasks/classify.h"
#include "src/tasks/embed.h"
#include "src/tasks/generate.h"
#include "src/tasks/head_stats.h"
#include "src/tasks/perplexity.h"
#include "src/tasks/token_classify.h"

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
  // -o: the results go to this file, written whole or not at all, instead of standard output.
  std::optional<std::filesystem::path> output;
  bool json = false;  // --json: one JSON object per input (JSON Lines for several)
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
  bool num_return = false;
  bool length_penalty = false;
  bool early_stopping = false;
};

// Seeds stay below 2^53, so that a seed printed in JSON survives tools that read numbers as
// doubles (jq) and can be given back to repeat a run.
constexpr std::uint64_t kMaxSeed = (std::uint64_t(1) << 53) - 1;

// How a conversation becomes a prompt (attn chat, generate --chat, tokenize --chat): the model
// folder's chat template or another, and the variables it gets beyond the messages.
struct ChatFormatOptions {
  ChatTemplateChoice choice;                   // --chat-template-file, --chat-template-name
  std::vector<std::string> variables;          // --chat-var KEY=JSON, as given
  std::optional<std::filesystem::path> tools;  // --tools FILE.json: a JSON list of tool schemas
};

struct GenerateCommand {
  CommonOptions common;
  GenerationFlagsGiven given;
  TextSources input;  // one prompt per text
  // --prompt-file: one prompt, the whole file ("-": standard input) less one final newline.
  std::optional<std::filesystem::path> prompt_file;
  GenerateOptions options;
  BeamSearchOptions beam;           // used when beam.beams > 1
  std::optional<int> context_size;  // -c: generation stops when the sequence reaches this
  std::int64_t seed = -1;           // --seed; -1: a random one
  bool truncate = false;
  bool color = false;        // --color: the generated text in colour, on a terminal
  bool hide_prompt = false;  // --no-display-prompt: the continuation alone
  bool stream = false;       // with json: JSON Lines, one per token, before the summary
  // JSON Lines with the attention row behind each generated token, when given.
  std::optional<std::filesystem::path> attention_out;
  AttentionOptions attention;
  // --chat: each prompt is a user message (after --system), rendered by the chat template.
  bool chat = false;
  std::optional<std::string> system;
  ChatFormatOptions chat_format;
};

// attn chat: a conversation with an instruct model, on a terminal (or -i) turn by turn, else
// the next assistant message of a conversation read from standard input.
struct ChatCommand {
  CommonOptions common;
  // The generation settings, given by the options generate has for them (-n, -c, --temp, ...);
  // the rest of it is unused.
  GenerateCommand generate;
  ChatFormatOptions chat_format;
  std::optional<std::string> system;  // --system: the system message
  bool interactive = false;           // -i: turn by turn even when standard input is no terminal
  bool truncate = false;              // drop the oldest turns when the context fills
  bool reuse_cache = true;            // --no-cache-reuse: compute every turn's prompt whole
};

struct TokenizeCommand {
  CommonOptions common;
  TextSources input;
  std::optional<std::string> pair;
  bool no_special = false;    // add_special_tokens=False
  bool decode = false;        // the inputs are ids, printed back as text
  bool skip_special = false;  // with decode: skip_special_tokens=True
  bool offsets = false;       // each token's [start, end) in characters of the text
  // --chat FILE.json: a conversation (a JSON list of messages) rendered by the chat template,
  // then tokenized with add_special_tokens=False, as transformers' apply_chat_template does.
  std::optional<std::filesystem::path> chat;
  bool add_generation_prompt = false;
  ChatFormatOptions chat_format;
};

// attn bench runs every combination of its lists, as llama-bench does: decoders -p x -n x -t,
// encoders -p x --batch x -t, each for every --dtype (the model is loaded once per dtype).
struct BenchCommand {
  // What standard output gets: a markdown table, a row per measurement (a decoder's prompt and
  // decode rates are two); or a line per combination, CSV or a JSON object. json and jsonl are
  // both kJsonLines: a single combination is then one JSON object, as --json always printed.
  enum class Format { kMarkdown, kCsv, kJsonLines };
  // More combinations than this are a slip (a list pasted twice), not a benchmark: refused
  // before anything runs.
  static constexpr int kMaxCombinations = 1000;

  CommonOptions common;  // common.threads and common.dtype stay unset: bench has lists of its own
  std::vector<int> prompt_tokens = {128};  // encoders: tokens per sequence
  std::vector<int> new_tokens = {128};     // decoders only
  std::vector<int> batch = {1};            // encoders only: sequences per packed batch
  std::vector<int> threads = {0};          // 0 = the cores attn may use
  std::vector<std::optional<WeightType>> dtypes = {std::nullopt};  // nullopt: as stored
  int repetitions = 5;
  Format format = Format::kMarkdown;
  // --kernels: no model; each instruction set's multiply-add peak and GEMM rate on one thread.
  bool kernels = false;
};

// attn classify: a sequence classifier's labels and scores for each text (or text pair), or
// with --labels, zero-shot classification over the given labels by an NLI model.
struct ClassifyCommand {
  CommonOptions common;
  TextSources input;
  std::optional<std::string> pair;              // --pair: the second text of every input
  int top_k = 0;                                // -k: the best k labels; 0: all
  std::optional<ScoreFunction> function;        // --function; default: the pipeline's for the model
  bool truncate = false;                        // cut inputs longer than the model's context
  int batch_tokens = 1024;                      // tokens per packed batch
  std::optional<std::string> candidate_labels;  // --labels "a,b,c": zero-shot
  std::optional<std::string> hypothesis_template;  // --template, zero-shot
  bool multi_label = false;                        // --multi-label, zero-shot
};

// attn rerank: a cross-encoder's score for one query against each passage, best first, as
// sentence-transformers' CrossEncoder.rank reports them.
struct RerankCommand {
  CommonOptions common;
  TextSources input;  // the passages
  std::string query;
  int top_k = 0;            // -k: the best k passages; 0: all
  bool activation = false;  // --activation: the sigmoid of each logit instead of the logit
  bool truncate = false;    // cut a pair longer than the model's context (its longer text)
  int batch_tokens = 1024;  // tokens per packed batch
};

// attn ner: the named entities a token classifier (…ForTokenClassification) finds in each text,
// grouped as Hugging Face's token-classification pipeline groups them.
struct NerCommand {
  CommonOptions common;
  TextSources input;
  Aggregation aggregation = Aggregation::kSimple;  // --aggregation
  std::vector<std::string> ignore_labels = {"O"};  // --ignore-labels: entities left out
  bool truncate = false;                           // cut inputs longer than the model's context
  int batch_tokens = 1024;                         // tokens per packed batch
};

struct FillMaskCommand {
  CommonOptions common;
  TextSources input;
  std::optional<std::string> pair;
  int top_k = 5;
  int batch_tokens = 1024;  // tokens per packed batch
  bool truncate = false;
};

// attn embed, and attn similarity (similarity = true).
struct EmbedCommand {
  CommonOptions common;
  TextSources input;
  // -o FILE.npy: the vectors as a float32 matrix, one row per text, instead of the printout.
  std::optional<std::filesystem::path> npy_output;
  std::optional<Pooling> pooling;  // --pooling: over the folder's 1_Pooling
  std::optional<bool> normalize;   // --normalize / --no-normalize: over its Normalize
  int batch_tokens = 1024;         // tokens per packed batch
  bool similarity = false;         // print the cosine similarity matrix instead of the vectors
};

struct AttentionCommand {
  CommonOptions common;
  TextSources input;  // exactly one text
  std::optional<std::string> pair;
  // Encoder-decoders: the decoder's text, teacher-forced; without it, the model's own
  // translation of `text`.
  std::optional<std::string> target;
  AttentionFormat format = AttentionFormat::kJson;
  AttentionOptions attention;
  // Abnar & Zuidema's attention rollout and attention flow (src/tasks/attention_flow.h),
  // written after the weights.
  bool rollout = false;
  bool flow = false;
};

struct TranslateCommand {
  CommonOptions common;
  TextSources input;
  std::optional<int> max_new_tokens;  // default: generation_config.json, else 256
  BeamSearchOptions beam;             // beams from generation_config.json when not given
  bool beams_given = false;
  bool beam_options_given = false;  // --num-return, --length-penalty or --early-stopping
  bool truncate = false;
  // JSON Lines with the cross-attention row behind each generated token, when given.
  std::optional<std::filesystem::path> attention_out;
  AttentionOptions attention;
};

struct PerplexityCommand {
  CommonOptions common;
  TextSources input;          // a file or standard input is one text, a corpus
  std::optional<int> window;  // default: the model's context
  std::optional<int> stride;  // default: the window
  int batch_tokens = PerplexityOptions{}.max_batch_rows;  // windows packed per batch, in tokens
  std::optional<std::filesystem::path> per_token;         // JSON Lines: id, token, nll per position
};

enum class HeadsFormat {
  kText,  // a table by layer and head, then one line per role
  kJson,  // every number
  kHtml,  // a page with every layer and head (src/tasks/heads_view.html)
};

struct HeadsCommand {
  CommonOptions common;
  TextSources input;
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
  // --deps FILE.conllu: score the heads against a dependency treebank instead (deps_command.cpp).
  std::optional<std::filesystem::path> deps;
};

constexpr int kHeadsTargetTokens = 64;

enum class LensFormat {
  kText,  // a table per text: positions down, layers across
  kJson,  // one object per text, in the reference files' field names
  kHtml,  // a page with a table per text (src/tasks/lens_view.html)
};

enum class AblateFormat {
  kText,  // the heads ranked, then a grid per kind of ablation
  kJson,  // every number, in the reference files' field names
  kHtml,  // a grid per kind of ablation (src/tasks/head_grid_view.html)
};

// attn ablate: the loss over the texts with each head ablated.
struct AblateCommand {
  CommonOptions common;
  TextSources input;
  AblateFormat format = AblateFormat::kText;
  std::string layers;  // the heads to ablate, as for attention ("0,5-7"; empty = all)
  std::string heads;
  // Encoders: a line per text, the original word behind each of its masks.
  std::optional<std::filesystem::path> targets;
  int batch_tokens = 1024;  // tokens per packed batch
};

// attn lens: the logit lens of each text.
struct LensCommand {
  CommonOptions common;
  TextSources input;
  LensFormat format = LensFormat::kText;
  // --target: the token whose rank and probability are followed through the layers at the
  // last position (an encoder's first mask); default: the model's own prediction there.
  std::optional<std::string> target;
};

int run_generate(const GenerateCommand& command);
int run_chat(const ChatCommand& command);
int run_classify(const ClassifyCommand& command);
int run_rerank(const RerankCommand& command);
int run_ner(const NerCommand& command);
int run_perplexity(const PerplexityCommand& command);
int run_tokenize(const TokenizeCommand& command);
int run_info(const CommonOptions& common);
int run_bench(const BenchCommand& command);
int run_kernel_bench(const BenchCommand& command);
int run_fill_mask(const FillMaskCommand& command);
int run_attention(const AttentionCommand& command);
int run_translate(const TranslateCommand& command);
int run_embed(const EmbedCommand& command);
int run_heads(const HeadsCommand& command);
int run_dependency_heads(const HeadsCommand& command);
int run_lens(const LensCommand& command);
int run_ablate(const AblateCommand& command);

// The "timings" object of generate's and chat's --json: load, prompt and decode times and
// rates.
nlohmann::ordered_json generation_timings(const GenerateResult& result, double load_ms);

// Refuses a model that cannot generate text (an encoder, or an encoder-decoder), for `command`.
void require_decoder(const Model& model, const std::string& command);

// Options that would do nothing in the mode chosen are refused, with the reason: a user who
// gives one expects it to change something (sampling options with --temp 0 or with beams, ...).
void check_options_apply(const GenerateCommand& command);

// generate's settings, with those the command line did not give taken from the model's
// generation_config.json (generate_command.cpp).
GenerateOptions with_generation_config(const GenerateCommand& command,
                                       const GenerationConfig& config);

// The chat template of command.common.model_dir as `format` chooses it
// (chat_format.cpp).
ChatTemplate load_chat_template(const std::filesystem::path& model_dir,
                                const ChatFormatOptions& format);
// --chat-var KEY=JSON ... as one object; UsageError for an item that is not KEY=JSON.
nlohmann::ordered_json chat_variables(const ChatFormatOptions& format);
// --tools FILE.json: its list of tool schemas; null without --tools.
nlohmann::ordered_json chat_tools(const ChatFormatOptions& format);
// A conversation file ("-": standard input): a JSON list of messages, checked as
// Conversation::set_messages checks it.
nlohmann::ordered_json read_conversation(const std::filesystem::path& path,
                                         const std::string& what);

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

// `page`, an HTML template, with `data` as JSON in place of `marker`. '<' (only ever inside a
// JSON string) is written \u003c, so that no "</script>" in the data ends its element early.
std::string page_with_data(std::string_view page, std::string_view marker,
                           const nlohmann::ordered_json& data);

// A float as a JSON number in its shortest decimal form: 1.3f as 1.3, not as the
// 1.2999999523162842 of its double.
double shortest(float value);

// "1 token", "2 tokens"; "1 pass", "3 passes" with plural_form "passes".
std::string plural(long count, std::string_view singular, std::string_view plural_form = {});

// Prints "attn: error: <message>" on stderr as exactly one line: control characters (a newline
// in a file name, an escape sequence) are shown as \xNN, and a very long message is cut short.
void print_error(std::string_view message);

}  // namespace attn
