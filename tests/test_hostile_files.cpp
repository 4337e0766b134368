// Issue 7, hostile model files: every file of a model folder (model.safetensors, config.json,
// the BPE and WordPiece tokenizer files) broken in one way at a time, or replaced by a folder,
// a FIFO, a device or a symbolic link. Each case must end in the contract of hostile_util.h:
// one "attn: error:" line naming the file and the problem, no crash, no hang, bounded memory,
// and no file changed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "tests/cli_util.h"
#include "tests/hostile_util.h"
#include "tests/safetensors_util.h"

namespace attn::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kGpt2 = "tiny-gpt2-brown";
constexpr const char* kBert = "tiny-bert-brown";

// A value nested a million levels deep: printing or walking it recursively overflows the stack.
std::string deeply_nested(std::size_t depth = 1'000'000) {
  return std::string(depth, '[') + std::string(depth, ']');
}

void edit_json(const fs::path& file, const std::function<void(json&)>& edit) {
  json value = json::parse(read_file(file));
  edit(value);
  write_file(file, value.dump(2));
}

// `file` re-written with `text` inserted right after its opening brace, so that the new member
// comes first.
void insert_first_member(const fs::path& file, const std::string& member) {
  std::string text = read_file(file);
  text.insert(text.find('{') + 1, member + ",");
  write_file(file, text);
}

// `file` with the first occurrence of `from` replaced by `to`.
void replace_text(const fs::path& file, const std::string& from, const std::string& to) {
  std::string text = read_file(file);
  const std::size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from << " not in " << file;
  write_file(file, text.replace(at, from.size(), to));
}

void replace_with_fifo(const fs::path& file) {
  fs::remove_all(file);
  ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0) << std::strerror(errno);
}

void replace_with_folder(const fs::path& file) {
  fs::remove_all(file);
  fs::create_directory(file);
}

void replace_with_link(const fs::path& file, const fs::path& target) {
  fs::remove_all(file);
  fs::create_symlink(target, file);
}

// The two parts of a safetensors file, for rewriting its header.
struct SafetensorsParts {
  std::string header;
  std::string data;
};

SafetensorsParts read_parts(const fs::path& file) {
  const std::string bytes = read_file(file);
  uint64_t header_length = 0;
  std::memcpy(&header_length, bytes.data(), 8);
  return {bytes.substr(8, header_length), bytes.substr(8 + header_length)};
}

// Rewrites the header text of a safetensors file, keeping its data section.
void edit_header_text(const fs::path& file, const std::function<void(std::string&)>& edit) {
  SafetensorsParts parts = read_parts(file);
  edit(parts.header);
  write_file(file, safetensors_bytes(parts.header, parts.data));
}

void edit_header(const fs::path& file, const std::function<void(json&)>& edit) {
  edit_header_text(file, [&](std::string& text) {
    json header = json::parse(text);
    edit(header);
    text = header.dump();
  });
}

// The header with its __metadata__ removed and `member` (raw JSON text) as its first member.
void insert_first_header_member(const fs::path& file, const std::string& member) {
  edit_header_text(file, [&](std::string& text) {
    json header = json::parse(text);
    header.erase("__metadata__");
    text = "{" + member + "," + header.dump().substr(1);
  });
}

class HostileFilesTest : public HostileTest {
 protected:
  // `attn info` loads everything a model folder holds: config, tokenizer and weights.
  CommandResult info(const fs::path& model) { return run({"info", "-m", model}); }

  // A copy of `model_name` for breaking `file` in. The slow tokenizer's own files are read only
  // from a folder without tokenizer.json, which the copy then lacks.
  fs::path copy_to_break(const char* model_name, const char* file) {
    for (const char* slow_file : {"vocab.json", "merges.txt", "vocab.txt"}) {
      if (std::string_view(file) == slow_file) return copy_model_without_tokenizer_json(model_name);
    }
    return copy_model(model_name);
  }

  // A copy of `model_name` with `file` broken by `damage`, and attn info run on it; the one
  // error line must name the file and contain every one of `problem`.
  void expect_refused(const char* model_name, const char* file,
                      const std::function<void(const fs::path&)>& damage,
                      std::initializer_list<std::string> problem) {
    expect_refused(copy_to_break(model_name, file), file, damage, problem);
  }

  // The same in `model`, a copy already made.
  void expect_refused(const fs::path& model, const char* file,
                      const std::function<void(const fs::path&)>& damage,
                      std::initializer_list<std::string> problem) {
    damage(model / file);
    const CommandResult result = info(model);
    expect_clean_failure(result, kBadInput, {(model / file).string()});
    for (const std::string& part : problem) {
      EXPECT_NE(result.err.find(part), std::string::npos) << "stderr lacks \"" << part << "\"\n"
                                                          << describe(result);
    }
    // Whatever the file held, the line is short and has no raw control bytes.
    EXPECT_LT(result.err.size(), 1000u) << describe(result);
    EXPECT_EQ(result.err.find('\x1b'), std::string::npos) << describe(result);
  }

  // The same with `file` replaced by a symbolic link to itself, which opens with ELOOP. The
  // fixture's snapshots resolve links and cannot list a folder holding a loop, so the loop
  // exists only while attn runs, and the model's other files are compared before and after.
  void expect_link_loop_refused(const char* model_name, const char* file) {
    const fs::path model = copy_to_break(model_name, file);
    const fs::path link = model / file;
    fs::remove_all(link);
    FolderSnapshot before = snapshot(model);
    fs::create_symlink(link.filename(), link);
    const CommandResult result = run_attn({"info", "-m", model});
    fs::remove(link);
    FolderSnapshot after = snapshot(model);
    EXPECT_EQ(changed_files(before, after), std::vector<std::string>());
    expect_clean_failure(
        result, kBadInput,
        {link.string() + ": cannot open file (Too many levels of symbolic links)"});
  }
};

