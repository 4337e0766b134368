// Issue 9, sentence embeddings: attn embed and attn similarity against sentence-transformers
// v2.7 on tiny-sbert-brown (token ids, mean / normalized / cls vectors, cosines), packed batches
// against one text at a time, Python's strip and lower, the .npy writer, the command line, and
// bad sentence-transformers folders.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/io/npy.h"
#include "src/model/sentence_transformers.h"
#include "src/tasks/embed.h"
#include "tests/cli_util.h"
#include "tests/golden.h"
#include "tests/hostile_util.h"
#include "tests/model_util.h"
#include "tests/test_paths.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

using nlohmann::json;

std::filesystem::path sbert_dir() { return shared_dir() / "models/tiny-sbert-brown"; }
GoldenSet sbert_golden() { return GoldenSet("tiny-sbert-brown"); }

// The sentence-transformers folder, loaded once (only by tests that require ../shared).
struct Sbert {
  std::unique_ptr<Model> model;
  EmbeddingOptions options;  // as the folder says: mean pooling, normalized, 128 tokens
};

const Sbert& sbert() {
  static const Sbert loaded = [] {
    const auto config = read_sentence_transformers_config(sbert_dir());
    if (!config) throw std::runtime_error("tiny-sbert-brown has no modules.json");
    Sbert sbert{.model = load_model(config->transformer_dir), .options = {}};
    sbert.options = embedding_options(*sbert.model, config);
    return sbert;
  }();
  return loaded;
}

double max_abs_difference(std::span<const float> got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    worst = std::max(worst, std::abs(double(got[i]) - want[i]));
  }
  return worst;
}

std::vector<float> embed_one(const Model& model, const EmbeddingInput& input,
                             const EmbeddingOptions& options) {
  return embed(model, std::span(&input, 1), options)[0];
}

// ---- Against sentence-transformers ----

TEST(EmbedGolden, EveryTextIdsMeanNormalizedCls) {
  ATTN_REQUIRE_SHARED();
  const Sbert& s = sbert();
  EXPECT_EQ(s.options.pooling, Pooling::kMean);
  EXPECT_TRUE(s.options.normalize);
  EXPECT_EQ(s.options.max_seq_length, 128);
  EmbeddingOptions mean = s.options;
  mean.normalize = false;
  EmbeddingOptions cls = mean;
  cls.pooling = Pooling::kCls;

  double worst_mean = 0, worst_normalized = 0, worst_cls = 0;
  int truncated = 0;
  const auto lines = sbert_golden().jsonl("embeddings.jsonl");
  ASSERT_GT(lines.size(), 250u);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const json& golden = lines[i];
    const std::string text = golden["text"];
    const EmbeddingInput input = encode_for_embedding(*s.model, text, s.options);
    ASSERT_EQ(input.ids, golden["ids"].get<std::vector<int>>()) << "text " << i << ": " << text;
    EXPECT_EQ(input.ids.size() + input.dropped_tokens, golden["n_tokens_untruncated"].get<int>())
        << "text " << i;
    truncated += input.dropped_tokens > 0;

    const double d_mean = max_abs_difference(embed_one(*s.model, input, mean),
                                             golden["mean"].get<std::vector<float>>());
    const double d_normalized = max_abs_difference(embed_one(*s.model, input, s.options),
                                                   golden["normalized"].get<std::vector<float>>());
    const double d_cls = max_abs_difference(embed_one(*s.model, input, cls),
                                            golden["cls"].get<std::vector<float>>());
    EXPECT_LE(d_mean, tolerance::kEmbeddingMean) << "text " << i;
    EXPECT_LE(d_normalized, tolerance::kEmbeddingNormalized) << "text " << i;
    EXPECT_LE(d_cls, tolerance::kEmbeddingCls) << "text " << i;
    worst_mean = std::max(worst_mean, d_mean);
    worst_normalized = std::max(worst_normalized, d_normalized);
    worst_cls = std::max(worst_cls, d_cls);
  }
  EXPECT_EQ(truncated, 2);  // texts 234 and 239
  std::cout << "worst max |Δ| over " << lines.size() << " texts: mean " << worst_mean
            << ", normalized " << worst_normalized << ", cls " << worst_cls << "\n";
}

