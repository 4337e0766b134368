// attn bench: every combination of the command's lists, each run once untimed and then
// -r times; the mean and sample standard deviation of every rate, as llama-bench reports them.
#include "src/cli/bench.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "src/base/error.h"
#include "src/cli/options.h"
#include "src/io/output_file.h"
#include "src/kernels/thread_pool.h"
#include "src/tasks/fill_mask.h"

namespace attn {
namespace {

// More repetitions of a benchmark tell nothing new; the bound keeps a typo from running for days.
constexpr int kMaxRepetitions = 1000;

// Keys in the order they are written: the CSV columns follow it.
using Json = nlohmann::ordered_json;

// The mean and the sample standard deviation (divided by n - 1; 0 for a single sample).
struct Summary {
  double mean = 0;
  double stddev = 0;
};

Summary summarize(const std::vector<double>& samples) {
  if (samples.empty()) return {};
  const double n = double(samples.size());
  const double mean = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
  double squares = 0;
  for (double sample : samples) squares += (sample - mean) * (sample - mean);
  return {.mean = mean, .stddev = samples.size() > 1 ? std::sqrt(squares / (n - 1)) : 0.0};
}

// out[key], out[key + "_stddev"] and out[key + "_samples"]: the mean, the spread and every
// repetition's value. Returns the mean.
double add_figure(Json& out, const std::string& key, const std::vector<double>& samples) {
  const Summary summary = summarize(samples);
  out[key] = summary.mean;
  out[key + "_stddev"] = summary.stddev;
  out[key + "_samples"] = samples;
  return summary.mean;
}

// "123.45 ± 1.23": how the table shows a summary.
std::string mean_and_stddev(double mean, double stddev) {
  return fmt::format("{:.2f} ± {:.2f}", mean, stddev);
}

// The process's peak resident memory so far: with several combinations, the largest of all the
// models loaded and runs made until now, not the current one's alone.
double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // ru_maxrss is in KiB on Linux
}

// A fixed, varied input of n ids spread over the vocabulary: speed does not depend on the ids.
std::vector<int> benchmark_ids(int n, int vocab_size) {
  std::vector<int> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = int((i * 7919L + 13) % vocab_size);
  return ids;
}

// Bytes of weight matrices one token's pass reads (every linear layer once, the embeddings only
// one row), in the types they are computed in: decode reads that much per token.
std::int64_t weight_bytes_per_token(const Model& model) {
  std::int64_t bytes = 0;
  for (std::int64_t type_bytes : model.transformer->matrix_bytes_per_token()) bytes += type_bytes;
  return bytes;
}

// The settings of one run.
struct Combination {
  int prompt_tokens = 0;
  int new_tokens = 0;  // decoders
  int batch = 0;       // encoders
  int threads = 0;     // never 0: "all cores" is resolved to their number
};

// The combinations each dtype runs: every one of the lists that apply to the model (decoders: -p,
// -n, -t; encoders: -p, --batch, -t), in that nesting, threads innermost, so that the rows of a
// test are together. Checks all of them (and their number, dtypes included) against the model
// first: a bad size fails before anything has run.
std::vector<Combination> plan(const BenchCommand& command, const Model& model) {
  const ArchSpec& spec = model.spec();
  const std::vector<int>& new_tokens_or_batch = spec.causal ? command.new_tokens : command.batch;
  // In double: a product of list lengths can be past 64 bits, and the limit is small.
  const double count = double(command.dtypes.size()) * double(command.prompt_tokens.size()) *
                       double(new_tokens_or_batch.size()) * double(command.threads.size());
  if (count > BenchCommand::kMaxCombinations) {
    throw UsageError(fmt::format(
        "bench: {:.0f} combinations (--dtype x -p x {} x -t: {} x {} x {} x {}), more than the "
        "limit of {}",
        count, spec.causal ? "-n" : "--batch", command.dtypes.size(), command.prompt_tokens.size(),
        new_tokens_or_batch.size(), command.threads.size(), BenchCommand::kMaxCombinations));
  }
  // In 64 bits: each size is at most 2^31 - 1.
  const std::int64_t longest_prompt = std::ranges::max(command.prompt_tokens);
  if (spec.causal) {
    const std::int64_t total_tokens = longest_prompt + std::ranges::max(command.new_tokens);
    if (total_tokens > spec.max_positions) {
      throw UsageError("bench: -p + -n is " + std::to_string(total_tokens) +
                       " tokens, more than the model's context of " +
                       std::to_string(spec.max_positions));
    }
  } else {
    if (longest_prompt > spec.max_positions) {
      throw UsageError("bench: -p is " + std::to_string(longest_prompt) +
                       " tokens, more than the model's max_position_embeddings of " +
                       std::to_string(spec.max_positions));
    }
    const std::int64_t batch_tokens = std::ranges::max(command.batch) * longest_prompt;
    if (batch_tokens > kMaxBatchTokens) {
      throw UsageError("bench: --batch x -p is " + std::to_string(batch_tokens) +
                       " tokens, more than the limit of " + std::to_string(kMaxBatchTokens) +
                       " tokens per batch");
    }
  }
  std::vector<Combination> combinations;
  for (int prompt_tokens : command.prompt_tokens) {
    for (int value : new_tokens_or_batch) {
      for (int threads : command.threads) {
        combinations.push_back({.prompt_tokens = prompt_tokens,
                                .new_tokens = spec.causal ? value : 0,
                                .batch = spec.causal ? 0 : value,
                                .threads = threads > 0 ? threads : available_cores()});
      }
    }
  }
  return combinations;
}

// How the log names a combination: "pp128 tg128, 2 threads" or "seq128 x4, 2 threads".
std::string describe(const Combination& combination, bool causal) {
  const std::string test =
      !causal ? fmt::format("seq{} x{}", combination.prompt_tokens, combination.batch)
      : combination.new_tokens > 0
          ? fmt::format("pp{} tg{}", combination.prompt_tokens, combination.new_tokens)
          : fmt::format("pp{}", combination.prompt_tokens);
  return fmt::format("{}, {} thread{}", test, combination.threads,
                     combination.threads == 1 ? "" : "s");
}

// Decoders: a greedy generation of -n tokens after a -p token prompt, EOS ignored; the prompt
// pass and the decode steps are timed apart (generate's own clocks). Adds the figures to `out`.
void measure_decoder(const Model& model, const Combination& combination, int repetitions,
                     Json& out) {
  const std::vector<int> prompt = benchmark_ids(combination.prompt_tokens, model.spec().vocab_size);
  GenerateOptions options;
  options.max_new_tokens = combination.new_tokens + 1;  // the first comes from the prompt pass
  options.sampling.temperature = 0;
  options.ignore_eos = true;
  const std::string name = describe(combination, true);

  // Untimed: the first pass after a load or a new pool touches the mapped weights and starts
  // the threads, which the mean would otherwise carry. The prompt and one decode step do that.
  GenerateOptions warm_up = options;
  warm_up.max_new_tokens = std::min(options.max_new_tokens, 2);
  generate(model, prompt, warm_up);

  std::vector<double> prompt_rates, decode_rates;
  for (int r = 0; r < repetitions; ++r) {
    const GenerateResult result = generate(model, prompt, options);
    prompt_rates.push_back(result.prompt_tokens_per_s());
    if (result.decode_steps > 0) decode_rates.push_back(result.decode_tokens_per_s());
    spdlog::info("{}: repetition {}/{}: prompt {:.1f} tokens/s | decode {:.1f} tokens/s", name,
                 r + 1, repetitions, prompt_rates.back(),
                 decode_rates.empty() ? 0.0 : decode_rates.back());
  }
  const std::int64_t bytes_per_token = weight_bytes_per_token(model);
  out["prompt_tokens"] = combination.prompt_tokens;
  out["new_tokens"] = combination.new_tokens;
  out["n_prompt"] = combination.prompt_tokens;  // llama-bench's names for the two above
  out["n_gen"] = combination.new_tokens;
  out["repetitions"] = repetitions;
  add_figure(out, "prompt_tokens_per_s", prompt_rates);
  const double decode_rate = add_figure(out, "decode_tokens_per_s", decode_rates);  // 0 for -n 0
  const double decode_gb_per_s = decode_rate * double(bytes_per_token) / 1e9;
  out["weight_bytes_per_token"] = bytes_per_token;
  out["decode_gb_per_s"] = decode_gb_per_s;
  if (combination.new_tokens > 0) {
    spdlog::info("{}: decode reads {:.1f} MB of weights per token, {:.2f} GB/s", name,
                 double(bytes_per_token) / 1e6, decode_gb_per_s);
  }
}

// Encoders: the full fill-mask path (forward pass, head at one mask per sequence, softmax, top 5
// and their decoded sequences) over `batch` sequences of -p tokens packed into one batch. Adds
// the figures to `out`.
void measure_encoder(const Model& model, const Combination& combination, int repetitions,
                     Json& out) {
  // Benchmark ids with a mask in the middle.
  MaskedInput input;
  input.ids = benchmark_ids(combination.prompt_tokens, model.spec().vocab_size);
  input.type_ids.assign(input.ids.size(), 0);
  input.mask_positions = {combination.prompt_tokens / 2};
  input.ids[input.mask_positions[0]] = *model.tokenizer->mask_id();
  const std::vector<MaskedInput> inputs(combination.batch, input);
  // plan() checked that batch x prompt_tokens is at most kMaxBatchTokens.
  const FillMaskOptions options{.top_k = 5,
                                .max_batch_tokens = combination.batch * combination.prompt_tokens};
  const std::string name = describe(combination, false);

  fill_mask(model, inputs, options);  // untimed warm-up, as for decoders

  std::vector<double> ms_per_sequence, sequences_per_s;
  for (int r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fill_mask(model, inputs, options);
    const double batch_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ms_per_sequence.push_back(batch_ms / combination.batch);
    sequences_per_s.push_back(1000 / ms_per_sequence.back());
    spdlog::info("{}: repetition {}/{}: {:.1f} ms per batch of {}", name, r + 1, repetitions,
                 batch_ms, combination.batch);
  }
  out["sequence_tokens"] = combination.prompt_tokens;
  out["n_prompt"] = combination.prompt_tokens;  // llama-bench's name for it
  out["batch"] = combination.batch;
  out["repetitions"] = repetitions;
  add_figure(out, "ms_per_sequence", ms_per_sequence);
  add_figure(out, "sequences_per_s", sequences_per_s);
  out["weight_bytes_per_token"] = weight_bytes_per_token(model);
}

// "7.33 M": a parameter count as llama-bench shows it.
std::string count_text(std::int64_t count) {
  if (count >= 1'000'000'000) return fmt::format("{:.2f} B", double(count) / 1e9);
  if (count >= 1'000'000) return fmt::format("{:.2f} M", double(count) / 1e6);
  if (count >= 1'000) return fmt::format("{:.2f} K", double(count) / 1e3);
  return std::to_string(count);
}

// "27.96 MiB": bytes in MiB, or GiB from 1 GiB on.
std::string bytes_text(std::int64_t bytes) {
  constexpr double kMiB = 1 << 20, kGiB = 1 << 30;
  return bytes >= kGiB ? fmt::format("{:.2f} GiB", double(bytes) / kGiB)
                       : fmt::format("{:.2f} MiB", double(bytes) / kMiB);
}

// Characters on screen: UTF-8 continuation bytes ("±" is two bytes) take no column.
std::size_t display_width(const std::string& text) {
  return std::size_t(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// Writes each combination's results on standard output as soon as it has them (flushed, so
// that a long benchmark shows its rows as it goes), in the chosen format.
class ResultWriter {
 public:
  ResultWriter(BenchCommand::Format format, bool causal) : format_(format), causal_(causal) {}

  void write(const Json& result) {
    switch (format_) {
      case BenchCommand::Format::kMarkdown:
        write_markdown(result);
        break;
      case BenchCommand::Format::kCsv:
        write_csv(result);
        break;
      case BenchCommand::Format::kJsonLines:
        write_stdout(json_text(result) + "\n");
        break;
    }
    flush_stdout();
  }

 private:
  struct Column {
    std::string title;
    std::size_t width;  // at least; a longer cell widens its own row only
    bool right_aligned;
  };

  // Markdown, as llama-bench's: a decoder's combination is two rows, its prompt pass ("pp128")
  // and its decode ("tg128 @ d128": 128 tokens decoded after 128 of context), in tokens/s; an
  // encoder's is one ("seq128 x4": 4 sequences of 128 tokens in one batch), in ms per sequence
  // and sequences/s.
  void write_markdown(const Json& result) {
    const std::string model = escape_bars(result["model"].get<std::string>());
    if (!header_written_) {
      columns_ = {{"model", std::max<std::size_t>(display_width(model), 5), false},
                  {"params", 9, true},
                  {"size", 11, true},
                  {"dtype", 10, false},
                  {"threads", 7, true},
                  {"test", 13, false}};
      if (causal_) {
        columns_.push_back({"t/s", 20, true});
      } else {
        columns_.push_back({"ms/seq", 20, true});
        columns_.push_back({"seq/s", 20, true});
      }
      std::vector<std::string> titles, rules;
      for (const Column& column : columns_) {
        titles.push_back(column.title);
        rules.push_back(std::string(column.width - column.right_aligned, '-') +
                        (column.right_aligned ? ":" : ""));
      }
      write_stdout(markdown_row(titles) + markdown_row(rules));
      header_written_ = true;
    }
    const std::vector<std::string> settings = {
        model, count_text(result["parameters"].get<std::int64_t>()),
        bytes_text(result["weight_bytes_per_token"].get<std::int64_t>()),
        result["dtype"].get<std::string>(), std::to_string(result["threads"].get<int>())};
    auto row = [&](std::vector<std::string> figures) {
      std::vector<std::string> cells = settings;
      cells.insert(cells.end(), figures.begin(), figures.end());
      return markdown_row(cells);
    };
    const auto figure = [&](const char* key) {
      return mean_and_stddev(result[key].get<double>(),
                             result[std::string(key) + "_stddev"].get<double>());
    };
    if (causal_) {
      const int prompt_tokens = result["prompt_tokens"], new_tokens = result["new_tokens"];
      std::string rows = row({fmt::format("pp{}", prompt_tokens), figure("prompt_tokens_per_s")});
      if (new_tokens > 0) {
        rows += row(
            {fmt::format("tg{} @ d{}", new_tokens, prompt_tokens), figure("decode_tokens_per_s")});
      }
      write_stdout(rows);
    } else {
      write_stdout(row({fmt::format("seq{} x{}", result["sequence_tokens"].get<int>(),
                                    result["batch"].get<int>()),
                        figure("ms_per_sequence"), figure("sequences_per_s")}));
    }
  }

  std::string markdown_row(const std::vector<std::string>& cells) const {
    std::string line = "|";
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const std::size_t width = display_width(cells[i]);
      const std::string padding(columns_[i].width > width ? columns_[i].width - width : 0, ' ');
      line += ' ';
      line += columns_[i].right_aligned ? padding + cells[i] : cells[i] + padding;
      line += " |";
    }
    return line + "\n";
  }

  // A "|" in a folder name would end its cell.
  static std::string escape_bars(const std::string& text) {
    std::string escaped;
    for (char c : text) escaped += c == '|' ? std::string("\\|") : std::string(1, c);
    return escaped;
  }

  // CSV (RFC 4180): a header of the JSON keys, then each combination's values in that order;
  // texts quoted, the per-repetition samples one quoted field of numbers separated by spaces.
  void write_csv(const Json& result) {
    std::string lines;
    if (!header_written_) {
      for (const auto& [key, value] : result.items()) {
        if (!lines.empty()) lines += ',';
        lines += key;
      }
      lines += "\n";
      header_written_ = true;
    }
    std::string fields;
    for (const auto& [key, value] : result.items()) {
      if (!fields.empty()) fields += ",";
      if (value.is_array()) {
        std::string samples;
        for (const Json& sample : value) {
          if (!samples.empty()) samples += ' ';
          samples += sample.dump();
        }
        fields += '"';
        fields += samples;
        fields += '"';
      } else if (value.is_string()) {
        std::string quoted = "\"";
        for (char c : value.get<std::string>())
          quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
        fields += quoted + "\"";
      } else {
        fields += json_text(value);
      }
    }
    write_stdout(lines + fields + "\n");
  }

  const BenchCommand::Format format_;
  const bool causal_;
  bool header_written_ = false;
  std::vector<Column> columns_;  // markdown
};

}  // namespace

void BenchCommand::add_options(CLI::App& app) {
  add_common_options(app, common, "tiny-gpt2-brown");
  app.footer(
      "-p, -n, -b, -t and --dtype take comma lists (-p 128,512 -t 1,2): every combination is run "
      "(at most " +
      std::to_string(BenchCommand::kMaxCombinations) +
      "), the model loaded once per dtype. Progress goes to stderr, results to stdout.");
  // bench's -t and --dtype take lists, a run for each value, so they replace the single-value
  // options every command has. Removing those here keeps the list rules with bench: the common
  // ones are left unset, so configure() sizes no pool and bench sets each combination's own.
  app.remove_option(app.get_option("--threads"));
  app.remove_option(app.get_option("--dtype"));
  // The items of a comma list, empty ones included ("8,,16" has three), for the checks to refuse.
  // CLI11's own delimiter would drop empty items silently.
  const auto list_items = [](const std::string& list) {
    std::vector<std::string> items;
    std::size_t begin = 0;
    for (std::size_t comma; (comma = list.find(',', begin)) != std::string::npos;
         begin = comma + 1) {
      items.push_back(list.substr(begin, comma - begin));
    }
    items.push_back(list.substr(begin));
    return items;
  };
  // Runs `item_checks` on every item of a comma list. The message names the bad item, and the
  // list when it has several: "--prompt-tokens: must be a whole number, got x in '128,x'".
  const auto each_item = [list_items](std::vector<CLI::Validator> item_checks) {
    return CLI::Validator(
        [list_items, item_checks](std::string& list) -> std::string {
          for (std::string& item : list_items(list)) {
            if (item.empty()) return "must be a comma list without empty items, got '" + list + "'";
            for (const CLI::Validator& check : item_checks) {
              const std::string problem = check(item);
              if (problem.empty()) continue;
              return list.find(',') == std::string::npos ? problem : problem + " in '" + list + "'";
            }
          }
          return "";
        },
        "");
  };
  const auto add_int_list = [&](const std::string& names, std::vector<int>& values,
                                const std::string& help, std::vector<CLI::Validator> item_checks) {
    return app
        .add_option_function<std::string>(
            names,
            [&values, list_items](const std::string& list) {
              values.clear();
              for (const std::string& item : list_items(list)) values.push_back(std::stoi(item));
            },
            help)
        ->check(each_item(std::move(item_checks)))
        ->type_name("N,...");
  };
  add_int_list("-p,--prompt-tokens", prompt_tokens,
               "prompt lengths (encoders: tokens per sequence)", {whole_number<int>(), positive()})
      ->default_str("128");
  add_int_list("-n,--new-tokens", new_tokens, "decoders: tokens to decode after the prompt",
               {whole_number<int>(), non_negative()})
      ->default_str("128");
  add_int_list("-b,--batch", batch, "encoders: sequences of -p tokens packed into one batch",
               {whole_number<int>(), positive()})
      ->default_str("1");
  add_int_list("-t,--threads", threads, "threads; 0 = the cores attn may use",
               {whole_number<int>(), non_negative(), at_most(kMaxThreads)})
      ->default_str("0");
  app.add_option_function<std::string>(
         "--dtype",
         [this, list_items](const std::string& list) {
           dtypes.clear();
           for (const std::string& name : list_items(list)) {
             dtypes.push_back(*dtype_named(name));
           }
         },
         std::string("weight types to compute in, each converted once at load: ") + kDtypeHelp +
             " (default: as stored in the weight files)")
      ->check(each_item({CLI::Validator(
          [](std::string& name) -> std::string {
            return dtype_named(name) ? "" : "must be " + dtype_list() + ", got " + name;
          },
          "")}))
      ->type_name("TYPE,...");
  app.add_option("-r,--repetitions", repetitions,
                 "timed runs of each combination, after one untimed warm-up (mean ± sample "
                 "standard deviation reported)")
      ->check(whole_number<int>())
      ->check(positive())
      ->check(at_most(kMaxRepetitions))
      ->capture_default_str();
  const std::map<std::string, BenchCommand::Format> bench_formats = {
      {"md", BenchCommand::Format::kMarkdown},
      {"csv", BenchCommand::Format::kCsv},
      {"json", BenchCommand::Format::kJsonLines},
      {"jsonl", BenchCommand::Format::kJsonLines}};
  CLI::Option* bench_format =
      app.add_option_function<std::string>(
             "-o,--output",
             [this, bench_formats](const std::string& name) { format = bench_formats.at(name); },
             "md (a table, a row per measurement), csv (a header and a line per combination) "
             "or json / jsonl (the same: a JSON object per combination, one per line)")
          ->check(CLI::Validator(
              [bench_formats](std::string& name) -> std::string {
                return bench_formats.contains(name) ? ""
                                                    : "must be md, csv, json or jsonl, got " + name;
              },
              ""))
          ->type_name("FORMAT")
          ->default_str("md");
  CLI::Option* kernels_flag = app.add_flag(
      "--kernels", kernels,
      "no model: the read bandwidth of one core and of all cores; each instruction set's "
      "multiply-add peaks on one core (f32, int8 byte products and, with AVX512_BF16, bf16 "
      "pairs), its GEMM rates on BERT-base's layer shapes (128 rows) as fractions of the peak of "
      "the same kind (q8_0 and q4_0 multiply in int8, bf16 in bf16 with AVX512_BF16), and its "
      "one-row kernels' rates (a decode step's dot_rows and accumulate_rows over 256 MiB of "
      "weights) as a fraction of one core's read bandwidth; then the same GEMM shapes through "
      "OpenBLAS and oneDNN where they are installed");
  // The options that say what model run to measure do not apply to the kernels' own.
  for (const char* name :
       {"--model", "--prompt-tokens", "--new-tokens", "--batch", "--threads", "--dtype"}) {
    kernels_flag->excludes(app.get_option(name));
  }
  app.add_flag_callback(
         "--json", [this] { format = BenchCommand::Format::kJsonLines; },
         "the same as -o json: one JSON object, or JSON Lines for several combinations")
      ->excludes(bench_format);

  add_examples(app, {"attn bench -p 128 -n 64",
                     "attn bench -m bert-base-uncased -p 128 -b 1,8 --dtype f32,bf16,q8",
                     "attn bench --kernels"});
}

int BenchCommand::run(const CLI::App&) {
  if (kernels) return run_kernel_bench(*this);
  const BenchCommand& command = *this;
  // The first dtype's model is loaded before anything runs, to check every combination against
  // it (the sizes do not depend on the dtype); each further dtype replaces it.
  std::unique_ptr<Model> model = load_model(command.common.model_dir, command.dtypes.front());
  model->require_single_stack("bench");
  const bool causal = model->spec().causal;
  if (!causal) check_fill_mask_model(*model);
  const std::vector<Combination> combinations = plan(command, *model);

  ResultWriter writer(command.format, causal);
  for (std::size_t d = 0; d < command.dtypes.size(); ++d) {
    if (d > 0) {
      model.reset();  // the previous dtype's weights go before the next are converted
      model = load_model(command.common.model_dir, command.dtypes[d]);
    }
    spdlog::info("{} ({}): loaded in {:.1f} ms", model->name(), model->compute_dtype(),
                 model->load_ms);
    for (const Combination& combination : combinations) {
      if (thread_pool().size() != combination.threads) set_thread_count(combination.threads);
      Json out = {{"model", model->name()},
                  {"parameters", model->parameter_count},
                  {"dtype", model->compute_dtype()},
                  {"threads", combination.threads}};
      if (causal) {
        measure_decoder(*model, combination, command.repetitions, out);
      } else {
        measure_encoder(*model, combination, command.repetitions, out);
      }
      out["load_ms"] = model->load_ms;
      out["peak_rss_mb"] = peak_rss_mb();
      writer.write(out);
    }
  }
  spdlog::info("peak RSS {:.1f} MB (the whole process: every dtype and combination)",
               peak_rss_mb());
  return 0;
}

std::unique_ptr<Command> make_bench_command() { return std::make_unique<BenchCommand>(); }

}  // namespace attn