// ---- model.safetensors: the header ----------------------------------------------------------

TEST_F(HostileFilesTest, SafetensorsHeaderLengthZero) {
  expect_refused(
      kGpt2, "model.safetensors",
      [](const fs::path& file) { edit_header_text(file, [](std::string& text) { text.clear(); }); },
      {"header is not valid JSON"});
}

TEST_F(HostileFilesTest, SafetensorsHeaderLengthOfTwoToThe63) {
  expect_refused(kGpt2, "model.safetensors",
                 [](const fs::path& file) {
                   std::string bytes = read_file(file);
                   const uint64_t length = uint64_t{1} << 63;
                   std::memcpy(bytes.data(), &length, 8);
                   write_file(file, bytes);
                 },
                 {"header length 9223372036854775808", "100 MB limit"});
}

TEST_F(HostileFilesTest, SafetensorsHeaderWithTrailingGarbage) {
  expect_refused(kGpt2, "model.safetensors",
                 [](const fs::path& file) {
                   edit_header_text(file, [](std::string& text) { text += "}garbage"; });
                 },
                 {"header is not valid JSON"});
}

TEST_F(HostileFilesTest, SafetensorsHeaderWithInvalidUtf8InAName) {
  expect_refused(
      kGpt2, "model.safetensors",
      [](const fs::path& file) { insert_first_header_member(file, "\"bad\xff\xfe name\": {}"); },
      {"header is not valid JSON", "UTF-8"});
}

TEST_F(HostileFilesTest, SafetensorsMetadataNumberOutOfRange) {
  expect_refused(kGpt2, "model.safetensors",
                 [](const fs::path& file) {
                   insert_first_header_member(file, R"("__metadata__": {"format": 1e400})");
                 },
                 {"header is not valid JSON (number 1e400 is out of range)"});
}

TEST_F(HostileFilesTest, SafetensorsMetadataNestedAMillionDeep) {
  expect_refused(kGpt2, "model.safetensors",
                 [](const fs::path& file) {
                   insert_first_header_member(file, "\"__metadata__\": " + deeply_nested());
                 },
                 {"header is JSON nested more than 512 levels deep"});
}

TEST_F(HostileFilesTest, SafetensorsMetadataWithANonStringValue) {
  expect_refused(kGpt2, "model.safetensors",
                 [](const fs::path& file) {
                   edit_header(file, [](json& header) { header["__metadata__"]["format"] = 5; });
                 },
                 {"header: __metadata__ must map names to strings"});
}

// Ten million numbers: read as a JSON value, they alone would take hundreds of megabytes.
TEST_F(HostileFilesTest, SafetensorsMetadataWithAHugeArray) {
  expect_refused(kGpt2, "model.safetensors",
                 [](const fs::path& file) {
                   std::string numbers = "[";
                   for (int i = 0; i < 10'000'000; ++i) numbers += "1,";
                   numbers.back() = ']';
                   insert_first_header_member(file,
                                              R"("__metadata__": {"format": )" + numbers + "}");
                 },
                 {"header: __metadata__ must map names to strings"});
}

TEST_F(HostileFilesTest, SafetensorsDuplicateTensorName) {
  expect_refused(kGpt2, "model.safetensors",
                 [](const fs::path& file) {
                   edit_header_text(file, [](std::string& text) {
                     const json header = json::parse(text);
                     const std::string name = "transformer.ln_f.bias";
                     text = "{\"" + name + "\":" + header[name].dump() + "," + text.substr(1);
                   });
                 },
                 {"tensor 'transformer.ln_f.bias' appears twice in the header"});
}

TEST_F(HostileFilesTest, SafetensorsEntryThatIsAnArray) {
  expect_refused(kGpt2, "model.safetensors",
                 [](const fs::path& file) {
                   edit_header(file, [](json& header) {
                     header["transformer.ln_f.bias"] = json::array({"F32", {128}, {0, 512}});
                   });
                 },
                 {"tensor 'transformer.ln_f.bias'", "dtype, shape and data_offsets"});
}

TEST_F(HostileFilesTest, SafetensorsDtypeThatIsANumber) {
  expect_refused(kGpt2, "model.safetensors",
                 [](const fs::path& file) {
                   edit_header(file,
                               [](json& header) { header["transformer.ln_f.bias"]["dtype"] = 32; });
                 },
                 {"tensor 'transformer.ln_f.bias'", "dtype, shape and data_offsets"});
}

TEST_F(HostileFilesTest, SafetensorsUnknownDtype) {
  expect_refused(
      kGpt2, "model.safetensors",
      [](const fs::path& file) {
        edit_header(file, [](json& header) { header["transformer.ln_f.bias"]["dtype"] = "F33"; });
      },
      {"tensor 'transformer.ln_f.bias': unknown dtype 'F33'"});
}

TEST_F(HostileFilesTest, SafetensorsDtypeWithAnEscapeSequence) {
  expect_refused(kGpt2, "model.safetensors",
                 [](const fs::path& file) {
                   edit_header(file, [](json& header) {
                     header["transformer.ln_f.bias"]["dtype"] = "\x1b[2J" + std::string(500, 'F');
                   });
                 },
                 {"unknown dtype '\\x1B[2JFFF", "...'"});
}

TEST_F(HostileFilesTest, SafetensorsNulInATensorName) {
  expect_refused(kGpt2, "model.safetensors",
                 [](const fs::path& file) {
                   edit_header(file, [](json& header) {
                     header[std::string("extra\0name", 10)] = {
                         {"dtype", "Q4"}, {"shape", {0}}, {"data_offsets", {0, 0}}};
                   });
                 },
                 {"tensor 'extra\\x00name': unknown dtype 'Q4'"});
}