TEST(EmbedGolden, EveryCosine) {
  ATTN_REQUIRE_SHARED();
  const Sbert& s = sbert();
  double worst = 0;
  const auto pairs = sbert_golden().jsonl("similarity.jsonl");
  ASSERT_EQ(pairs.size(), 10u);
  for (const json& pair : pairs) {
    const std::vector<std::string> texts = {pair["text_a"], pair["text_b"]};
    const auto matrix = cosine_similarities(embed(*s.model, texts, s.options));
    const double diff = std::abs(matrix[0][1] - pair["cosine"].get<double>());
    EXPECT_LE(diff, tolerance::kCosine) << "pair " << pair["i"] << ", " << pair["j"];
    EXPECT_FLOAT_EQ(matrix[0][1], matrix[1][0]);
    worst = std::max(worst, diff);
  }
  std::cout << "worst |cosine - golden| over " << pairs.size() << " pairs: " << worst << "\n";
}

// all-mpnet-base-v2's layout (MPNetModel + mean pooling + normalize) on every golden text, and
// its cosines, within the bounds of the tiny-sbert-brown tests above.
TEST(EmbedGolden, MpnetFolderEveryTextAndCosine) {
  ATTN_REQUIRE_SHARED();
  const auto dir = shared_dir() / "models/tiny-sbert-mpnet-random";
  const GoldenSet golden_set("tiny-sbert-mpnet-random");
  const auto config = read_sentence_transformers_config(dir);
  ASSERT_TRUE(config);
  const auto model = load_model(config->transformer_dir);
  const EmbeddingOptions options = embedding_options(*model, config);
  EXPECT_EQ(options.pooling, Pooling::kMean);
  EXPECT_TRUE(options.normalize);
  EmbeddingOptions mean = options;
  mean.normalize = false;
  double worst_mean = 0, worst_normalized = 0;
  const auto lines = golden_set.jsonl("embeddings.jsonl");
  ASSERT_GT(lines.size(), 0u);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const json& golden = lines[i];
    const std::string text = golden["text"];
    const EmbeddingInput input = encode_for_embedding(*model, text, options);
    ASSERT_EQ(input.ids, golden["ids"].get<std::vector<int>>()) << "text " << i;
    const double d_mean = max_abs_difference(embed_one(*model, input, mean),
                                             golden["mean"].get<std::vector<float>>());
    const double d_normalized = max_abs_difference(embed_one(*model, input, options),
                                                   golden["normalized"].get<std::vector<float>>());
    EXPECT_LE(d_mean, tolerance::kEmbeddingMean) << "text " << i;
    EXPECT_LE(d_normalized, tolerance::kEmbeddingNormalized) << "text " << i;
    worst_mean = std::max(worst_mean, d_mean);
    worst_normalized = std::max(worst_normalized, d_normalized);
  }
  double worst_cosine = 0;
  for (const json& pair : golden_set.jsonl("similarity.jsonl")) {
    const std::vector<std::string> texts = {pair["text_a"], pair["text_b"]};
    const auto matrix = cosine_similarities(embed(*model, texts, options));
    const double diff = std::abs(matrix[0][1] - pair["cosine"].get<double>());
    EXPECT_LE(diff, tolerance::kCosine) << "pair " << pair["i"] << ", " << pair["j"];
    worst_cosine = std::max(worst_cosine, diff);
  }
  std::cout << "tiny-sbert-mpnet-random: worst max |Δ| over " << lines.size() << " texts: mean "
            << worst_mean << ", normalized " << worst_normalized << "; cosine " << worst_cosine
            << "\n";
}

// Every golden text packed into batches (of the default 1024 tokens, and of 200: many batches,
// one text per batch where a text is longer) gives the vectors of one text at a time, with each
// pooling, normalized or raw (tolerance::kOtherBatchUnitLength and kOtherBatchRaw say why).
TEST(EmbedGolden, PackedBatchesEqualOneTextAtATime) {
  ATTN_REQUIRE_SHARED();
  const Sbert& s = sbert();
  std::vector<EmbeddingInput> inputs;
  for (const json& line : sbert_golden().jsonl("embeddings.jsonl")) {
    inputs.push_back(encode_for_embedding(*s.model, line["text"].get<std::string>(), s.options));
  }
  for (Pooling pooling : {Pooling::kMean, Pooling::kCls, Pooling::kMax}) {
    for (bool normalize : {true, false}) {
      EmbeddingOptions options = s.options;
      options.pooling = pooling;
      options.normalize = normalize;
      const double tolerance =
          normalize ? tolerance::kOtherBatchUnitLength : tolerance::kOtherBatchRaw;
      std::vector<std::vector<float>> alone;
      for (const EmbeddingInput& input : inputs)
        alone.push_back(embed_one(*s.model, input, options));
      for (int batch_tokens : {1024, 200}) {
        options.max_batch_tokens = batch_tokens;
        const auto packed = embed(*s.model, inputs, options);
        double worst = 0;
        for (std::size_t i = 0; i < inputs.size(); ++i) {
          worst = std::max(worst, max_abs_difference(packed[i], alone[i]));
        }
        const std::string what = pooling_name(pooling) + (normalize ? ", normalized" : ", raw") +
                                 ", batches of " + std::to_string(batch_tokens) + " tokens";
        EXPECT_LE(worst, tolerance) << what;
        std::cout << what << ": worst |packed - alone| " << worst << "\n";
      }
    }
  }
}

