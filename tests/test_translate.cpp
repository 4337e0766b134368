// Issue 12, the command line of the encoder-decoders: attn translate (streamed text, --json,
// --file and standard input a line each or as JSON Lines, beam search, --attention-out) and attn
// attention's encoder, decoder and cross-attention sections against Hugging Face's goldens.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "src/io/json_util.h"
#include "tests/cli_util.h"
#include "tests/golden.h"
#include "tests/test_paths.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

using nlohmann::json;

class TranslateCli : public testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { ATTN_REQUIRE_SHARED(); }
  std::string model() const { return (shared_dir() / "models" / GetParam()).string(); }
  std::vector<json> golden(const char* file) const { return GoldenSet(GetParam()).jsonl(file); }

  // attn ARGS..., which must succeed; its standard output.
  std::string attn_out(std::vector<std::string> args,
                       const std::filesystem::path& stdin_path = "/dev/null") {
    const CommandResult result = run_attn(args, stdin_path);
    EXPECT_EQ(result.exit_status, 0) << describe(result);
    return result.out;
  }

  TempDir scratch_;
};

std::string model_name(const testing::TestParamInfo<const char*>& info) {
  std::string name = info.param;
  std::erase(name, '-');
  return name;
}

// The golden translation streams to standard output, and --json gives its ids.
TEST_P(TranslateCli, StreamsTheGoldenTranslation) {
  for (const json& line : golden("generate.jsonl")) {
    if (!line["near_tie_steps"].empty()) continue;
    const std::string source = line["source"];
    const std::string out = attn_out({"translate", "-m", model(), source, "-n", "48", "-q"});
    EXPECT_EQ(out, line["generated_text"].get<std::string>() + "\n") << source;
    const json result =
        json::parse(attn_out({"translate", "-m", model(), source, "-n", "48", "--json", "-q"}));
    std::vector<int> ids = line["generated_ids"];
    if (line["stopped_at_eos"].get<bool>()) ids.pop_back();
    EXPECT_EQ(result["generated_ids"], ids) << source;
    EXPECT_EQ(result["source_ids"], line["source_ids"]) << source;
    EXPECT_EQ(result["stop_reason"], line["stopped_at_eos"].get<bool>() ? "eos" : "length");
  }
}

// --file and standard input: one translation a line, a blank line for a blank line, so that the
// output stays line for line with the input; --json: one JSON line per non-blank line, numbered
// as in the file.
TEST_P(TranslateCli, FileAndStandardInputGiveALineEachOrJsonLines) {
  const auto lines = golden("generate.jsonl");
  const std::filesystem::path file = scratch_ / "sources.txt";
  write_file(file, lines.at(0)["source"].get<std::string>() + "\n\n" +
                       lines.at(1)["source"].get<std::string>() + "\n");
  for (const bool from_stdin : {false, true}) {
    const std::string text =
        from_stdin ? attn_out({"translate", "-m", model(), "-n", "48", "-q"}, file)
                   : attn_out({"translate", "-m", model(), "--file", file.string(), "-n", "48"});
    EXPECT_EQ(text, lines.at(0)["generated_text"].get<std::string>() + "\n\n" +
                        lines.at(1)["generated_text"].get<std::string>() + "\n");
    const std::string out =
        from_stdin
            ? attn_out({"translate", "-m", model(), "-n", "48", "-q", "--json"}, file)
            : attn_out({"translate", "-m", model(), "--file", file.string(), "-n", "48", "--json"});
    std::vector<json> results;
    for (const std::string& text : split_lines_of(out)) results.push_back(json::parse(text));
    ASSERT_EQ(results.size(), 2u);
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(results[i]["line"], i == 0 ? 1 : 3);
      EXPECT_EQ(results[i]["source"], lines.at(i)["source"]);
      EXPECT_EQ(results[i]["text"], lines.at(i)["generated_text"]);
    }
  }
}