TEST_F(HostileFilesTest, SafetensorsControlCharactersInATensorName) {
  expect_refused(kGpt2, "model.safetensors",
                 [](const fs::path& file) {
                   edit_header(file, [](json& header) {
                     header["\x1b]0;pwned\x07\n\r"] = {
                         {"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {7, 3}}};
                   });
                 },
                 {"tensor '\\x1B]0;pwned\\x07\\x0A\\x0D'", "end before they begin"});
}

TEST_F(HostileFilesTest, SafetensorsShapeThatIsAString) {
  expect_refused(
      kGpt2, "model.safetensors",
      [](const fs::path& file) {
        edit_header(file, [](json& header) { header["transformer.ln_f.bias"]["shape"] = "128"; });
      },
      {"tensor 'transformer.ln_f.bias'", "dtype, shape and data_offsets"});
}

TEST_F(HostileFilesTest, SafetensorsFractionalShape) {
  expect_refused(
      kGpt2, "model.safetensors",
      [](const fs::path& file) {
        edit_header(file, [](json& header) { header["transformer.ln_f.bias"]["shape"] = {127.5}; });
      },
      {"tensor 'transformer.ln_f.bias': shape entries must be non-negative integers"});
}

TEST_F(HostileFilesTest, SafetensorsNegativeShape) {
  expect_refused(
      kGpt2, "model.safetensors",
      [](const fs::path& file) {
        edit_header(file, [](json& header) { header["transformer.ln_f.bias"]["shape"] = {-128}; });
      },
      {"tensor 'transformer.ln_f.bias': shape entries must be non-negative integers"});
}

TEST_F(HostileFilesTest, SafetensorsShapeWhoseProductOverflows) {
  expect_refused(
      kGpt2, "model.safetensors",
      [](const fs::path& file) {
        edit_header(file, [](json& header) {
          header["transformer.ln_f.bias"]["shape"] = {uint64_t{1} << 32, uint64_t{1} << 32};
        });
      },
      {"tensor 'transformer.ln_f.bias': shape [4294967296,4294967296]", "impossibly large"});
}

TEST_F(HostileFilesTest, SafetensorsShapeDisagreeingWithTheByteRange) {
  expect_refused(
      kGpt2, "model.safetensors",
      [](const fs::path& file) {
        edit_header(file, [](json& header) { header["transformer.ln_f.bias"]["shape"] = {129}; });
      },
      {"tensor 'transformer.ln_f.bias'", "cover 512 bytes but shape [129]"});
}

TEST_F(HostileFilesTest, SafetensorsOffsetsEndBeforeTheyBegin) {
  expect_refused(kGpt2, "model.safetensors",
                 [](const fs::path& file) {
                   edit_header(file, [](json& header) {
                     json& offsets = header["transformer.ln_f.bias"]["data_offsets"];
                     offsets = {offsets[1], offsets[0]};
                   });
                 },
                 {"tensor 'transformer.ln_f.bias'", "end before they begin"});
}

TEST_F(HostileFilesTest, SafetensorsNegativeOffset) {
  expect_refused(kGpt2, "model.safetensors",
                 [](const fs::path& file) {
                   edit_header(file, [](json& header) {
                     header["transformer.ln_f.bias"]["data_offsets"][0] = -512;
                   });
                 },
                 {"tensor 'transformer.ln_f.bias': data_offsets must be non-negative integers"});
}

TEST_F(HostileFilesTest, SafetensorsThreeOffsets) {
  expect_refused(kGpt2, "model.safetensors",
                 [](const fs::path& file) {
                   edit_header(file, [](json& header) {
                     header["transformer.ln_f.bias"]["data_offsets"].push_back(0);
                   });
                 },
                 {"tensor 'transformer.ln_f.bias'", "data_offsets [begin, end]"});
}

TEST_F(HostileFilesTest, SafetensorsOffsetPastTheEndOfTheData) {
  expect_refused(kGpt2, "model.safetensors",
                 [](const fs::path& file) {
                   edit_header(file, [](json& header) {
                     header["transformer.ln_f.bias"]["data_offsets"] = {uint64_t{1} << 62,
                                                                        (uint64_t{1} << 62) + 512};
                   });
                 },
                 {"tensor 'transformer.ln_f.bias'", "past the end of the data section"});
}

TEST_F(HostileFilesTest, SafetensorsOverlappingTensors) {
  expect_refused(kGpt2, "model.safetensors",
                 [](const fs::path& file) {
                   edit_header(file, [](json& header) {
                     header["transformer.ln_f.bias"]["data_offsets"] =
                         header["transformer.ln_f.weight"]["data_offsets"];
                   });
                 },
                 {"'transformer.ln_f.bias' and 'transformer.ln_f.weight' overlap"});
}

TEST_F(HostileFilesTest, SafetensorsIntegerWeights) {
  expect_refused(
      kGpt2, "model.safetensors",
      [](const fs::path& file) {
        edit_header(file, [](json& header) { header["transformer.ln_f.bias"]["dtype"] = "I32"; });
      },
      {"tensor 'transformer.ln_f.bias' has dtype I32", "F32, F16 or BF16"});
}

TEST_F(HostileFilesTest, BertSafetensorsHeaderNestedAMillionDeep) {
  expect_refused(kBert, "model.safetensors",
                 [](const fs::path& file) {
                   edit_header_text(file, [](std::string& text) { text = deeply_nested(); });
                 },
                 {"header is JSON nested more than 512 levels deep"});
}

// ---- config.json --------------------------------------------------------------------------

TEST_F(HostileFilesTest, ConfigNumberOutOfRange) {
  expect_refused(kGpt2, "config.json",
                 [](const fs::path& file) { insert_first_member(file, R"("n_embd": 1e400)"); },
                 {"not valid JSON (number 1e400 is out of range)"});
}

TEST_F(HostileFilesTest, ConfigNumberOutOfRangeInAnUnusedField) {
  expect_refused(
      kBert, "config.json",
      [](const fs::path& file) { insert_first_member(file, R"("initializer_range": -1e999)"); },
      {"not valid JSON (number -1e999 is out of range)"});
}

TEST_F(HostileFilesTest, ConfigNestedAMillionDeep) {
  expect_refused(kGpt2, "config.json",
                 [](const fs::path& file) {
                   insert_first_member(file, "\"task_specific_params\": " + deeply_nested());
                 },
                 {"JSON nested more than 512 levels deep"});
}

TEST_F(HostileFilesTest, ConfigDeepValueInAnErrorIsCutShort) {
  expect_refused(kBert, "config.json",
                 [](const fs::path& file) {
                   replace_text(file, "\"hidden_size\": 128",
                                "\"hidden_size\": " + deeply_nested(500));
                 },
                 {"field 'hidden_size' must be a positive integer, got [[[[", "..."});
}

TEST_F(HostileFilesTest, ConfigLargerThan16MB) {
  expect_refused(kGpt2, "config.json",
                 [](const fs::path& file) { fs::resize_file(file, 17u << 20); },
                 {"larger than the 16 MB limit"});
}

TEST_F(HostileFilesTest, Gpt2LayerNormEpsilonHuge) {
  expect_refused(
      kGpt2, "config.json",
      [](const fs::path& file) {
        edit_json(file, [](json& config) { config["layer_norm_epsilon"] = 1e300; });
      },
      {"field 'layer_norm_epsilon' must be a positive number from 1e-30 to 0.1", "got 1e+300"});
}

TEST_F(HostileFilesTest, Gpt2LayerNormEpsilonTiny) {
  expect_refused(kGpt2, "config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) { config["layer_norm_epsilon"] = 1e-300; });
                 },
                 {"field 'layer_norm_epsilon' must be a positive number", "got 1e-300"});
}

TEST_F(HostileFilesTest, BertLayerNormEpsHuge) {
  expect_refused(kBert, "config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) { config["layer_norm_eps"] = 1e300; });
                 },
                 {"field 'layer_norm_eps' must be a positive number from 1e-30 to 0.1"});
}

