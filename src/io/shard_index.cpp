#include "src/io/shard_index.h"

#include <nlohmann/json.hpp>
#include <set>

#include "src/base/error.h"
#include "src/io/json_util.h"

namespace attn {
namespace {

// Whether `name` names a file in the index's own folder and nothing else.
bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string_view("/\\\0", 3)) == std::string::npos;
}

}  // namespace

ShardIndex parse_shard_index(std::string_view text, const std::string& file) {
  // A JSON object keeps the last of two equal keys; a tensor listed twice must be caught while
  // parsing. One set of keys per object open around the parser.
  std::vector<std::set<std::string>> open_objects;
  std::string twice;
  const nlohmann::json::parser_callback_t find_repeated_keys =
      [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        using Event = nlohmann::json::parse_event_t;
        if (event == Event::object_start) open_objects.emplace_back();
        if (event == Event::object_end) open_objects.pop_back();
        if (event == Event::key && twice.empty() &&
            !open_objects.back().insert(parsed.get<std::string>()).second) {
          twice = parsed.get<std::string>();
        }
        return true;
      };
  check_json(text, file);
  const nlohmann::json index = nlohmann::json::parse(text, find_repeated_keys);
  if (!twice.empty()) throw Error(file + ": '" + brief_text(twice) + "' is listed twice");
  if (!index.is_object()) throw Error(file + ": not a JSON object");
  const auto weight_map = index.find("weight_map");
  if (weight_map == index.end() || !weight_map->is_object()) {
    throw Error(file + ": weight_map must be an object mapping tensor names to shard files");
  }

  ShardIndex result;
  std::map<std::string, std::size_t> position;  // shard file -> position in result.shards
  for (const auto& [tensor, shard] : weight_map->items()) {
    const std::string where = file + ": weight_map['" + brief_text(tensor) + "']";
    if (!shard.is_string()) throw Error(where + " must be a file name, got " + brief_json(shard));
    const std::string& name = shard.get_ref<const std::string&>();
    if (!is_plain_file_name(name)) {
      throw Error(where + " is '" + brief_text(name) +
                  "', which is not a file of the index's folder");
    }
    const auto [it, added] = position.emplace(name, result.shards.size());
    if (added) {
      if (result.shards.size() == kMaxShards) {
        throw Error(file + ": names more than " + std::to_string(kMaxShards) + " shard files");
      }
      result.shards.push_back(name);
    }
    result.shard_of.emplace(tensor, it->second);
  }
  return result;
}

}  // namespace attn