// ---- Pooling and text preparation ----

TEST(Pooling, AsSentenceTransformersComputesIt) {
  // hidden (3 tokens, 2 dims)
  const std::vector<float> hidden = {1, -2, 3, 4, 5, -6};
  std::vector<float> out(2);
  pool(hidden.data(), 3, 2, Pooling::kMean, out);
  EXPECT_EQ(out, (std::vector<float>{3, -4.0f / 3}));
  pool(hidden.data(), 3, 2, Pooling::kCls, out);
  EXPECT_EQ(out, (std::vector<float>{1, -2}));
  pool(hidden.data(), 3, 2, Pooling::kMax, out);
  EXPECT_EQ(out, (std::vector<float>{5, 4}));
  pool(hidden.data(), 3, 2, Pooling::kMeanSqrtLen, out);
  EXPECT_FLOAT_EQ(out[0], 9 / std::sqrt(3.0f));
  EXPECT_FLOAT_EQ(out[1], -4 / std::sqrt(3.0f));

  std::vector<float> v = {3, 4};
  l2_normalize(v);
  EXPECT_EQ(v, (std::vector<float>{0.6f, 0.8f}));
  std::vector<float> zero = {0, 0};
  l2_normalize(zero);  // divided by 1e-12, not by 0
  EXPECT_EQ(zero, (std::vector<float>{0, 0}));
}

TEST(PythonText, StripIsPythonsStrip) {
  // U+2028, U+3000, U+00A0, U+0085 and U+001C are Python whitespace; U+200B is not.
  EXPECT_EQ(python_strip("\u2028\u3000 \t\u00a0a b\u0085\x1c\n", "text"), "a b");
  EXPECT_EQ(python_strip("\u200ba\u200b", "text"), "\u200ba\u200b");
  EXPECT_EQ(python_strip(" \u2029 ", "text"), "");
  EXPECT_THROW(python_strip("a\xff", "text"), Error);
}

TEST(PythonText, LowerIsPythonsLower) {
  // Python: 'ΟΔΟΣ'.lower() ends in the final sigma; 'ΣΑ' and 'AΣB' keep σ; a dot after it is
  // case-ignorable, a letter after the dot is not; 'İ'.lower() is two characters.
  EXPECT_EQ(python_lower("ΟΔΟΣ", "text"), "\u03bf\u03b4\u03bf\u03c2");
  EXPECT_EQ(python_lower("ΣΑ", "text"), "\u03c3\u03b1");
  EXPECT_EQ(python_lower("AΣB", "text"), "a\u03c3b");
  EXPECT_EQ(python_lower("AΣ.", "text"), "a\u03c2.");
  EXPECT_EQ(python_lower("AΣ.B", "text"), "a\u03c3.b");
  EXPECT_EQ(python_lower("A.Σ", "text"), "a.\u03c2");
  EXPECT_EQ(python_lower("1Σ", "text"), "1\u03c3");
  EXPECT_EQ(python_lower("İ", "text"), "i\u0307");
  EXPECT_EQ(python_lower("Hello WORLD", "text"), "hello world");
}

