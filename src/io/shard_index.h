#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// A sharded checkpoint's index (model.safetensors.index.json, pytorch_model.bin.index.json):
//   {"metadata": {"total_size": 1747200},
//    "weight_map": {"model.embed_tokens.weight": "model-00001-of-00003.safetensors", ...}}
struct ShardIndex {
  std::vector<std::string> shards;              // file names, each once
  std::map<std::string, std::size_t> shard_of;  // tensor name -> position in `shards`
};

// Reads an index's text; `file` names it in errors. Refused, each in one line naming the entry:
// text that is not a JSON object, a weight_map that is missing or not an object, a tensor listed
// twice, a shard name that is not a string or not a plain file name of the folder (empty, "..",
// a path with '/' or '\', an absolute path), and more than kMaxShards shard files.
ShardIndex parse_shard_index(std::string_view text, const std::string& file);

// More shard files than any published checkpoint has (the largest have a few hundred).
constexpr std::size_t kMaxShards = 10'000;

}  // namespace attn
