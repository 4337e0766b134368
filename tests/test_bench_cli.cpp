// attn bench as llama-bench: comma lists run every combination, mean ± standard deviation of
// -r repetitions, -o md|csv|json|jsonl, and --json's single object that benchmark scripts read
// from the last line. No test looks at how fast anything was: only at what was run and printed.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/cli_util.h"
#include "tests/hostile_util.h"
#include "tests/test_paths.h"

namespace attn::test {
namespace {

using nlohmann::json;

const std::string kGpt2 = shipped_model("tiny-gpt2-brown").string();
const std::string kBert = shipped_model("tiny-bert-brown").string();

CommandResult bench(std::vector<std::string> args) {
  args.insert(args.begin(), "bench");
  return run_attn(args);
}

std::vector<json> json_lines(const CommandResult& result) {
  std::vector<json> objects;
  for (const std::string& line : split_lines_of(result.out)) objects.push_back(json::parse(line));
  return objects;
}

// The cells of a markdown table row "| a | b |", trimmed.
std::vector<std::string> markdown_cells(const std::string& row) {
  std::vector<std::string> cells;
  std::size_t begin = 1;  // past the first '|'
  for (std::size_t bar; (bar = row.find(" |", begin)) != std::string::npos; begin = bar + 2) {
    std::string cell = row.substr(begin, bar - begin);
    cell.erase(0, cell.find_first_not_of(' '));
    cell.erase(cell.find_last_not_of(' ') + 1);
    cells.push_back(cell);
  }
  return cells;
}

// The fields of a CSV line (RFC 4180: quoted fields may hold commas and doubled quotes).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

const std::regex kMeanAndStddev("[0-9]+\\.[0-9]{2} ± [0-9]+\\.[0-9]{2}");

TEST(BenchCli, CommaListsRunEveryCombination) {
  const CommandResult result =
      bench({"-m", kGpt2, "-p", "8,16", "-n", "4", "-t", "1,2", "-r", "2", "-o", "jsonl", "-q"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  EXPECT_EQ(result.err, "");
  const std::vector<json> lines = json_lines(result);
  ASSERT_EQ(lines.size(), 4u) << result.out;
  std::set<std::pair<int, int>> prompt_and_threads;
  for (const json& line : lines) {
    prompt_and_threads.insert({line["n_prompt"].get<int>(), line["threads"].get<int>()});
    EXPECT_EQ(line["prompt_tokens"], line["n_prompt"]);
    EXPECT_EQ(line["n_gen"], 4);
    EXPECT_EQ(line["repetitions"], 2);
    EXPECT_EQ(line["prompt_tokens_per_s_samples"].size(), 2u);
    EXPECT_EQ(line["decode_tokens_per_s_samples"].size(), 2u);
  }
  EXPECT_EQ(prompt_and_threads, (std::set<std::pair<int, int>>{{8, 1}, {8, 2}, {16, 1}, {16, 2}}));
}

TEST(BenchCli, MeanAndSampleStandardDeviationOfTheRepetitions) {
  const CommandResult result =
      bench({"-m", kGpt2, "-p", "8", "-n", "3", "-r", "3", "--json", "-q"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const json out = json::parse(result.out);
  for (const std::string key : {"prompt_tokens_per_s", "decode_tokens_per_s"}) {
    const std::vector<double> samples = out[key + "_samples"];
    ASSERT_EQ(samples.size(), 3u) << key;
    const double mean = (samples[0] + samples[1] + samples[2]) / 3;
    double squares = 0;
    for (double sample : samples) squares += (sample - mean) * (sample - mean);
    EXPECT_NEAR(out[key].get<double>(), mean, 1e-9 * mean) << key;
    EXPECT_NEAR(out[key + "_stddev"].get<double>(), std::sqrt(squares / 2), 1e-9 * mean) << key;
  }
}

TEST(BenchCli, MarkdownByDefaultWithARowPerMeasurement) {
  // pp8 alone for -n 0; pp8 and then tg4 at a depth of 8 for -n 4.
  const CommandResult result = bench({"-m", kGpt2, "-p", "8", "-n", "0,4", "-t", "1", "-r", "2"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const std::vector<std::string> lines = split_lines_of(result.out);
  ASSERT_EQ(lines.size(), 5u) << result.out;
  EXPECT_EQ(markdown_cells(lines[0]), (std::vector<std::string>{"model", "params", "size", "dtype",
                                                                "threads", "test", "t/s"}));
  EXPECT_TRUE(std::regex_match(lines[1], std::regex("\\|( -+:? \\|){7}"))) << lines[1];
  const std::vector<std::string> tests = {"pp8", "pp8", "tg4 @ d8"};
  for (std::size_t row = 0; row < tests.size(); ++row) {
    const std::vector<std::string> cells = markdown_cells(lines[row + 2]);
    ASSERT_EQ(cells.size(), 7u) << lines[row + 2];
    EXPECT_EQ(cells[0], "tiny-gpt2-brown");
    EXPECT_EQ(cells[1], "7.29 M");
    EXPECT_EQ(cells[3], "f32");
    EXPECT_EQ(cells[4], "1");
    EXPECT_EQ(cells[5], tests[row]);
    EXPECT_TRUE(std::regex_match(cells[6], kMeanAndStddev)) << cells[6];
  }
  // Progress on stderr, never on stdout.
  EXPECT_NE(result.err.find("pp8 tg4, 1 thread: repetition 2/2"), std::string::npos) << result.err;
}

TEST(BenchCli, CsvHasAHeaderAndALinePerCombination) {
  const CommandResult result =
      bench({"-m", kGpt2, "-p", "8", "-n", "0,2", "-t", "1,2", "-r", "2", "-o", "csv", "-q"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const std::vector<std::string> lines = split_lines_of(result.out);
  ASSERT_EQ(lines.size(), 5u) << result.out;
  const std::vector<std::string> header = csv_fields(lines[0]);
  // The columns are the JSON keys, in the same order.
  const CommandResult one = bench({"-m", kGpt2, "-p", "8", "-n", "2", "-r", "1", "--json", "-q"});
  ASSERT_EQ(one.exit_status, 0) << describe(one);
  const nlohmann::ordered_json object = nlohmann::ordered_json::parse(one.out);
  std::vector<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.push_back(key);
  EXPECT_EQ(header, keys);
  const auto column = [&](const std::string& name) {
    return std::size_t(std::find(header.begin(), header.end(), name) - header.begin());
  };
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> fields = csv_fields(lines[i]);
    ASSERT_EQ(fields.size(), header.size()) << lines[i];
    EXPECT_EQ(fields[column("model")], "tiny-gpt2-brown");
    EXPECT_EQ(fields[column("n_gen")], i <= 2 ? "0" : "2") << lines[i];
    EXPECT_EQ(fields[column("threads")], i % 2 ? "1" : "2") << lines[i];
  }
}

// Benchmark scripts run `attn bench ... --json -q` and read the last line of stdout: one
// object with the keys bench has always printed, the means, and the new ones.
TEST(BenchCli, JsonOfOneCombinationIsOneObjectWithTheLegacyKeys) {
  for (const char* format : {"--json", "-o json"}) {
    std::vector<std::string> args = {"-m", kGpt2, "-p", "8", "-n", "4", "-t", "1", "-r", "2", "-q"};
    if (std::string(format) == "--json") {
      args.push_back("--json");
    } else {
      args.insert(args.end(), {"-o", "json"});
    }
    const CommandResult result = bench(args);
    ASSERT_EQ(result.exit_status, 0) << describe(result);
    ASSERT_EQ(split_lines_of(result.out).size(), 1u) << format << "\n" << result.out;
    const json out = json::parse(split_lines_of(result.out).back());
    for (const char* key : {"prompt_tokens_per_s", "decode_tokens_per_s", "weight_bytes_per_token",
                            "decode_gb_per_s", "load_ms", "peak_rss_mb"}) {
      ASSERT_TRUE(out.contains(key) && out[key].is_number()) << format << " " << key;
      EXPECT_GT(out[key].get<double>(), 0) << format << " " << key;
    }
    EXPECT_EQ(out["model"], "tiny-gpt2-brown");
    EXPECT_EQ(out["dtype"], "f32");
    EXPECT_EQ(out["prompt_tokens"], 8);
    EXPECT_EQ(out["new_tokens"], 4);
    EXPECT_EQ(out["repetitions"], 2);
    EXPECT_EQ(out["threads"], 1);
    EXPECT_EQ(out["n_prompt"], 8);
    EXPECT_EQ(out["n_gen"], 4);
    EXPECT_TRUE(out["prompt_tokens_per_s_stddev"].is_number()) << format;
    EXPECT_TRUE(out["decode_tokens_per_s_stddev"].is_number()) << format;
  }
}

TEST(BenchCli, EachDtypeIsLoadedAndRun) {
  const CommandResult result =
      bench({"-m", kGpt2, "-p", "8", "-n", "2", "-r", "1", "--dtype", "f32,q8", "--json", "-q"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const std::vector<json> lines = json_lines(result);
  ASSERT_EQ(lines.size(), 2u) << result.out;
  EXPECT_EQ(lines[0]["dtype"], "f32");
  EXPECT_EQ(lines[1]["dtype"], "q8_0");
  EXPECT_LT(lines[1]["weight_bytes_per_token"], lines[0]["weight_bytes_per_token"]);
}

TEST(BenchCli, EncoderGivesMsPerSequenceForEachBatch) {
  // -n is a decoder's: an encoder runs -p x --batch x -t, as the scripts' -n 128 has always been.
  const CommandResult result =
      bench({"-m", kBert, "-p", "16", "-n", "4,8", "-b", "1,2", "-r", "2", "-o", "jsonl", "-q"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const std::vector<json> lines = json_lines(result);
  ASSERT_EQ(lines.size(), 2u) << result.out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const json& line = lines[i];
    EXPECT_EQ(line["batch"], i + 1);
    EXPECT_EQ(line["sequence_tokens"], 16);
    for (const char* key : {"ms_per_sequence", "sequences_per_s", "load_ms", "peak_rss_mb"}) {
      ASSERT_TRUE(line.contains(key) && line[key].is_number()) << key;
      EXPECT_GT(line[key].get<double>(), 0) << key;
    }
    EXPECT_EQ(line["ms_per_sequence_samples"].size(), 2u);
    EXPECT_TRUE(line["ms_per_sequence_stddev"].is_number());
    EXPECT_FALSE(line.contains("decode_tokens_per_s"));
  }

  const CommandResult table = bench({"-m", kBert, "-p", "16", "-b", "2", "-r", "1", "-q"});
  ASSERT_EQ(table.exit_status, 0) << describe(table);
  const std::vector<std::string> rows = split_lines_of(table.out);
  ASSERT_EQ(rows.size(), 3u) << table.out;
  EXPECT_EQ(markdown_cells(rows[0]).back(), "seq/s");
  const std::vector<std::string> cells = markdown_cells(rows[2]);
  ASSERT_EQ(cells.size(), 8u) << rows[2];
  EXPECT_EQ(cells[5], "seq16 x2");
  EXPECT_TRUE(std::regex_match(cells[6], kMeanAndStddev)) << cells[6];
}

struct BadList {
  const char* test_name;
  std::vector<std::string> args;
  std::string expected;
};

std::ostream& operator<<(std::ostream& out, const BadList& c) { return out << c.test_name; }

class BenchCliBadList : public ::testing::TestWithParam<BadList> {};

TEST_P(BenchCliBadList, IsAUsageErrorNamingTheOptionAndTheItem) {
  std::vector<std::string> args = {"-m", kGpt2};
  args.insert(args.end(), GetParam().args.begin(), GetParam().args.end());
  expect_clean_failure(bench(args), kUsageError, {GetParam().expected});
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BenchCliBadList,
    ::testing::Values(
        BadList{"PromptNotANumber",
                {"-p", "128,x"},
                "--prompt-tokens: must be a whole number, got x in '128,x'"},
        BadList{"EmptyItem",
                {"-t", "1,,2"},
                "--threads: must be a comma list without empty items, got '1,,2'"},
        BadList{"TrailingComma",
                {"-n", "4,"},
                "--new-tokens: must be a comma list without empty items, got '4,'"},
        BadList{
            "NegativeNewTokens", {"-n", "4,-1"}, "--new-tokens: must be >= 0, got -1 in '4,-1'"},
        BadList{"ZeroBatch", {"-b", "2,0"}, "--batch: must be > 0, got 0 in '2,0'"},
        BadList{
            "TooManyThreads", {"-t", "1,5000"}, "--threads: must be <= 1024, got 5000 in '1,5000'"},
        BadList{"UnknownDtype",
                {"--dtype", "f32,f8"},
                "--dtype: must be f32, f16, bf16, q8 or q4, got f8 in 'f32,f8'"},
        BadList{
            "UnknownFormat", {"-o", "xml"}, "--output: must be md, csv, json or jsonl, got xml"},
        BadList{"TooManyCombinations",
                {"-p", "1,2,3,4,5,6,7,8,9,10,11", "-n", "1,2,3,4,5,6,7,8,9,10", "-t",
                 "1,1,1,1,1,1,1,1,1,1"},
                "bench: 1100 combinations (--dtype x -p x -n x -t: 1 x 11 x 10 x 10), more than "
                "the limit of 1000"},
        BadList{"LongestPromptPastTheContext",
                {"-p", "8,500", "-n", "1,20"},
                "bench: -p + -n is 520 tokens, more than the model's context of 512"}),
    [](const auto& info) { return std::string(info.param.test_name); });

// bench --kernels: the read bandwidth of one core and of all cores first, then every instruction
// set this CPU runs (scalar always) gives its multiply-add peak (and, with bf16 products, its
// bf16 dot-product peak), a GEMM rate for each element-wise weight type and shape as a fraction
// of the peak of its kind, and a rate for each one-row kernel (dot_rows of every type,
// accumulate_rows of the element types) as a fraction of one core's read bandwidth; and every
// int8 kernel set (scalar always) its int8 multiply-add peak and a GEMM rate for q8_0 and q4_0 on
// each shape, as a fraction of that one. Rates are measured, so only their consistency is
// checked: a rate is positive, in its unit, and its fraction is the rate over the reference it
// names.
TEST(BenchCli, KernelsGiveBandwidthAndEachInstructionSetsPeakGemmAndOneRowRates) {
  const CommandResult result = bench({"--kernels", "-r", "1", "--json", "-q"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const std::vector<json> rows = json_lines(result);
  ASSERT_GE(rows.size(), 2u) << result.out;
  ASSERT_EQ(rows[0].at("test"), "read 512 MiB, 1 core");
  const double bandwidth = rows[0].at("rate");
  EXPECT_GT(bandwidth, 0);
  EXPECT_EQ(rows[0].at("fraction"), 1.0);
  EXPECT_EQ(rows[1].at("of"), "1-core read");
  // Each set's peaks, keyed by what a row names as its reference ("peak", "bf16 peak", "int8
  // peak") and the set.
  std::map<std::pair<std::string, std::string>, double> peaks;
  std::map<std::string, int> gemm_rows, int8_gemm_rows, one_row_rows;
  std::vector<json> library_rows;
  for (const json& row : rows) {
    const std::string isa = row.at("isa"), test = row.at("test"), unit = row.at("unit"),
                      of = row.at("of");
    const double rate = row.at("rate"), fraction = row.at("fraction");
    EXPECT_GT(rate, 0) << isa << " " << test;
    if (isa == "openblas" || isa == "onednn") {
      // A library's row, last: a fraction of the widest set's peak, "avx512 int8 peak".
      library_rows.push_back(row);
      continue;
    }
    ASSERT_TRUE(library_rows.empty()) << isa << " " << test << ": after a library's row";
    if (test.ends_with(" peak")) {
      EXPECT_EQ(fraction, 1.0);
      EXPECT_EQ(unit, of == "int8 peak" ? "GOP/s" : "GFLOP/s") << isa << " " << test;
      peaks[{of, isa}] = rate;
    } else if (test.starts_with("gemm ")) {
      ASSERT_TRUE(peaks.contains({of, isa}))
          << isa << " " << test << ": a GEMM row before its peak";
      const double peak = peaks[{of, isa}];
      EXPECT_NEAR(fraction, rate / peak, 1e-9 * fraction) << isa << " " << test;
      const bool in_integers = test.starts_with("gemm q8_0 ") || test.starts_with("gemm q4_0 ");
      EXPECT_EQ(of, in_integers                                              ? "int8 peak"
                    : test.starts_with("gemm bf16 ") && isa == "avx512_bf16" ? "bf16 peak"
                                                                             : "peak")
          << isa << " " << test;
      ++(in_integers ? int8_gemm_rows : gemm_rows)[isa];
    } else {
      EXPECT_EQ(unit, "GB/s") << isa << " " << test;
      EXPECT_EQ(of, "1-core read") << isa << " " << test;
      EXPECT_NEAR(fraction, rate / bandwidth, 1e-9 * fraction) << isa << " " << test;
      if (test.starts_with("dot_rows ") || test.starts_with("accumulate_rows ")) {
        ++one_row_rows[isa];
      }
    }
  }
  ASSERT_TRUE(peaks.contains({"peak", "scalar"})) << result.out;
  ASSERT_TRUE(peaks.contains({"int8 peak", "scalar"})) << result.out;
  for (const auto& [isa, count] : gemm_rows) {
    EXPECT_EQ(count, 9) << isa << ": 3 element-wise types x 3 shapes";
  }
  for (const auto& [isa, count] : int8_gemm_rows) {
    EXPECT_EQ(count, 6) << isa << ": 2 block types x 3 shapes";
  }
  for (const auto& [isa, count] : one_row_rows) {
    EXPECT_EQ(count, 8) << isa << ": dot_rows of 5 weight types, accumulate_rows of 3";
  }
  EXPECT_EQ(one_row_rows.size(), gemm_rows.size());
  for (const auto& [key, peak] : peaks) {
    const auto& [of, isa] = key;
    if (of == "bf16 peak") {
      EXPECT_EQ(isa, "avx512_bf16");
    }
    EXPECT_TRUE((of == "int8 peak" ? int8_gemm_rows : gemm_rows).contains(isa)) << isa;
  }
  for (const json& row : library_rows) {
    const std::string test = row.at("test"), of = row.at("of");
    const std::size_t space = of.find(' ');
    ASSERT_NE(space, std::string::npos) << of;
    const std::string isa = of.substr(0, space), kind = of.substr(space + 1);
    ASSERT_TRUE(peaks.contains({kind, isa})) << test << ": of " << of;
    const double fraction = row.at("fraction"), rate = row.at("rate"), peak = peaks[{kind, isa}];
    EXPECT_NEAR(fraction, rate / peak, 1e-9 * fraction) << test;
    EXPECT_TRUE(test.starts_with("gemm ")) << test;
  }
}

TEST(BenchCli, KernelsTakeNoModelOptions) {
  expect_clean_failure(bench({"--kernels", "-p", "8"}), kUsageError,
                       {"--kernels", "--prompt-tokens"});
  expect_clean_failure(bench({"--kernels", "-m", kGpt2}), kUsageError, {"--kernels", "--model"});
}

}  // namespace
}  // namespace attn::test
