// Weights as Hugging Face publishes them: sharded safetensors and their index, pytorch_model.bin,
// which file wins when a folder has several, and models found in the Hugging Face cache.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/base/error.h"
#include "src/io/checkpoint.h"
#include "src/io/hub_cache.h"
#include "src/io/safetensors.h"
#include "src/io/shard_index.h"
#include "src/model/model.h"
#include "tests/cli_util.h"
#include "tests/model_util.h"
#include "tests/safetensors_util.h"
#include "tests/test_paths.h"
#include "tests/torch_zip_util.h"

namespace attn::test {
namespace {

using nlohmann::json;

// A copy of a model folder without its weights, for a test to give it other weight files.
std::filesystem::path copy_without_weights(const std::filesystem::path& from,
                                           const std::filesystem::path& to) {
  std::filesystem::create_directories(to);
  for (const auto& entry : std::filesystem::directory_iterator(from)) {
    const std::string name = entry.path().filename().string();
    if (name.find("safetensors") == std::string::npos && name.find(".bin") == std::string::npos) {
      std::filesystem::copy(entry.path(), to / name);
    }
  }
  return to;
}

// The name Hugging Face gives shard `i` (1-based) of `n`.
std::string shard_name(int i, int n) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", i, n);
  return name;
}

// `tensors` written as `n` safetensors shards of `dir`, tensor k in shard k % n, with the index
// that says so.
void write_shards(const std::filesystem::path& dir, const std::vector<RawTensor>& tensors, int n) {
  std::vector<std::vector<RawTensor>> shards(n);
  json weight_map = json::object();
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    shards[k % n].push_back(tensors[k]);
    weight_map[tensors[k].name] = shard_name(int(k % n) + 1, n);
  }
  for (int i = 0; i < n; ++i) write_safetensors(dir / shard_name(i + 1, n), shards[i]);
  write_file(dir / "model.safetensors.index.json",
             json{{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}}.dump(2));
}

// `model` (tiny-gpt2-brown's weights in other files) computes the shipped model's logits, bit for
// bit, and has as many parameters.
void expect_logits_of_tiny_gpt2(const Model& model) {
  const auto shipped = load_model(shipped_model("tiny-gpt2-brown"));
  EXPECT_EQ(model.parameter_count, shipped->parameter_count);
  const std::vector<int> ids = shipped->tokenizer->encode_plain("The cat sat on the mat.");
  const std::vector<float> want = last_logits(*shipped, ids), got = last_logits(model, ids);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
}

// Runs `check` and expects an Error whose message has every one of `parts`.
template <typename Check>
void expect_error(Check check, const std::vector<std::string>& parts) {
  try {
    check();
    ADD_FAILURE() << "no error; expected one with '" << parts.front() << "'";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    for (const auto& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
    }
  }
}

// --- sharded safetensors ---

class ShardedCheckpoint : public ::testing::Test {
 protected:
  // tiny-gpt2-brown's tensors, and a copy of its folder without weights.
  void SetUp() override {
    tensors_ = read_safetensors(shipped_model("tiny-gpt2-brown") / "model.safetensors");
    dir_ = copy_without_weights(shipped_model("tiny-gpt2-brown"), scratch_ / "tiny-gpt2-brown");
  }
  std::filesystem::path index() const { return dir_ / "model.safetensors.index.json"; }
  json read_index() const { return json::parse(read_file(index())); }
  void write_index(const json& value) const { write_file(index(), value.dump()); }

  TempDir scratch_;
  std::vector<RawTensor> tensors_;
  std::filesystem::path dir_;
};

TEST_F(ShardedCheckpoint, ComputesExactlyWhatTheSingleFileComputes) {
  write_shards(dir_, tensors_, 3);
  const auto sharded = load_model(dir_);
  ASSERT_EQ(sharded->weights->files().size(), 3u);
  EXPECT_EQ(sharded->weights->source(), index());
  expect_logits_of_tiny_gpt2(*sharded);
}