// One beam is greedy search; more give sequences best first, the requested number of them.
TEST_P(TranslateCli, BeamSearch) {
  const json line = golden("generate.jsonl")[1];
  const std::string source = line["source"];
  const json one = json::parse(
      attn_out({"translate", "-m", model(), source, "-n", "20", "--beams", "1", "--json"}));
  const json greedy =
      json::parse(attn_out({"translate", "-m", model(), source, "-n", "20", "--json"}));
  EXPECT_EQ(one["generated_ids"], greedy["generated_ids"]);
  const json beams = json::parse(attn_out({"translate", "-m", model(), source, "-n", "20",
                                           "--beams", "4", "--num-return", "3", "--json"}));
  ASSERT_EQ(beams["sequences"].size(), 3u);
  for (int i = 1; i < 3; ++i) {
    EXPECT_GE(beams["sequences"][i - 1]["score"].get<double>(),
              beams["sequences"][i]["score"].get<double>());
  }
  const CommandResult bad =
      run_attn({"translate", "-m", model(), source, "--beams", "2", "--num-return", "3"});
  EXPECT_EQ(bad.exit_status, 2) << describe(bad);
  EXPECT_NE(bad.err.find("--num-return: must be at most --beams (2), got 3"), std::string::npos)
      << bad.err;
}

// The rows --attention-out writes during the translation, one pass per token through the KV
// cache, equal the cross-attention rows of attn attention's one pass over the final target,
// within the attention weights' tolerance (tolerance::kAttentionWeight): a one-query pass sums its
// dot products in another order than the matrix product of a whole pass, so float32 rounding
// differs slightly.
TEST_P(TranslateCli, AttentionOutRowsEqualTheFullPass) {
  const std::string source = golden("generate.jsonl")[3]["source"];
  const std::filesystem::path rows_file = scratch_ / "rows.jsonl";
  attn_out({"translate", "-m", model(), source, "-n", "64", "-q", "--attention-out",
            rows_file.string(), "--precision", "8"});
  const std::filesystem::path document_file = scratch_ / "attention.json";
  attn_out({"attention", "-m", model(), source, "--precision", "8", "-o", document_file.string()});
  const json document = read_json_file(document_file);
  const std::vector<std::string> lines = split_lines_of(read_file(rows_file));
  ASSERT_EQ(lines.size() + 1, document["decoder_ids"].size());
  double worst = 0;
  for (std::size_t step = 0; step < lines.size(); ++step) {
    const json line = json::parse(lines[step]);
    EXPECT_EQ(line["token_id"], document["decoder_ids"][step + 1]);
    EXPECT_EQ(line["position"], step);
    const json& layers = line["attention"];
    ASSERT_EQ(layers.size(), document["cross"].size());
    for (std::size_t l = 0; l < layers.size(); ++l) {
      for (std::size_t h = 0; h < layers[l]["heads"].size(); ++h) {
        const json& row = layers[l]["heads"][h]["weights"];
        const json& full = document["cross"][l]["heads"][h]["weights"][step];
        ASSERT_EQ(row.size(), document["tokens"].size());
        for (std::size_t k = 0; k < row.size(); ++k) {
          worst = std::max(worst, std::abs(row[k].get<double>() - full[k].get<double>()));
        }
      }
    }
  }
  EXPECT_LE(worst, tolerance::kAttentionWeight);
  std::cout << GetParam() << ": worst |generation row - full pass row|: " << worst << "\n";
}

