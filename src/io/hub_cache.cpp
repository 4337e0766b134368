#include "src/io/hub_cache.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/io/json_util.h"

namespace attn {
namespace {

// An environment variable, when set and not empty.
std::optional<std::filesystem::path> environment(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return std::nullopt;
  return std::filesystem::path(value);
}

// "~/x" as the shell would expand it (huggingface_hub calls os.path.expanduser).
std::filesystem::path expand_home(const std::filesystem::path& path) {
  const std::string text = path.string();
  if (text != "~" && !text.starts_with("~/")) return path;
  const std::optional<std::filesystem::path> home = environment("HOME");
  if (!home) throw Error(text + ": cannot find the Hugging Face cache: HOME is not set");
  return *home / text.substr(std::min<std::size_t>(2, text.size()));
}

// A revision names a ref file under refs/ or a snapshot folder: it may have '/' (refs/pr/1) but
// no part that leaves refs/ or snapshots/.
bool is_safe_revision(const std::string& revision) {
  if (revision.empty() || revision.starts_with('/') || revision.size() > 256) return false;
  for (const auto& part : std::filesystem::path(revision)) {
    if (part == ".." || part == "." || part.empty()) return false;
  }
  return revision.find('\0') == std::string::npos;
}

bool is_folder(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error);
}

bool is_commit_hash(const std::string& text) {
  return text.size() == 40 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::filesystem::path hub_cache_dir() {
  if (auto dir = environment("HF_HUB_CACHE")) return expand_home(*dir);
  if (auto dir = environment("HUGGINGFACE_HUB_CACHE")) return expand_home(*dir);
  if (auto home = environment("HF_HOME")) return expand_home(*home) / "hub";
  if (auto cache = environment("XDG_CACHE_HOME")) {
    return expand_home(*cache) / "huggingface" / "hub";
  }
  return expand_home("~/.cache") / "huggingface" / "hub";
}

bool is_repo_id(const std::string& text) {
  if (text.empty() || text.size() > 96) return false;
  if (text.find("--") != std::string::npos || text.find("..") != std::string::npos) return false;
  const std::size_t slash = text.find('/');
  if (slash != std::string::npos && text.find('/', slash + 1) != std::string::npos) return false;
  auto valid_part = [](std::string_view part) {
    return !part.empty() && part.front() != '-' && part.front() != '.' && part.back() != '-' &&
           part.back() != '.' && std::all_of(part.begin(), part.end(), [](char c) {
             return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
           });
  };
  if (slash == std::string::npos) return valid_part(text);
  return valid_part(std::string_view(text).substr(0, slash)) &&
         valid_part(std::string_view(text).substr(slash + 1));
}

std::filesystem::path find_in_hub_cache(const std::string& repo_id, const std::string& revision) {
  const std::filesystem::path cache = hub_cache_dir();
  const std::size_t slash = repo_id.find('/');
  const std::string folder_name =
      "models--" + (slash == std::string::npos
                        ? repo_id
                        : repo_id.substr(0, slash) + "--" + repo_id.substr(slash + 1));
  const std::filesystem::path repo = cache / folder_name;
  const std::string fetch = "; attn never downloads: fetch it with `huggingface-cli download " +
                            repo_id +
                            (revision == "main" ? "" : " --revision " + brief_text(revision)) + "`";
  if (!is_folder(repo)) {
    throw Error(repo_id + ": not a folder, and not in the Hugging Face cache (no " + repo.string() +
                ")" + fetch);
  }
  if (!is_safe_revision(revision)) {
    throw Error("--revision '" + brief_text(revision) + "' is not a branch, tag or commit name");
  }
  // A branch or tag: refs/<revision> holds the commit. Else the revision may be the commit.
  std::string commit = revision;
  const std::filesystem::path ref = repo / "refs" / revision;
  std::error_code error;
  if (std::filesystem::is_regular_file(ref, error)) {
    commit = read_model_file(ref, 4096);
    while (!commit.empty() && std::isspace(static_cast<unsigned char>(commit.back()))) {
      commit.pop_back();
    }
    if (!is_commit_hash(commit)) {
      throw Error(ref.string() + ": not a commit hash ('" + brief_text(commit) + "')");
    }
  }
  const std::filesystem::path snapshot = repo / "snapshots" / commit;
  if (!is_safe_revision(commit) || !is_folder(snapshot)) {
    throw Error(repo_id + ": revision '" + brief_text(revision) +
                "' is not in the Hugging Face cache (no " + ref.string() + " and no " +
                snapshot.string() + ")" + fetch);
  }
  return snapshot;
}

std::optional<std::string> repo_id_of_snapshot(const std::filesystem::path& dir) {
  const std::filesystem::path folder = dir.lexically_normal();
  const std::filesystem::path snapshots =
      (folder.has_filename() ? folder : folder.parent_path()).parent_path();
  const std::string repo = snapshots.parent_path().filename().string();
  if (snapshots.filename() != "snapshots" || !repo.starts_with("models--")) return std::nullopt;
  const std::string id = repo.substr(std::strlen("models--"));
  const std::size_t separator = id.find("--");
  if (separator == std::string::npos) return id;
  return id.substr(0, separator) + "/" + id.substr(separator + 2);
}

std::filesystem::path resolve_model_folder(const std::filesystem::path& model,
                                           const std::optional<std::string>& revision) {
  if (entry_exists(model) || !is_repo_id(model.string())) {
    if (revision) {
      throw UsageError("--revision: '" + brief_text(model.string()) +
                       "' is a folder, not a model of the Hugging Face cache");
    }
    return model;
  }
  return find_in_hub_cache(model.string(), revision.value_or("main"));
}

}  // namespace attn