TEST_F(ShardedCheckpoint, SharedPhi3ShardsHoldTheSingleFilesTensors) {
  ATTN_REQUIRE_SHARED();
  const auto models = shared_dir() / "models";
  Checkpoint sharded(models / "tiny-phi3-random-sharded");
  SafeTensors single(models / "tiny-phi3-random" / "model.safetensors");
  EXPECT_EQ(sharded.files().size(), 3u);
  ASSERT_EQ(sharded.tensors().size(), single.tensors().size());
  for (const auto& [name, info] : single.tensors()) {
    const TensorInfo* got = sharded.find(name);
    ASSERT_NE(got, nullptr) << name;
    EXPECT_EQ(got->dtype, info.dtype) << name;
    EXPECT_EQ(got->shape, info.shape) << name;
    const TensorElements a = sharded.elements(name, info.shape);
    const TensorElements b = single.elements(name, info.shape);
    EXPECT_EQ(std::memcmp(a.data, b.data, info.end - info.begin), 0) << name;
  }
}

TEST_F(ShardedCheckpoint, MissingShardIsNamed) {
  write_shards(dir_, tensors_, 3);
  std::filesystem::remove(dir_ / shard_name(2, 3));
  expect_error([&] { Checkpoint weights(dir_); },
               {index().string(), "shard '" + shard_name(2, 3) + "'", "cannot be opened"});
}

TEST_F(ShardedCheckpoint, TensorInTwoShardsIsRefused) {
  write_shards(dir_, tensors_, 2);
  // Shard 2 also gets shard 1's first tensor.
  std::vector<RawTensor> second = read_safetensors(dir_ / shard_name(2, 2));
  second.push_back(tensors_[0]);
  write_safetensors(dir_ / shard_name(2, 2), second);
  expect_error([&] { Checkpoint weights(dir_); },
               {index().string(), "'" + tensors_[0].name + "' is in both", shard_name(1, 2),
                shard_name(2, 2)});
}

TEST_F(ShardedCheckpoint, TensorListedButAbsentIsRefused) {
  write_shards(dir_, tensors_, 2);
  json value = read_index();
  value["weight_map"]["h.9.attn.c_attn.weight"] = shard_name(1, 2);
  write_index(value);
  expect_error([&] { Checkpoint weights(dir_); },
               {index().string(), "weight_map['h.9.attn.c_attn.weight']", "no shard has that"});
}

TEST_F(ShardedCheckpoint, TensorInAnotherShardThanListedIsRefused) {
  write_shards(dir_, tensors_, 2);
  json value = read_index();
  value["weight_map"][tensors_[0].name] = shard_name(2, 2);
  write_index(value);
  expect_error([&] { Checkpoint weights(dir_); },
               {index().string(), tensors_[0].name, "is in '" + shard_name(1, 2) + "'"});
}

TEST_F(ShardedCheckpoint, ShardNamesThatLeaveTheFolderAreRefused) {
  write_shards(dir_, tensors_, 2);
  for (const std::string& name : {"../" + shard_name(1, 2), std::string("/etc/passwd"),
                                  "sub/" + shard_name(1, 2), std::string(".."), std::string("")}) {
    json value = read_index();
    value["weight_map"][tensors_[0].name] = name;
    write_index(value);
    expect_error([&] { Checkpoint weights(dir_); },
                 {index().string(), "weight_map['" + tensors_[0].name + "']",
                  "not a file of the index's folder"});
  }
}

TEST_F(ShardedCheckpoint, SymbolicLinkOutOfTheFolderIsRefused) {
  write_shards(dir_, tensors_, 2);
  const auto outside = scratch_ / "elsewhere.safetensors";
  std::filesystem::rename(dir_ / shard_name(2, 2), outside);
  std::filesystem::create_symlink(outside, dir_ / shard_name(2, 2));
  expect_error([&] { Checkpoint weights(dir_); },
               {index().string(), shard_name(2, 2), "symbolic link out of the model folder"});
}

TEST_F(ShardedCheckpoint, SymbolicLinkInsideTheFolderIsRead) {
  write_shards(dir_, tensors_, 2);
  std::filesystem::create_directory(dir_ / "store");
  std::filesystem::rename(dir_ / shard_name(2, 2), dir_ / "store" / "two");
  std::filesystem::create_symlink("store/two", dir_ / shard_name(2, 2));
  Checkpoint weights(dir_);
  EXPECT_EQ(weights.tensors().size(), tensors_.size());
}