TEST(Npy, HeaderAsNumpyWritesIt) {
  const std::string header = npy_header(3, 128);
  EXPECT_EQ(header.size() % 64, 0u);
  EXPECT_EQ(header.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(std::size_t(header[8]) + 10, header.size());
  EXPECT_NE(header.find("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 128), }"),
            std::string::npos);
  EXPECT_TRUE(header.ends_with(" \n"));
}

TEST(Npy, WrittenMatrixReadsBack) {
  TempDir scratch;
  const std::filesystem::path path = scratch / "m.npy";
  {
    OutputFile out(path, "-o");
    NpyMatrixWriter writer(out, 2, 3);
    writer.write_row(std::vector<float>{1, 2, 3});
    EXPECT_THROW(writer.finish(), std::logic_error);
    writer.write_row(std::vector<float>{4, 5, -6.5f});
    EXPECT_THROW(writer.write_row(std::vector<float>{7, 8, 9}), std::logic_error);
    writer.finish();
    out.commit();
  }
  const NpyArray array = read_npy(path);
  EXPECT_EQ(array.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(array.values, (std::vector<float>{1, 2, 3, 4, 5, -6.5f}));
}

// ---- The command line ----

class EmbedCliTest : public HostileTest {
 protected:
  // A copy of tiny-sbert-brown to break (requires ../shared).
  std::filesystem::path copy_sbert() {
    const auto copy = scratch_ / "tiny-sbert-brown";
    std::filesystem::copy(sbert_dir(), copy, std::filesystem::copy_options::recursive);
    return copy;
  }

  static void set_json_field(const std::filesystem::path& file, const std::string& key,
                             const json& value) {
    json config = json::parse(read_file(file));
    config[key] = value;
    write_file(file, config.dump(2));
  }

  static std::vector<json> json_lines(const std::string& text) {
    std::vector<json> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
    return lines;
  }
};

TEST_F(EmbedCliTest, JsonMatchesTheLibrary) {
  ATTN_REQUIRE_SHARED();
  const std::vector<std::string> texts = {"The jury said it did find that many of the voters.",
                                          "  It was a dark and stormy night.\u2028"};
  const CommandResult result = run({"embed", "-m", sbert_dir(), "--json", texts[0], texts[1]});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  // One JSON line per text, {"text", "embedding"}: an argument has no "line".
  const std::vector<json> out = json_lines(result.out);
  const auto expected = embed(*sbert().model, texts, sbert().options);
  ASSERT_EQ(out.size(), 2u) << result.out;
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(out[i].size(), 2u) << out[i].dump();
    EXPECT_FALSE(out[i].contains("line")) << out[i].dump();
    EXPECT_EQ(out[i]["text"], texts[i]);
    // The CLI's vector (through JSON) against the library's for the same texts: not a golden.
    EXPECT_LE(max_abs_difference(expected[i], out[i]["embedding"].get<std::vector<float>>()),
              tolerance::kSameRows);
  }
}

TEST_F(EmbedCliTest, DefaultOutputIsATable) {
  ATTN_REQUIRE_SHARED();
  const CommandResult result = run({"embed", "-m", sbert_dir(), "The cat sat.", "A dog ran."});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  EXPECT_NE(result.out.find("tiny-sbert-brown: mean pooling, normalized, 128 dimensions"),
            std::string::npos)
      << result.out;
  const std::size_t n_tokens =
      encode_for_embedding(*sbert().model, "The cat sat.", sbert().options).ids.size();
  EXPECT_NE(result.out.find("text 1: The cat sat.\n  " + std::to_string(n_tokens) +
                            " tokens, norm 1.0000\n  ["),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("text 2: A dog ran."), std::string::npos) << result.out;
}

TEST_F(EmbedCliTest, SimilarityMatchesTheLibrary) {
  ATTN_REQUIRE_SHARED();
  const std::vector<std::string> texts = {"The cat sat on the mat.", "A cat was on the mat.",
                                          "Stock prices fell sharply."};
  const CommandResult result =
      run({"similarity", "-m", sbert_dir(), "--json", texts[0], texts[1], texts[2]});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const json out = json::parse(result.out);
  EXPECT_EQ(out["texts"], json(texts));
  const auto expected = cosine_similarities(embed(*sbert().model, texts, sbert().options));
  ASSERT_EQ(out["similarity"].size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    // The CLI's matrix (through JSON) against the library's for the same texts: not a golden.
    EXPECT_LE(max_abs_difference(expected[i], out["similarity"][i].get<std::vector<float>>()),
              tolerance::kSameRows);
    EXPECT_NEAR(out["similarity"][i][i].get<double>(), 1.0, tolerance::kCosine);
  }
  // embed --similarity is the same command.
  const CommandResult via_embed =
      run({"embed", "--similarity", "-m", sbert_dir(), "--json", texts[0], texts[1], texts[2]});
  EXPECT_EQ(via_embed.out, result.out);

  const CommandResult table = run({"similarity", "-m", sbert_dir(), texts[0], texts[1]});
  ASSERT_EQ(table.exit_status, 0) << describe(table);
  EXPECT_NE(table.out.find("[1]   1.0000"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("  " + texts[1] + "\n"), std::string::npos) << table.out;
}

// A text longer than max_seq_length is cut as sentence-transformers cuts it, with a warning.
TEST_F(EmbedCliTest, TruncationWarns) {
  ATTN_REQUIRE_SHARED();
  const json golden = sbert_golden().jsonl("embeddings.jsonl").at(234);
  const CommandResult result =
      run({"embed", "-m", sbert_dir(), "--json", golden["text"].get<std::string>()});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  EXPECT_NE(result.err.find("argument: 131 tokens, more than max_seq_length 128: kept the first "
                            "127 and the final [SEP] (3 dropped"),
            std::string::npos)
      << result.err;
  EXPECT_LE(max_abs_difference(json::parse(result.out)["embedding"].get<std::vector<float>>(),
                               golden["normalized"].get<std::vector<float>>()),
            tolerance::kEmbeddingNormalized);
}

TEST_F(EmbedCliTest, InfoShowsThePipeline) {
  ATTN_REQUIRE_SHARED();
  const CommandResult result = run({"info", "-m", sbert_dir(), "--json"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const json out = json::parse(result.out);
  EXPECT_EQ(out["pooling"], "mean");
  EXPECT_EQ(out["normalize"], true);
  EXPECT_EQ(out["max_seq_length"], 128);
  EXPECT_EQ(out["embedding_dimension"], 128);
  // A plain folder has none of these.
  const CommandResult plain = run({"info", "-m", shipped_model("tiny-bert-brown"), "--json"});
  EXPECT_FALSE(json::parse(plain.out).contains("pooling"));
}

// The shipped tiny-bert-brown has a masked-LM head; its encoder is tiny-sbert-brown's, so its
// mean-pooled vectors are the sentence-transformers folder's without normalization.
TEST_F(EmbedCliTest, PoolingOnAMaskedLanguageModelWorks) {
  const std::string text = "He said that the war was over.";
  const CommandResult result =
      run({"embed", "-m", shipped_model("tiny-bert-brown"), "--pooling", "mean", "--json", text});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const auto vector = json::parse(result.out)["embedding"].get<std::vector<float>>();
  EXPECT_EQ(vector.size(), 128u);
  EmbeddingOptions options;
  options.pooling = Pooling::kMean;
  const auto expected = embed(tiny_bert(), std::vector<std::string>{text}, options)[0];
  // The CLI's vectors (through JSON) against the library's, then against the same encoder's in
  // tiny-sbert-brown: attn against itself, not a golden.
  EXPECT_LE(max_abs_difference(expected, vector), tolerance::kSameRows);
  ATTN_REQUIRE_SHARED();  // the rest compares with tiny-sbert-brown, in ../shared
  const CommandResult sbert_mean =
      run({"embed", "-m", sbert_dir(), "--no-normalize", "--json", text});
  EXPECT_LE(max_abs_difference(expected,
                               json::parse(sbert_mean.out)["embedding"].get<std::vector<float>>()),
            tolerance::kSameRows);
}

// -o writes one row per text, in file order, equal to the JSON Lines. A blank line (spaces and
// tabs) is no text, as for every command: no JSON line, no row, and a warning naming it for -o.
// A line of other white space (U+3000) is a text, embedded as sentence-transformers embeds it.
TEST_F(EmbedCliTest, FileToNpyAndJsonLinesWithAnEmptyLine) {
  const std::string bert = shipped_model("tiny-bert-brown");
  write_file(scratch_ / "texts.txt", "The cat sat.\n\nA dog ran.\r\n \u3000\nIt rained.");
  const CommandResult lines = run({"embed", "-m", bert, "--pooling", "mean", "--normalize",
                                   "--json", "--file", scratch_ / "texts.txt"});
  ASSERT_EQ(lines.exit_status, 0) << describe(lines);
  EXPECT_EQ(lines.err, "");
  const std::vector<json> out = json_lines(lines.out);
  ASSERT_EQ(out.size(), 4u) << lines.out;
  const std::vector<int> expected_lines = {1, 3, 4, 5};
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i]["line"], expected_lines[i]);
  EXPECT_EQ(out[1]["text"], "A dog ran.");
  EXPECT_EQ(out[2]["text"], " \u3000");
  EXPECT_EQ(out[2]["embedding"].size(), 128u);

  TempDir output;  // outside scratch_, which run() checks is left unchanged
  const CommandResult npy = run({"embed", "-m", bert, "--pooling", "mean", "--normalize", "--file",
                                 scratch_ / "texts.txt", "-o", output / "vectors.npy"});
  ASSERT_EQ(npy.exit_status, 0) << describe(npy);
  EXPECT_EQ(npy.out, "");
  EXPECT_NE(npy.err.find("1 blank line skipped, with no row in"), std::string::npos) << npy.err;
  EXPECT_NE(npy.err.find("(line 2)"), std::string::npos) << npy.err;
  const NpyArray matrix = read_npy(output / "vectors.npy");
  ASSERT_EQ(matrix.shape, (std::vector<int64_t>{4, 128}));
  std::size_t row = 0;
  for (const json& line : out) {
    const std::span<const float> values(matrix.values.data() + row++ * 128, 128);
    EXPECT_EQ(max_abs_difference(values, line["embedding"].get<std::vector<float>>()), 0)
        << "line " << line["line"];
  }
}

TEST_F(EmbedCliTest, StandardInput) {
  write_file(scratch_ / "texts.txt", "The cat sat.\nA dog ran.\n");
  const std::string bert = shipped_model("tiny-bert-brown");
  const CommandResult piped =
      run({"embed", "-m", bert, "--pooling", "cls", "--json"}, scratch_ / "texts.txt");
  ASSERT_EQ(piped.exit_status, 0) << describe(piped);
  const CommandResult dash = run({"embed", "-m", bert, "--pooling", "cls", "--json", "--file", "-"},
                                 scratch_ / "texts.txt");
  EXPECT_EQ(piped.out, dash.out);
  const std::vector<json> out = json_lines(piped.out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1]["line"], 2);
  EXPECT_EQ(out[1]["text"], "A dog ran.");
  // Without --json, the lines of standard input print as the text table, labelled by line.
  const CommandResult table =
      run({"embed", "-m", bert, "--pooling", "cls"}, scratch_ / "texts.txt");
  ASSERT_EQ(table.exit_status, 0) << describe(table);
  EXPECT_TRUE(
      table.out.starts_with("tiny-bert-brown: cls pooling, not normalized, 128 dimensions\n"))
      << table.out;
  EXPECT_NE(table.out.find("\nline 1: The cat sat.\n"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("\nline 2: A dog ran.\n"), std::string::npos) << table.out;
}

TEST_F(EmbedCliTest, BadLineIsReportedAndTheRestRun) {
  write_file(scratch_ / "texts.txt", "The cat sat.\nbad \xff byte\nA dog ran.\n");
  const CommandResult result = run({"embed", "-m", shipped_model("tiny-bert-brown"), "--pooling",
                                    "mean", "--json", "--file", scratch_ / "texts.txt"});
  EXPECT_EQ(result.exit_status, kBadInput) << describe(result);
  EXPECT_NE(result.err.find("attn: error: --file " + (scratch_ / "texts.txt").string() +
                            ": line 2: invalid UTF-8"),
            std::string::npos)
      << result.err;
  EXPECT_EQ(json_lines(result.out).size(), 2u);
}

// ---- Bad input: one line "attn: error: ...", exit status 1 (data) or 2 (usage) ----

TEST_F(EmbedCliTest, UnknownModuleType) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_sbert();
  json modules = json::parse(read_file(model / "modules.json"));
  modules[2]["type"] = "sentence_transformers.models.Dense";
  write_file(model / "modules.json", modules.dump(2));
  expect_clean_failure(run({"embed", "-m", model, "a text"}), kBadInput,
                       {"modules.json", "module 2", "sentence_transformers.models.Dense"});
  expect_clean_failure(run({"info", "-m", model}), kBadInput, {"modules.json", "Dense"});
}

TEST_F(EmbedCliTest, ModulesFileIsNotJson) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_sbert();
  write_file(model / "modules.json", "[{\"idx\": 0,");
  expect_clean_failure(run({"embed", "-m", model, "a text"}), kBadInput,
                       {"modules.json", "not valid JSON"});
  write_file(model / "modules.json", "{\"type\": \"sentence_transformers.models.Pooling\"}");
  expect_clean_failure(run({"embed", "-m", model, "a text"}), kBadInput,
                       {"modules.json", "expected a non-empty JSON array of modules"});
}

