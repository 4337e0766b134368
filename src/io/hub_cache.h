#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace attn {

// Models already downloaded by Hugging Face's tools, found where huggingface_hub keeps them:
//   <cache>/models--ORG--NAME/refs/main          the commit the branch "main" points to
//   <cache>/models--ORG--NAME/snapshots/<commit>/ the files of that commit, symbolic links
//                                                 into ../../blobs/
// <cache> is $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub. attn never downloads.

// The cache folder, from the environment as above.
std::filesystem::path hub_cache_dir();

// Whether `text` is a hub repository id as huggingface_hub accepts one: NAME or ORG/NAME, of
// letters, digits, '-', '_' and '.', without "--" or "..", at most 96 characters.
bool is_repo_id(const std::string& text);

// The snapshot folder of `repo_id` at `revision` (a branch or tag under refs/, or a commit
// hash): <cache>/models--ORG--NAME/snapshots/<commit>. A model or revision not in the cache is a
// one-line error naming the folder looked in and how to fetch it.
std::filesystem::path find_in_hub_cache(const std::string& repo_id, const std::string& revision);

// The repository id of a snapshot folder of the cache (".../models--Qwen--Qwen3-0.6B/snapshots/
// <commit>" gives "Qwen/Qwen3-0.6B"); nothing for any other folder.
std::optional<std::string> repo_id_of_snapshot(const std::filesystem::path& dir);

// The model folder `-m` names: `model` itself when it exists (then `revision` must be empty, as
// only cached models have revisions); else, when it is a repository id, its snapshot in the
// cache. Anything else is "<model>: model folder not found".
std::filesystem::path resolve_model_folder(const std::filesystem::path& model,
                                           const std::optional<std::string>& revision);

}  // namespace attn