// attn attention on an encoder-decoder: every encoder weight, and the decoder and cross rows of
// the golden's decoder tokens ([start] + its 11 greedy tokens, a prefix of attn's own
// translation, which the causal decoder cannot see past), within tolerance::kAttentionWeight.
TEST_P(TranslateCli, AttentionSectionsMatchGolden) {
  for (const json& line : golden("attention.jsonl")) {
    const std::filesystem::path file = scratch_ / "attention.json";
    attn_out({"attention", "-m", model(), line["text"], "--precision", "9", "-o", file.string()});
    const json ours = read_json_file(file);
    EXPECT_EQ(ours["token_ids"], line["ids"]);
    const std::size_t n_target = line["decoder_ids"].size();
    ASSERT_GE(ours["decoder_ids"].size(), n_target);
    for (std::size_t i = 0; i < n_target; ++i) {
      EXPECT_EQ(ours["decoder_ids"][i], line["decoder_ids"][i]);
      EXPECT_EQ(ours["decoder_tokens"][i], line["decoder_tokens"][i]);
    }
    double worst = 0;
    for (const auto& [section, golden_key] : {std::pair{"encoder", "encoder_attentions"},
                                              {"decoder", "decoder_attentions"},
                                              {"cross", "cross_attentions"}}) {
      const json& want = line[golden_key];
      ASSERT_EQ(ours[section].size(), want.size()) << section;
      for (std::size_t l = 0; l < want.size(); ++l) {
        for (std::size_t h = 0; h < want[l].size(); ++h) {
          const json& got = ours[section][l]["heads"][h]["weights"];
          for (std::size_t q = 0; q < want[l][h].size(); ++q) {
            for (std::size_t k = 0; k < want[l][h][q].size(); ++k) {
              const double diff =
                  std::abs(got[q][k].get<double>() - want[l][h][q][k].get<double>());
              worst = std::max(worst, diff);
              ASSERT_LE(diff, tolerance::kAttentionWeight)
                  << section << " layer " << l << " head " << h;
            }
          }
        }
      }
    }
    std::cout << GetParam() << ": worst |attention - golden| through the CLI: " << worst << "\n";
  }
}

// --target: the decoder reads [start] + the target's ids without their final </s>; bertviz's
// encoder-decoder shape; the page embeds the same document.
TEST_P(TranslateCli, TargetBertvizAndPage) {
  const std::string text = "The jury said it did.";
  const std::string target = "Le jury a dit.";
  const std::filesystem::path file = scratch_ / "a.json";
  attn_out(
      {"attention", "-m", model(), text, "--target", target, "--layers", "1", "-o", file.string()});
  const json ours = read_json_file(file);
  EXPECT_EQ(ours["target"], target);
  const json tokens = json::parse(attn_out({"tokenize", "-m", model(), target, "--json"}));
  std::vector<int> ids = tokens["ids"];
  ids.pop_back();  // </s>
  ids.insert(ids.begin(), ours["decoder_ids"][0].get<int>());
  EXPECT_EQ(ours["decoder_ids"], ids);
  EXPECT_EQ(ours["cross"][0]["layer"], 1);
  EXPECT_EQ(ours["cross"][0]["heads"][0]["weights"].size(), ids.size());
  EXPECT_EQ(ours["cross"][0]["heads"][0]["weights"][0].size(), ours["tokens"].size());

  const std::filesystem::path bertviz = scratch_ / "b.json";
  attn_out({"attention", "-m", model(), text, "--target", target, "--format", "bertviz", "-o",
            bertviz.string()});
  const json view = read_json_file(bertviz);
  EXPECT_EQ(view["encoder_tokens"], ours["tokens"]);
  EXPECT_EQ(view["decoder_tokens"], ours["decoder_tokens"]);
  for (const char* key : {"encoder_attention", "decoder_attention", "cross_attention"}) {
    EXPECT_EQ(view[key].size(), ours["n_decoder_layers"].get<std::size_t>()) << key;
  }
  EXPECT_EQ(view["cross_attention"][1][0], ours["cross"][0]["heads"][0]["weights"]);

  const std::filesystem::path page = scratch_ / "page.html";
  attn_out({"attention", "-m", model(), text, "--target", target, "--layers", "1", "--format",
            "html", "-o", page.string()});
  const std::string html = read_file(page);
  const std::string open = R"(<script type="application/json" id="attention-data">)";
  const std::size_t begin = html.find(open) + open.size();
  EXPECT_EQ(json::parse(html.substr(begin, html.find("</script>", begin) - begin)), ours);
}

INSTANTIATE_TEST_SUITE_P(Models, TranslateCli,
                         testing::Values("tiny-marian-random", "tiny-t5-random"), model_name);

}  // namespace
}  // namespace attn::test