TEST_F(EmbedCliTest, ModulesInAnotherOrder) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_sbert();
  json modules = json::parse(read_file(model / "modules.json"));
  std::swap(modules[1], modules[2]);
  write_file(model / "modules.json", modules.dump(2));
  expect_clean_failure(run({"embed", "-m", model, "a text"}), kBadInput,
                       {"modules.json", "Transformer, Normalize, Pooling"});
}

TEST_F(EmbedCliTest, ModulePathOutsideTheFolder) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_sbert();
  json modules = json::parse(read_file(model / "modules.json"));
  modules[1]["path"] = "../1_Pooling";
  write_file(model / "modules.json", modules.dump(2));
  expect_clean_failure(run({"embed", "-m", model, "a text"}), kBadInput,
                       {"modules.json", "module 1", "../1_Pooling", "inside the model folder"});
}

TEST_F(EmbedCliTest, PoolingConfigWithNoMode) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_sbert();
  set_json_field(model / "1_Pooling/config.json", "pooling_mode_mean_tokens", false);
  expect_clean_failure(run({"embed", "-m", model, "a text"}), kBadInput,
                       {"1_Pooling/config.json", "no pooling mode is true"});
}

TEST_F(EmbedCliTest, PoolingConfigWithTwoModes) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_sbert();
  set_json_field(model / "1_Pooling/config.json", "pooling_mode_max_tokens", true);
  expect_clean_failure(
      run({"embed", "-m", model, "a text"}), kBadInput,
      {"1_Pooling/config.json", "pooling_mode_mean_tokens", "pooling_mode_max_tokens", "both"});
}

