// The shard index reader (model.safetensors.index.json) on arbitrary text. An index it accepts
// names each tensor once, each in a shard that is a plain file name of the index's folder, and
// lists no shard that no tensor is in.

#include <string>
#include <string_view>
#include <vector>

#include "src/base/error.h"
#include "src/io/shard_index.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  attn::ShardIndex index;
  try {
    index = attn::parse_shard_index(text, "model.safetensors.index.json");
  } catch (const attn::Error&) {
    return 0;
  }
  FUZZ_CHECK(index.shards.size() <= attn::kMaxShards, "more shards than the limit");
  std::vector<bool> used(index.shards.size());
  for (const auto& [tensor, shard] : index.shard_of) {
    FUZZ_CHECK(shard < index.shards.size(), tensor + ": shard position out of range");
    used[shard] = true;
  }
  for (std::size_t i = 0; i < index.shards.size(); ++i) {
    const std::string& name = index.shards[i];
    FUZZ_CHECK(used[i], name + ": listed but holds no tensor");
    FUZZ_CHECK(!name.empty() && name != "." && name != ".." &&
                   name.find('/') == std::string::npos && name.find('\\') == std::string::npos &&
                   name.find('\0') == std::string::npos,
               "accepted shard name '" + name + "', which leaves the folder");
  }
  return 0;
}