TEST_F(HostileFilesTest, BertLayerNormEpsAsAString) {
  expect_refused(kBert, "config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) { config["layer_norm_eps"] = "1e-12"; });
                 },
                 {"field 'layer_norm_eps' must be a positive number", "got \"1e-12\""});
}

TEST_F(HostileFilesTest, Gpt2EmbeddingWidthOverflowingFourTimesItself) {
  expect_refused(
      kGpt2, "config.json",
      [](const fs::path& file) {
        edit_json(file, [](json& config) { config["n_embd"] = 1 << 29; });
      },
      {"field 'n_embd' must be a positive integer, got 536870912", "attn's limit is 1048576"});
}

TEST_F(HostileFilesTest, Gpt2InnerWidthPastTheLimit) {
  expect_refused(
      kGpt2, "config.json",
      [](const fs::path& file) {
        edit_json(file, [](json& config) { config["n_inner"] = 1 << 30; });
      },
      {"field 'n_inner' must be a positive integer, got 1073741824", "attn's limit is 4194304"});
}

TEST_F(HostileFilesTest, Gpt2KvCacheForTheFullContextTooLarge) {
  expect_refused(kGpt2, "config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) {
                     config["n_layer"] = 4096;
                     config["n_positions"] = 1 << 24;
                   });
                 },
                 {"n_layer x n_positions x n_embd = 4096 x 16777216 x 128",
                  "KV cache for the full context", "limit of 2^40 elements"});
}

TEST_F(HostileFilesTest, BertEmbeddingTooLarge) {
  expect_refused(kBert, "config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) {
                     config["vocab_size"] = 1 << 24;
                     config["hidden_size"] = 1 << 20;
                   });
                 },
                 {"vocab_size x hidden_size = 16777216 x 1048576", "limit of 2^40 elements"});
}

TEST_F(HostileFilesTest, Gpt2ContextPastTheLimit) {
  expect_refused(kGpt2, "config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) { config["n_positions"] = 1 << 30; });
                 },
                 {"field 'n_positions' must be a positive integer", "attn's limit is 16777216"});
}

TEST_F(HostileFilesTest, Gpt2NumberPast2To64) {
  expect_refused(kGpt2, "config.json",
                 [](const fs::path& file) {
                   replace_text(file, "\"n_layer\": 4", "\"n_layer\": 18446744073709551616");
                 },
                 {"field 'n_layer' must be a positive integer"});
}

TEST_F(HostileFilesTest, Gpt2LayerCountAsABoolean) {
  expect_refused(
      kGpt2, "config.json",
      [](const fs::path& file) { edit_json(file, [](json& config) { config["n_layer"] = true; }); },
      {"field 'n_layer' must be a positive integer, got true"});
}

TEST_F(HostileFilesTest, Gpt2HeadCountNull) {
  expect_refused(kGpt2, "config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) { config["n_head"] = nullptr; });
                 },
                 {"field 'n_head' must be a positive integer, got null"});
}

TEST_F(HostileFilesTest, Gpt2ActivationAsANumber) {
  expect_refused(kGpt2, "config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) { config["activation_function"] = 5; });
                 },
                 {"field 'activation_function' must be a string, got 5"});
}

TEST_F(HostileFilesTest, Gpt2ModelTypeWithAnEscapeSequence) {
  expect_refused(kGpt2, "config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) { config["model_type"] = "\x1b[2Jgpt2"; });
                 },
                 {"field 'model_type' is '\\x1B[2Jgpt2', which attn does not support"});
}

TEST_F(HostileFilesTest, Gpt2VocabSizeSmallerThanTheTokenizer) {
  expect_refused(kGpt2, "config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) { config["vocab_size"] = 1000; });
                 },
                 {"field 'vocab_size' is 1000 but the tokenizer has 50257 tokens"});
}