TEST_F(EmbedCliTest, PoolingModeNotImplemented) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_sbert();
  set_json_field(model / "1_Pooling/config.json", "pooling_mode_mean_tokens", false);
  set_json_field(model / "1_Pooling/config.json", "pooling_mode_weightedmean_tokens", true);
  expect_clean_failure(run({"embed", "-m", model, "a text"}), kBadInput,
                       {"1_Pooling/config.json", "weightedmean", "not implemented"});
}

TEST_F(EmbedCliTest, PoolingWidthIsNotTheModels) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_sbert();
  set_json_field(model / "1_Pooling/config.json", "word_embedding_dimension", 384);
  expect_clean_failure(run({"embed", "-m", model, "a text"}), kBadInput,
                       {"1_Pooling/config.json", "word_embedding_dimension", "384", "128"});
}

TEST_F(EmbedCliTest, MaxSeqLengthPastTheModel) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_sbert();
  set_json_field(model / "sentence_bert_config.json", "max_seq_length", 513);
  expect_clean_failure(run({"embed", "-m", model, "a text"}), kBadInput,
                       {"sentence_bert_config.json", "max_seq_length", "513", "512"});
}

TEST_F(EmbedCliTest, DefaultPromptIsRefused) {
  ATTN_REQUIRE_SHARED();
  const auto model = copy_sbert();
  set_json_field(model / "config_sentence_transformers.json", "default_prompt_name", "query");
  expect_clean_failure(run({"embed", "-m", model, "a text"}), kBadInput,
                       {"config_sentence_transformers.json", "default_prompt_name", "query"});
}