TEST_F(ShardedCheckpoint, MalformedIndexesAreRefused) {
  write_shards(dir_, tensors_, 2);
  const std::string first = tensors_[0].name;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"weight_map": []})", "weight_map must be an object"},
      {R"({"weight_map": "model.safetensors"})", "weight_map must be an object"},
      {R"({"metadata": {}})", "weight_map must be an object"},
      {R"([1, 2])", "not a JSON object"},
      {R"({"weight_map": {"a": 7}})", "weight_map['a'] must be a file name, got 7"},
      {R"({"weight_map": {"a": "x", "a": "y"}})", "'a' is listed twice"},
      {R"({"weight_map": {)", "not valid JSON"},
  };
  for (const auto& [text, reason] : cases) {
    write_file(index(), text);
    expect_error([&] { Checkpoint weights(dir_); }, {index().string(), reason});
  }
}

TEST_F(ShardedCheckpoint, HundredThousandEntriesGiveOneLine) {
  write_shards(dir_, tensors_, 2);
  json value = read_index();
  for (int i = 0; i < 100'000; ++i) {
    value["weight_map"][std::string("extra.").append(std::to_string(i))] = shard_name(1 + i % 2, 2);
  }
  write_index(value);
  expect_error([&] { Checkpoint weights(dir_); }, {index().string(), "no shard has that tensor"});
}

TEST(ShardIndex, ManyShardFilesAreRefused) {
  json weight_map = json::object();
  for (std::size_t i = 0; i <= kMaxShards; ++i) {
    const std::string number = std::to_string(i);
    weight_map[std::string("t").append(number)] = std::string("shard-").append(number);
  }
  expect_error(
      [&] {
        parse_shard_index(json{{"weight_map", weight_map}}.dump(), "index.json");
      },
      {"index.json", "more than 10000 shard files"});
}

// --- pytorch_model.bin ---

// `tensors` (F32) as torch.save writes a state dict of them: one storage each, stored.
std::string pytorch_model_bin(const std::vector<RawTensor>& tensors) {
  std::vector<TensorSpec> specs;
  std::vector<ZipInput> storages;
  for (const RawTensor& tensor : tensors) {
    EXPECT_EQ(tensor.dtype, "F32") << tensor.name;
    const std::string key = std::to_string(specs.size());
    std::vector<int64_t> stride(tensor.shape.size(), 1);
    for (int i = int(stride.size()) - 2; i >= 0; --i)
      stride[i] = stride[i + 1] * tensor.shape[i + 1];
    specs.push_back({.name = tensor.name,
                     .type = "FloatStorage",
                     .key = key,
                     .numel = int64_t(tensor.bytes.size() / 4),
                     .size = tensor.shape,
                     .stride = stride});
    storages.push_back({.name = key, .data = tensor.bytes});
  }
  return torch_zip(state_dict_pickle(specs), storages);
}

TEST(PytorchModelBin, ComputesExactlyWhatTheSafetensorsFileComputes) {
  TempDir scratch;
  const auto dir = copy_without_weights(shipped_model("tiny-gpt2-brown"), scratch / "model");
  write_file(
      dir / "pytorch_model.bin",
      pytorch_model_bin(read_safetensors(shipped_model("tiny-gpt2-brown") / "model.safetensors")));
  const auto from_bin = load_model(dir);
  ASSERT_STREQ(from_bin->weights->files()[0]->format(), "pytorch");
  expect_logits_of_tiny_gpt2(*from_bin);
}

TEST(PytorchModelBin, ShardsAndTheirIndex) {
  TempDir scratch;
  const auto dir = copy_without_weights(shipped_model("tiny-gpt2-brown"), scratch / "model");
  const std::vector<RawTensor> tensors =
      read_safetensors(shipped_model("tiny-gpt2-brown") / "model.safetensors");
  std::vector<RawTensor> shards[2];
  json weight_map = json::object();
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const std::string shard = "pytorch_model-0000" + std::to_string(1 + k % 2) + "-of-00002.bin";
    shards[k % 2].push_back(tensors[k]);
    weight_map[tensors[k].name] = shard;
  }
  for (int i = 0; i < 2; ++i) {
    write_file(dir / ("pytorch_model-0000" + std::to_string(i + 1) + "-of-00002.bin"),
               pytorch_model_bin(shards[i]));
  }
  write_file(dir / "pytorch_model.bin.index.json", json{{"weight_map", weight_map}}.dump());
  const auto sharded = load_model(dir);
  ASSERT_EQ(sharded->weights->files().size(), 2u);
  EXPECT_EQ(sharded->weights->source(), dir / "pytorch_model.bin.index.json");
  expect_logits_of_tiny_gpt2(*sharded);
}