TEST_F(HostileFilesTest, BertHiddenSizeAsAString) {
  expect_refused(kBert, "config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) { config["hidden_size"] = "128"; });
                 },
                 {"field 'hidden_size' must be a positive integer, got \"128\""});
}

TEST_F(HostileFilesTest, BertLayerCountAsAnArray) {
  expect_refused(kBert, "config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) { config["num_hidden_layers"] = {4}; });
                 },
                 {"field 'num_hidden_layers' must be a positive integer, got [4]"});
}

TEST_F(HostileFilesTest, BertIntermediateSizeAsAFloat) {
  expect_refused(kBert, "config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) { config["intermediate_size"] = 512.0; });
                 },
                 {"field 'intermediate_size' must be a positive integer, got 512.0"});
}

TEST_F(HostileFilesTest, BertZeroTokenTypes) {
  expect_refused(kBert, "config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) { config["type_vocab_size"] = 0; });
                 },
                 {"field 'type_vocab_size' must be a positive integer, got 0"});
}

TEST_F(HostileFilesTest, BertActivationAsAnObject) {
  expect_refused(kBert, "config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) { config["hidden_act"] = {{"name", "gelu"}}; });
                 },
                 {"field 'hidden_act' must be a string, got {\"name\":\"gelu\"}"});
}

TEST_F(HostileFilesTest, BertHugeVocabSize) {
  expect_refused(kBert, "config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) { config["vocab_size"] = 1 << 30; });
                 },
                 {"field 'vocab_size' must be a positive integer", "attn's limit is 16777216"});
}

TEST_F(HostileFilesTest, BertLongModelTypeIsCutShort) {
  expect_refused(
      kBert, "config.json",
      [](const fs::path& file) {
        edit_json(file, [](json& config) { config["model_type"] = std::string(1'000'000, 'b'); });
      },
      {"field 'model_type' is 'bbbb", "...', which attn does not support"});
}

// ---- GPT-2 tokenizer: vocab.json, merges.txt, tokenizer.json, tokenizer_config.json --------

TEST_F(HostileFilesTest, VocabJsonIdOf16777215) {
  expect_refused(kGpt2, "vocab.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& vocab) { vocab["\u0120the"] = 16777215; });
                 },
                 {"token '\u0120the' has id 16777215, out of range for 50257 tokens"});
}

TEST_F(HostileFilesTest, VocabJsonNegativeId) {
  expect_refused(
      kGpt2, "vocab.json",
      [](const fs::path& file) { edit_json(file, [](json& vocab) { vocab["\u0120the"] = -1; }); },
      {"token '\u0120the' has id -1, out of range"});
}

TEST_F(HostileFilesTest, VocabJsonIdAsAString) {
  expect_refused(kGpt2, "vocab.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& vocab) { vocab["\u0120the"] = "262"; });
                 },
                 {"token '\u0120the': the id is a string, not an integer"});
}

TEST_F(HostileFilesTest, VocabJsonNumberOutOfRange) {
  expect_refused(kGpt2, "vocab.json",
                 [](const fs::path& file) { insert_first_member(file, R"("huge": 1e400)"); },
                 {"not valid JSON (number 1e400 is out of range)"});
}

TEST_F(HostileFilesTest, VocabJsonNestedAMillionDeep) {
  expect_refused(kGpt2, "vocab.json",
                 [](const fs::path& file) { write_file(file, deeply_nested()); },
                 {"JSON nested more than 512 levels deep"});
}

TEST_F(HostileFilesTest, VocabJsonTokenWithAnEscapeSequence) {
  expect_refused(
      kGpt2, "vocab.json",
      [](const fs::path& file) { edit_json(file, [](json& vocab) { vocab["\x1b[31mred"] = 0; }); },
      {"id 0 is given to both", "'\\x1B[31mred'"});
}

TEST_F(HostileFilesTest, VocabJsonLargerThan256MB) {
  expect_refused(kGpt2, "vocab.json",
                 [](const fs::path& file) { fs::resize_file(file, 300u << 20); },
                 {"larger than the 256 MB limit"});
}

TEST_F(HostileFilesTest, VocabJsonIsAFifo) {
  expect_refused(kGpt2, "vocab.json", replace_with_fifo, {"not a regular file"});
}

TEST_F(HostileFilesTest, VocabJsonIsDevUrandom) {
  expect_refused(kGpt2, "vocab.json",
                 [](const fs::path& file) { replace_with_link(file, "/dev/urandom"); },
                 {"not a regular file"});
}

TEST_F(HostileFilesTest, MergesTxtIsDevZero) {
  expect_refused(kGpt2, "merges.txt",
                 [](const fs::path& file) { replace_with_link(file, "/dev/zero"); },
                 {"not a regular file"});
}

TEST_F(HostileFilesTest, MergesTxtIsAFifo) {
  expect_refused(kGpt2, "merges.txt", replace_with_fifo, {"not a regular file"});
}

TEST_F(HostileFilesTest, MergesTxtIsAFolder) {
  expect_refused(kGpt2, "merges.txt", replace_with_folder, {"is a folder, not a file"});
}

TEST_F(HostileFilesTest, MergesTxtIsASymlinkLoop) { expect_link_loop_refused(kGpt2, "merges.txt"); }

TEST_F(HostileFilesTest, MergesTxtPieceWithControlCharacters) {
  expect_refused(kGpt2, "merges.txt",
                 [](const fs::path& file) { write_file(file, "#version: 0.2\n\x1b[1m\x07 t\n"); },
                 {"line 2: merge piece '\\x1B[1m\\x07' is not in the vocabulary"});
}

TEST_F(HostileFilesTest, MergesTxtMegabyteLineIsCutShort) {
  expect_refused(kGpt2, "merges.txt",
                 [](const fs::path& file) {
                   write_file(file, "#version: 0.2\na b " + std::string(1 << 20, 'c') + "\n");
                 },
                 {"line 2: expected two tokens separated by one space, got 'a b ccc", "...'"});
}