// Exit status 2, as fill-mask on a decoder and generate on an encoder: the folder is a valid
// model, the command line asked the wrong thing of it.
TEST_F(EmbedCliTest, DecoderIsAUsageError) {
  expect_clean_failure(
      run({"embed", "-m", shipped_model("tiny-gpt2-brown"), "--pooling", "mean", "a text"}),
      kUsageError, {"tiny-gpt2-brown", "encoder", "decoder"});
  expect_clean_failure(run({"similarity", "-m", shipped_model("tiny-gpt2-brown"), "--pooling",
                            "mean", "a text", "another"}),
                       kUsageError, {"tiny-gpt2-brown", "decoder"});
  expect_clean_failure(run({"embed", "-m", shipped_model("tiny-gpt2-brown"), "a text"}),
                       kUsageError, {"tiny-gpt2-brown", "decoder"});
}

// A plain encoder folder (no modules.json) is mean-pooled, as sentence-transformers pools a plain
// Hugging Face model, with a one-line note saying so; --pooling chooses another without a note.
TEST_F(EmbedCliTest, PlainFolderUsesMeanPoolingAndSaysSo) {
  const std::string bert = shipped_model("tiny-bert-brown");
  const CommandResult plain = run({"embed", "-m", bert, "--json", "a text"});
  ASSERT_EQ(plain.exit_status, 0) << describe(plain);
  EXPECT_EQ(plain.err,
            bert + ": not a sentence-transformers folder (no modules.json): mean pooling\n");
  const CommandResult mean = run({"embed", "-m", bert, "--pooling", "mean", "--json", "a text"});
  ASSERT_EQ(mean.exit_status, 0) << describe(mean);
  EXPECT_EQ(mean.err, "");
  EXPECT_EQ(plain.out, mean.out);
  const CommandResult table = run({"embed", "-m", bert, "a text"});
  ASSERT_EQ(table.exit_status, 0) << describe(table);
  EXPECT_TRUE(
      table.out.starts_with("tiny-bert-brown: mean pooling, not normalized, 128 dimensions\n"))
      << table.out;
  const CommandResult similarity = run({"similarity", "-m", bert, "a text", "another text"});
  ASSERT_EQ(similarity.exit_status, 0) << describe(similarity);
  EXPECT_NE(similarity.err.find("no modules.json): mean pooling"), std::string::npos)
      << similarity.err;
  EXPECT_EQ(similarity.out,
            run({"similarity", "-m", bert, "--pooling", "mean", "a text", "another text"}).out);
}