TEST(PytorchModelBin, HostilePickleThroughTheCommandLineRunsNothingAndWritesNothing) {
  TempDir scratch;
  const auto dir = copy_without_weights(shipped_model("tiny-gpt2-brown"), scratch / "model");
  const auto witness = scratch / "ran";
  // What `python -c "torch.load(...)"` would run: os.system("touch <witness>").
  Pickle pickle;
  pickle.proto().global("os", "system").str("touch " + witness.string()).op(0x85).op('R').stop();
  write_file(dir / "pytorch_model.bin", torch_zip(pickle.bytes()));
  const FolderSnapshot before = snapshot(scratch.path());
  const CommandResult result = run_attn({"info", "-m", dir.string()});
  EXPECT_EQ(result.exit_status, 1) << describe(result);
  EXPECT_EQ(split_lines_of(result.err).size(), 1u) << result.err;
  EXPECT_NE(result.err.find((dir / "pytorch_model.bin").string() + ": data.pkl"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("os.system"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(witness));
  EXPECT_EQ(changed_files(before, snapshot(scratch.path())), std::vector<std::string>());
}

// --- which file a folder's weights come from ---

TEST(WeightFiles, SafetensorsWinsOverPytorchModelBin) {
  TempDir scratch;
  const auto dir = scratch / "model";
  std::filesystem::copy(shipped_model("tiny-gpt2-brown"), dir);
  // Not read at all: a broken .bin beside model.safetensors changes nothing.
  write_file(dir / "pytorch_model.bin", "not a zip");
  const auto model = load_model(dir);
  ASSERT_EQ(model->weights->files().size(), 1u);
  EXPECT_EQ(model->weights->source(), dir / "model.safetensors");
  EXPECT_STREQ(model->weights->files()[0]->format(), "safetensors");
}

TEST(WeightFiles, BrokenFirstChoiceIsReportedNotSkipped) {
  TempDir scratch;
  const auto dir = copy_without_weights(shipped_model("tiny-gpt2-brown"), scratch / "model");
  write_file(dir / "model.safetensors", "");
  write_shards(dir, read_safetensors(shipped_model("tiny-gpt2-brown") / "model.safetensors"), 2);
  expect_error([&] { load_model(dir); }, {(dir / "model.safetensors").string(), "truncated"});
}

TEST(WeightFiles, FolderWithoutWeightsNamesWhatItHas) {
  TempDir scratch;
  const auto dir = copy_without_weights(shipped_model("tiny-gpt2-brown"), scratch / "model");
  expect_error([&] { load_model(dir); },
               {dir.string(), "no weights attn can read", "model.safetensors.index.json",
                "pytorch_model.bin.index.json"});
  write_file(dir / "tf_model.h5", "");
  write_file(dir / "model-q8_0.gguf", "");
  expect_error([&] { load_model(dir); }, {dir.string(), "tf_model.h5 (TensorFlow)",
                                          "model-q8_0.gguf (GGUF)", "which attn does not read"});
}

TEST(WeightFiles, PytorchModelBinGivesTheSafetensorsHiddenStatesBitForBit) {
  ATTN_REQUIRE_SHARED();
  const auto models = shared_dir() / "models";
  const auto from_bin = load_model(models / "tiny-bert-seqcls-random-bin");
  const auto from_safetensors = load_model(models / "tiny-bert-seqcls-random");
  ASSERT_STREQ(from_bin->weights->files()[0]->format(), "pytorch");
  EXPECT_EQ(from_bin->parameter_count, from_safetensors->parameter_count);
  const Encoding encoding = from_bin->tokenizer->encode("The cat sat on the mat.", "It slept.");
  auto hidden = [&](const Model& model) {
    const ArchSpec& spec = model.spec();
    const int n = int(encoding.ids.size());
    KVCache cache(spec, n, spec.n_layer);
    RunState state(spec, n, n);
    Batch batch;
    batch.add_sequence(encoding.ids, encoding.type_ids);
    model.transformer->forward(batch, cache, state);
    return std::vector<float>(state.hidden.begin(), state.hidden.begin() + n * spec.d_model);
  };
  const std::vector<float> got = hidden(*from_bin), want = hidden(*from_safetensors);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
}

// --- the Hugging Face cache ---

TEST(HubRepoId, ValidAndInvalid) {
  for (const char* id : {"gpt2", "Qwen/Qwen2.5-0.5B", "google/gemma-3-270m", "a_b/c.d"}) {
    EXPECT_TRUE(is_repo_id(id)) << id;
  }
  for (const char* id :
       {"", "a/b/c", "../gpt2", "a--b/c", "a/b..c", "-a/b", "a/b-", "/abs", "a b", "a/"}) {
    EXPECT_FALSE(is_repo_id(id)) << id;
  }
}

TEST(HubRepoId, OfASnapshot) {
  EXPECT_EQ(repo_id_of_snapshot("/c/hub/models--Qwen--Qwen3-0.6B/snapshots/abc"),
            "Qwen/Qwen3-0.6B");
  EXPECT_EQ(repo_id_of_snapshot("/c/hub/models--gpt2/snapshots/abc/"), "gpt2");
  EXPECT_EQ(repo_id_of_snapshot("/models/tiny-gpt2-brown"), std::nullopt);
}

// Sets (or, given null, unsets) an environment variable for the life of the object; then
// restores it.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ScopedEnvironment(const char* name, const std::string& value)
      : ScopedEnvironment(name, value.c_str()) {}
  ~ScopedEnvironment() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A Hugging Face cache holding tiny-gpt2-brown as "attn-test/tiny-gpt2" laid out as
// huggingface_hub lays it out: refs/main names commit kMain, whose snapshot holds the shipped
// files; tag v1 names commit kSharded, the same weights as 2 shards. Every snapshot file is a
// relative symbolic link into blobs/.
class HubCache : public ::testing::Test {
 protected:
  static constexpr const char* kMain = "0123456789abcdef0123456789abcdef01234567";
  static constexpr const char* kSharded = "89abcdef0123456789abcdef0123456789abcdef";

  void SetUp() override {
    repo_ = scratch_ / "hub" / "models--attn-test--tiny-gpt2";
    std::filesystem::create_directories(repo_ / "blobs");
    std::filesystem::create_directories(repo_ / "refs");
    write_file(repo_ / "refs" / "main", kMain);  // without a newline, as huggingface_hub writes
    write_file(repo_ / "refs" / "v1", kSharded);
    const auto model = shipped_model("tiny-gpt2-brown");
    for (const auto& entry : std::filesystem::directory_iterator(model)) {
      add_file(kMain, entry.path().filename().string(), read_file(entry.path()));
      if (entry.path().filename() != "model.safetensors") {
        add_file(kSharded, entry.path().filename().string(), read_file(entry.path()));
      }
    }
    const auto staging = scratch_ / "staging";
    std::filesystem::create_directories(staging);
    write_shards(staging, read_safetensors(model / "model.safetensors"), 2);
    for (const auto& entry : std::filesystem::directory_iterator(staging)) {
      add_file(kSharded, entry.path().filename().string(), read_file(entry.path()));
    }
  }

  // One file of a snapshot: its contents in blobs/, a link to them in snapshots/<commit>/.
  void add_file(const std::string& commit, const std::string& name, const std::string& contents) {
    const std::string blob = "blob-" + std::to_string(blob_count_++);
    write_file(repo_ / "blobs" / blob, contents);
    const auto snapshot = repo_ / "snapshots" / commit;
    std::filesystem::create_directories(snapshot);
    std::filesystem::create_symlink("../../blobs/" + blob, snapshot / name);
  }

  std::string cache() const { return (scratch_ / "hub").string(); }

  TempDir scratch_;
  std::filesystem::path repo_;
  int blob_count_ = 0;
};

TEST_F(HubCache, FindsTheSnapshotOfMainAndOfOtherRevisions) {
  ScopedEnvironment hub("HF_HUB_CACHE", cache());
  EXPECT_EQ(find_in_hub_cache("attn-test/tiny-gpt2", "main"), repo_ / "snapshots" / kMain);
  EXPECT_EQ(find_in_hub_cache("attn-test/tiny-gpt2", "v1"), repo_ / "snapshots" / kSharded);
  EXPECT_EQ(find_in_hub_cache("attn-test/tiny-gpt2", kSharded), repo_ / "snapshots" / kSharded);
}

TEST_F(HubCache, CacheFolderFollowsHuggingFaceHubsEnvironment) {
  ScopedEnvironment home("HOME", "/home/someone");
  ScopedEnvironment no_hub("HF_HUB_CACHE", nullptr), no_old_hub("HUGGINGFACE_HUB_CACHE", nullptr),
      no_hf_home("HF_HOME", nullptr), no_xdg("XDG_CACHE_HOME", nullptr);
  EXPECT_EQ(hub_cache_dir(), "/home/someone/.cache/huggingface/hub");
  {
    ScopedEnvironment xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(hub_cache_dir(), "/xdg/huggingface/hub");
    ScopedEnvironment hf_home("HF_HOME", "~/hf");
    EXPECT_EQ(hub_cache_dir(), "/home/someone/hf/hub");
    ScopedEnvironment hub("HF_HUB_CACHE", "/cache/hub");
    EXPECT_EQ(hub_cache_dir(), "/cache/hub");
  }
}

TEST_F(HubCache, RunsTheCachedModelAsTheFolder) {
  ScopedEnvironment hub("HF_HUB_CACHE", cache());
  const std::vector<std::string> generate = {"generate", "-p", "The cat", "-n", "8", "--temp", "0"};
  auto with_model = [&](std::vector<std::string> args, const std::vector<std::string>& model) {
    args.insert(args.end(), model.begin(), model.end());
    return run_attn(args);
  };
  const CommandResult want =
      with_model(generate, {"-m", shipped_model("tiny-gpt2-brown").string()});
  ASSERT_EQ(want.exit_status, 0) << describe(want);
  for (const std::vector<std::string>& model :
       {std::vector<std::string>{"-m", "attn-test/tiny-gpt2"},
        {"-m", "attn-test/tiny-gpt2", "--revision", "v1"},
        {"-m", "attn-test/tiny-gpt2", "--revision", kSharded}}) {
    const CommandResult got = with_model(generate, model);
    ASSERT_EQ(got.exit_status, 0) << describe(got);
    EXPECT_EQ(got.out, want.out);
  }
  const CommandResult info = with_model({"info", "--json"}, {"-m", "attn-test/tiny-gpt2"});
  ASSERT_EQ(info.exit_status, 0) << describe(info);
  EXPECT_EQ(json::parse(info.out)["model"], "attn-test/tiny-gpt2");

  // -v says where the model came from and which weight files were read.
  const CommandResult verbose =
      with_model({"info", "-v"}, {"-m", "attn-test/tiny-gpt2", "--revision", "v1"});
  ASSERT_EQ(verbose.exit_status, 0) << describe(verbose);
  EXPECT_NE(verbose.err.find("attn-test/tiny-gpt2: from the Hugging Face cache, " +
                             (repo_ / "snapshots" / kSharded).string()),
            std::string::npos)
      << verbose.err;
  for (int shard = 1; shard <= 2; ++shard) {
    EXPECT_NE(verbose.err.find(shard_name(shard, 2) + " (safetensors, "), std::string::npos)
        << verbose.err;
  }
}

TEST_F(HubCache, WhatIsNotCachedIsAOneLineError) {
  ScopedEnvironment hub("HF_HUB_CACHE", cache());
  const CommandResult missing = run_attn({"info", "-m", "nobody/nothing"});
  EXPECT_EQ(missing.exit_status, 1) << describe(missing);
  EXPECT_NE(
      missing.err.find("nobody/nothing: not a folder, and not in the Hugging Face cache (no " +
                       cache() + "/models--nobody--nothing)"),
      std::string::npos)
      << missing.err;
  EXPECT_NE(missing.err.find("attn never downloads"), std::string::npos) << missing.err;

  const CommandResult revision =
      run_attn({"info", "-m", "attn-test/tiny-gpt2", "--revision", "nope"});
  EXPECT_EQ(revision.exit_status, 1) << describe(revision);
  EXPECT_NE(revision.err.find("revision 'nope' is not in the Hugging Face cache"),
            std::string::npos)
      << revision.err;

  const CommandResult escape =
      run_attn({"info", "-m", "attn-test/tiny-gpt2", "--revision", "../../x"});
  EXPECT_NE(escape.exit_status, 0) << describe(escape);
  EXPECT_NE(escape.err.find("--revision '../../x' is not a branch, tag or commit name"),
            std::string::npos)
      << escape.err;

  const CommandResult folder =
      run_attn({"info", "-m", shipped_model("tiny-gpt2-brown").string(), "--revision", "main"});
  EXPECT_EQ(folder.exit_status, 2) << describe(folder);
  EXPECT_NE(folder.err.find("is a folder, not a model of the Hugging Face cache"),
            std::string::npos)
      << folder.err;
}

}  // namespace
}  // namespace attn::test