// tokenizer.json is read whenever a folder has one, by the pipeline of Hugging Face's tokenizers
// library (src/tokenizer/pipeline), whose errors name the file and the field.
TEST_F(HostileFilesTest, Gpt2TokenizerJsonAddedTokenIdOf2To32Minus1) {
  const fs::path model = copy_model(kGpt2);
  edit_json(model / "tokenizer.json",
            [](json& tokenizer) { tokenizer["added_tokens"][0]["id"] = 4294967295u; });
  expect_clean_failure(info(model), kBadInput,
                       {(model / "tokenizer.json").string() +
                        ": added_tokens[0].id: 4294967295 is out of range [0, 16777215]"});
}

// As in the tokenizers library, an added token that is in the model's vocabulary has the model's
// id, whatever id the file gives it (the library only warns): the file's id never reaches the
// model.
TEST_F(HostileFilesTest, Gpt2TokenizerJsonAddedTokenIdPastTheVocabulary) {
  const fs::path model = copy_model(kGpt2);
  edit_json(model / "tokenizer.json",
            [](json& tokenizer) { tokenizer["added_tokens"][0]["id"] = 1'000'000; });
  const CommandResult result = run({"tokenize", "-m", model, "--json", "a<|endoftext|>"});
  EXPECT_EQ(result.exit_status, 0) << describe(result);
  EXPECT_EQ(result.out, R"({"ids":[64,50256],"tokens":["a","<|endoftext|>"]})"
                        "\n")
      << describe(result);
}

// model.type chooses the model, whatever config.json says: WordPiece needs an unk_token, which
// the BPE model's fields lack.
TEST_F(HostileFilesTest, Gpt2TokenizerJsonWordPieceModel) {
  const fs::path model = copy_model(kGpt2);
  edit_json(model / "tokenizer.json",
            [](json& tokenizer) { tokenizer["model"]["type"] = "WordPiece"; });
  expect_clean_failure(info(model), kBadInput,
                       {(model / "tokenizer.json").string() + ": model.unk_token is missing"});
}

TEST_F(HostileFilesTest, Gpt2TokenizerJsonMergesAsAnObject) {
  const fs::path model = copy_model(kGpt2);
  edit_json(model / "tokenizer.json",
            [](json& tokenizer) { tokenizer["model"]["merges"] = json::object(); });
  expect_clean_failure(info(model), kBadInput,
                       {(model / "tokenizer.json").string() + ": model.merges"});
}

TEST_F(HostileFilesTest, Gpt2TokenizerJsonNumberOutOfRange) {
  const fs::path model = copy_model(kGpt2);
  insert_first_member(model / "tokenizer.json", R"("truncation": {"max_length": 1e400})");
  expect_clean_failure(
      info(model), kBadInput,
      {(model / "tokenizer.json").string() + ": not valid JSON (number 1e400 is out of range)"});
}

TEST_F(HostileFilesTest, Gpt2TokenizerJsonIsAFifo) {
  const fs::path model = copy_model(kGpt2);
  replace_with_fifo(model / "tokenizer.json");
  expect_clean_failure(info(model), kBadInput,
                       {(model / "tokenizer.json").string() + ": not a regular file"});
}

// tokenizer_config.json's added_tokens_decoder as GPT2TokenizerFast reads it for vocab.json and
// merges.txt.
TEST_F(HostileFilesTest, Gpt2TokenizerConfigAddedTokenIdOf2To32Minus1) {
  expect_refused(copy_model_without_tokenizer_json(kGpt2), "tokenizer_config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) {
                     config["added_tokens_decoder"]["4294967295"] = {{"content", "<|x|>"}};
                   });
                 },
                 {"added_tokens_decoder[\"4294967295\"]: id 4294967295 is out of range"});
}

// An added token whose id is past the vocabulary takes the next id, as GPT2TokenizerFast adds it
// (the library gives the ids), and the model's embedding has no row for it.
TEST_F(HostileFilesTest, Gpt2TokenizerConfigAddedTokenIdPastTheVocabulary) {
  const fs::path model = copy_model_without_tokenizer_json(kGpt2);
  edit_json(model / "tokenizer_config.json", [](json& config) {
    config["added_tokens_decoder"]["60000"] = {{"content", "<|x|>"}};
  });
  expect_clean_failure(info(model), kBadInput,
                       {(model / "config.json").string() +
                        ": field 'vocab_size' is 50257 but the tokenizer has 50258 tokens"});
}

TEST_F(HostileFilesTest, Gpt2FiftyThousandAddedTokensAreCountedQuickly) {
  const fs::path model = copy_model_without_tokenizer_json(kGpt2);
  edit_json(model / "tokenizer_config.json", [](json& config) {
    for (int id = 50257; id < 100257; ++id) {
      config["added_tokens_decoder"][std::to_string(id)] = {
          {"content", "<|added " + std::to_string(id) + "|>"}, {"special", false}};
    }
  });
  expect_clean_failure(info(model), kBadInput,
                       {(model / "config.json").string() +
                        ": field 'vocab_size' is 50257 but the tokenizer has 100257 tokens"});
}

TEST_F(HostileFilesTest, Gpt2TokenizerConfigEosTokenAsANumber) {
  expect_refused(kGpt2, "tokenizer_config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) { config["eos_token"] = 50256; });
                 },
                 {"eos_token: expected a string, an object with \"content\", or null"});
}

TEST_F(HostileFilesTest, Gpt2TokenizerConfigNestedAMillionDeep) {
  expect_refused(
      kGpt2, "tokenizer_config.json",
      [](const fs::path& file) { insert_first_member(file, "\"extra\": " + deeply_nested()); },
      {"JSON nested more than 512 levels deep"});
}

TEST_F(HostileFilesTest, Gpt2TokenizerConfigIsDevZero) {
  expect_refused(kGpt2, "tokenizer_config.json",
                 [](const fs::path& file) { replace_with_link(file, "/dev/zero"); },
                 {"not a regular file"});
}