TEST_F(EmbedCliTest, BadUsage) {
  const std::string bert = shipped_model("tiny-bert-brown");
  expect_clean_failure(run({"embed", "-m", bert, "--pooling", "sum", "a"}), kUsageError,
                       {"--pooling", "sum"});
  expect_clean_failure(run({"similarity", "-m", bert, "--pooling", "mean", "only one"}),
                       kUsageError, {"at least two"});
  expect_clean_failure(
      run({"embed", "-m", bert, "--pooling", "mean", "a", "--file", scratch_ / "x.txt"}),
      kUsageError, {"--file"});
  expect_clean_failure(
      run({"embed", "-m", bert, "--pooling", "mean", "--json", "-o", scratch_ / "v.npy", "a"}),
      kUsageError, {"-o", "--json"});
  expect_clean_failure(
      run({"embed", "-m", bert, "--pooling", "mean", "--normalize", "--no-normalize", "a"}),
      kUsageError, {"normalize"});
}

TEST_F(EmbedCliTest, EmptyTextAndFiles) {
  const std::string bert = shipped_model("tiny-bert-brown");
  // An empty argument is embedded as sentence-transformers embeds it: [CLS] [SEP], the vector of
  // a text of nothing but a space (checked below).
  const CommandResult empty = run({"embed", "-m", bert, "--pooling", "mean", "--json", ""});
  EXPECT_EQ(empty.exit_status, 0) << describe(empty);
  // An argument empty once stripped (as sentence-transformers strips it) is embedded as
  // sentence-transformers embeds it: [CLS] [SEP].
  const CommandResult stripped =
      run({"embed", "-m", bert, "--pooling", "mean", "--json", "a", " \u2028"});
  EXPECT_EQ(stripped.exit_status, 0) << describe(stripped);
  const std::vector<json> out = json_lines(stripped.out);
  ASSERT_EQ(out.size(), 2u) << stripped.out;
  EXPECT_EQ(out[0]["text"], "a");
  EXPECT_EQ(out[1]["text"], " \u2028");
  EXPECT_EQ(out[1]["embedding"].size(), 128u);
  // The same vector as the text of nothing but a space.
  const std::vector<json> space =
      json_lines(run({"embed", "-m", bert, "--pooling", "mean", "--json", " "}).out);
  ASSERT_EQ(space.size(), 1u);
  EXPECT_EQ(out[1]["embedding"], space[0]["embedding"]);
  EXPECT_EQ(json_lines(empty.out).at(0)["embedding"], space[0]["embedding"]);
  write_file(scratch_ / "empty.txt", "");
  expect_clean_failure(
      run({"embed", "-m", bert, "--pooling", "mean", "--file", scratch_ / "empty.txt"}), kBadInput,
      {"--file " + (scratch_ / "empty.txt").string() + ": no text\n"});
  write_file(scratch_ / "blank.txt", "\n  \n\t\n");
  expect_clean_failure(
      run({"embed", "-m", bert, "--pooling", "mean", "--file", scratch_ / "blank.txt"}), kBadInput,
      {"--file " + (scratch_ / "blank.txt").string() + ": no text (only blank lines)"});
}

}  // namespace
}  // namespace attn::test