// ---- BERT tokenizer: vocab.txt, tokenizer.json, tokenizer_config.json, special_tokens_map --

TEST_F(HostileFilesTest, VocabTxtIsDevZero) {
  expect_refused(kBert, "vocab.txt",
                 [](const fs::path& file) { replace_with_link(file, "/dev/zero"); },
                 {"not a regular file"});
}

TEST_F(HostileFilesTest, VocabTxtIsAFifo) {
  expect_refused(kBert, "vocab.txt", replace_with_fifo, {"not a regular file"});
}

TEST_F(HostileFilesTest, VocabTxtIsAFolder) {
  expect_refused(kBert, "vocab.txt", replace_with_folder, {"is a folder, not a file"});
}

TEST_F(HostileFilesTest, VocabTxtIsASymlinkLoop) { expect_link_loop_refused(kBert, "vocab.txt"); }

TEST_F(HostileFilesTest, VocabTxtIsADanglingSymlink) {
  expect_refused(kBert, "vocab.txt",
                 [](const fs::path& file) { replace_with_link(file, "no-such-vocab.txt"); },
                 {"cannot open file (No such file or directory)"});
}

TEST_F(HostileFilesTest, VocabTxtInvalidUtf8) {
  expect_refused(kBert, "vocab.txt",
                 [](const fs::path& file) { write_file(file, "[PAD]\nok\n\xff\xfe\n"); },
                 {"line 3 is not valid UTF-8"});
}

TEST_F(HostileFilesTest, VocabTxtDuplicateTokenWithAnEscapeSequence) {
  expect_refused(
      kBert, "vocab.txt",
      [](const fs::path& file) { write_file(file, read_file(file) + "\x1b[5m\n\x1b[5m\n"); },
      {"duplicate token '\\x1B[5m'"});
}

TEST_F(HostileFilesTest, BertTokenizerJsonAddedTokenIdOf2To32Minus1) {
  const fs::path model = copy_model(kBert);
  edit_json(model / "tokenizer.json",
            [](json& tokenizer) { tokenizer["added_tokens"][0]["id"] = 4294967295u; });
  expect_clean_failure(info(model), kBadInput,
                       {(model / "tokenizer.json").string() +
                        ": added_tokens[0].id: 4294967295 is out of range [0, 16777215]"});
}

TEST_F(HostileFilesTest, BertTokenizerJsonNormalizerWithANumericType) {
  const fs::path model = copy_model(kBert);
  edit_json(model / "tokenizer.json", [](json& tokenizer) {
    tokenizer["normalizer"] = {{"type", 5}};
  });
  expect_clean_failure(
      info(model), kBadInput,
      {(model / "tokenizer.json").string() + ": normalizer.type: expected a string, found 5"});
}

TEST_F(HostileFilesTest, BertTokenizerJsonNormalizerNestedAMillionDeep) {
  const fs::path model = copy_model(kBert);
  std::string text = read_file(model / "tokenizer.json");
  const std::string normalizer = "\"normalizer\":";
  text.insert(text.find(normalizer) + normalizer.size(), deeply_nested() + ",\"was\":");
  write_file(model / "tokenizer.json", text);
  expect_clean_failure(
      info(model), kBadInput,
      {(model / "tokenizer.json").string() + ": JSON nested more than 512 levels deep"});
}

// The tokenizers library takes a WordPiece vocabulary's ids as they are; an id past the model's
// embedding is refused by the check of the tokenizer's size against config.json.
TEST_F(HostileFilesTest, BertTokenizerJsonVocabIdPastItsSize) {
  const fs::path model = copy_model(kBert);
  edit_json(model / "tokenizer.json",
            [](json& tokenizer) { tokenizer["model"]["vocab"]["the"] = 16777215; });
  expect_clean_failure(info(model), kBadInput,
                       {(model / "config.json").string() +
                        ": field 'vocab_size' is 30522 but the tokenizer has 16777216 tokens"});
}

TEST_F(HostileFilesTest, BertTokenizerJsonNumberOutOfRange) {
  const fs::path model = copy_model(kBert);
  insert_first_member(model / "tokenizer.json", R"("padding": {"pad_id": 1e400})");
  expect_clean_failure(
      info(model), kBadInput,
      {(model / "tokenizer.json").string() + ": not valid JSON (number 1e400 is out of range)"});
}

// tokenizer_config.json and special_tokens_map.json as the slow BertTokenizer reads them.
TEST_F(HostileFilesTest, BertTokenizerConfigLowercaseAsAString) {
  expect_refused(copy_model_without_tokenizer_json(kBert), "tokenizer_config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) { config["do_lower_case"] = "yes"; });
                 },
                 {"'do_lower_case' must be true, false or null"});
}

TEST_F(HostileFilesTest, BertTokenizerConfigAddedTokenIdPastTheVocabulary) {
  expect_refused(copy_model_without_tokenizer_json(kBert), "tokenizer_config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) {
                     config["added_tokens_decoder"]["99999999"] = {{"content", "[X]"}};
                   });
                 },
                 {"added_tokens_decoder[\"99999999\"]: id 99999999 is out of range"});
}

TEST_F(HostileFilesTest, BertTokenizerConfigAddedTokenKeyWithControlCharacters) {
  expect_refused(copy_model_without_tokenizer_json(kBert), "tokenizer_config.json",
                 [](const fs::path& file) {
                   edit_json(file, [](json& config) {
                     config["added_tokens_decoder"]["1\x1b[0m"] = {{"content", "[X]"}};
                   });
                 },
                 {"added_tokens_decoder[\"1\\x1B[0m\"]: the key is not a token id"});
}

TEST_F(HostileFilesTest, BertTokenizerConfigIsAFolder) {
  expect_refused(kBert, "tokenizer_config.json", replace_with_folder, {"is a folder, not a file"});
}

// A folder of the older format (no added_tokens_decoder), whose special_tokens_map.json
// transformers reads; a newer one's it ignores.
fs::path without_added_tokens_decoder(const fs::path& model) {
  edit_json(model / "tokenizer_config.json",
            [](json& config) { config.erase("added_tokens_decoder"); });
  return model;
}

TEST_F(HostileFilesTest, SpecialTokensMapMaskTokenAsANumber) {
  expect_refused(
      without_added_tokens_decoder(copy_model_without_tokenizer_json(kBert)),
      "special_tokens_map.json",
      [](const fs::path& file) { edit_json(file, [](json& map) { map["mask_token"] = 103; }); },
      {"mask_token: expected a string"});
}

// A mask token the vocabulary lacks becomes an added token past it, as in transformers, which the
// model's embedding does not have.
TEST_F(HostileFilesTest, SpecialTokensMapMaskTokenWithAnEscapeSequence) {
  const fs::path model = without_added_tokens_decoder(copy_model_without_tokenizer_json(kBert));
  edit_json(model / "special_tokens_map.json",
            [](json& map) { map["mask_token"] = "[MA\x1b[8mSK]"; });
  const CommandResult result = info(model);
  expect_clean_failure(result, kBadInput,
                       {(model / "config.json").string() +
                        ": field 'vocab_size' is 30522 but the tokenizer has 30523 tokens"});
  EXPECT_EQ(result.err.find('\x1b'), std::string::npos) << describe(result);
}

TEST_F(HostileFilesTest, SpecialTokensMapNumberOutOfRange) {
  expect_refused(without_added_tokens_decoder(copy_model(kBert)), "special_tokens_map.json",
                 [](const fs::path& file) { insert_first_member(file, R"("x": 1e400)"); },
                 {"not valid JSON (number 1e400 is out of range)"});
}

TEST_F(HostileFilesTest, SpecialTokensMapIsAFifo) {
  expect_refused(without_added_tokens_decoder(copy_model(kBert)), "special_tokens_map.json",
                 replace_with_fifo, {"not a regular file"});
}

// ---- Special files in place of config.json and model.safetensors -------------------------

TEST_F(HostileFilesTest, ConfigIsAFifo) {
  expect_refused(kGpt2, "config.json", replace_with_fifo, {"not a regular file"});
}

TEST_F(HostileFilesTest, ConfigIsDevUrandom) {
  expect_refused(kBert, "config.json",
                 [](const fs::path& file) { replace_with_link(file, "/dev/urandom"); },
                 {"not a regular file"});
}

TEST_F(HostileFilesTest, ConfigIsASymlinkLoop) { expect_link_loop_refused(kGpt2, "config.json"); }

TEST_F(HostileFilesTest, SafetensorsIsAFifo) {
  expect_refused(kGpt2, "model.safetensors", replace_with_fifo, {"not a regular file"});
}

TEST_F(HostileFilesTest, SafetensorsIsDevZero) {
  expect_refused(kBert, "model.safetensors",
                 [](const fs::path& file) { replace_with_link(file, "/dev/zero"); },
                 {"not a regular file"});
}

TEST_F(HostileFilesTest, SafetensorsIsAFolder) {
  expect_refused(kGpt2, "model.safetensors", replace_with_folder, {"is a folder, not a file"});
}

TEST_F(HostileFilesTest, SafetensorsIsASymlinkLoop) {
  expect_link_loop_refused(kBert, "model.safetensors");
}

// ---- The model folder itself (-m) -------------------------------------------------------

TEST_F(HostileFilesTest, ModelFolderNameOf300Characters) {
  const fs::path model = scratch_ / std::string(300, 'm');
  expect_clean_failure(info(model), kBadInput,
                       {model.string() + ": cannot open model folder (File name too long)"});
}

// The line names the path, which is too long to show whole: the command line cuts it short.
TEST_F(HostileFilesTest, ModelFolderPathLongerThanPathMax) {
  fs::path model = scratch_.path();
  for (int i = 0; i < 500; ++i) model /= "deeper";
  expect_clean_failure(info(model), kBadInput, {scratch_.path().string() + "/deeper/deeper"});
}

// The loop exists only while attn runs (see expect_link_loop_refused).
TEST_F(HostileFilesTest, ModelFolderIsASymlinkLoop) {
  const fs::path model = scratch_ / "loop";
  fs::create_symlink("loop", model);
  const CommandResult result = run_attn({"info", "-m", model});
  fs::remove(model);
  expect_clean_failure(
      result, kBadInput,
      {model.string() + ": cannot open model folder (Too many levels of symbolic links)"});
}

TEST_F(HostileFilesTest, ModelFolderIsAFifo) {
  const fs::path model = scratch_ / "fifo";
  ASSERT_EQ(::mkfifo(model.c_str(), 0600), 0) << std::strerror(errno);
  expect_clean_failure(info(model), kBadInput,
                       {model.string() + ": model folder not found (not a folder)"});
}

TEST_F(HostileFilesTest, ModelFolderUnreadable) {
  const fs::path model = copy_model(kGpt2);
  fs::permissions(model, fs::perms::none);
  CommandResult result;
  if (::geteuid() == 0) {
    // Root reads every folder: run attn as the unprivileged user "nobody" instead, who may pass
    // through the scratch folder but not into the model folder.
    fs::permissions(scratch_.path(), fs::perms::owner_all | fs::perms::others_exec);
    result = run_program("/usr/bin/setpriv", {"--reuid=65534", "--regid=65534", "--clear-groups",
                                              attn_binary().string(), "info", "-m", model});
  } else {
    result = info(model);
  }
  fs::permissions(model, fs::perms::owner_all);
  expect_clean_failure(
      result, kBadInput,
      {(model / "config.json").string() + ": cannot open file (Permission denied)"});
}

}  // namespace
}  // namespace attn::test
