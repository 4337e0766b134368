#include "src/tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include "src/base/error.h"
#include "src/io/json_util.h"
#include "src/tokenizer/bpe.h"
#include "src/tokenizer/wordpiece.h"

namespace attn {

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir,
                                          std::string_view family) {
  try {
    if (family == "gpt2") return load_bpe_tokenizer(model_dir);
    if (family == "bert") return load_wordpiece_tokenizer(model_dir);
  } catch (const nlohmann::json::exception& error) {
    // The loaders check every value's type before reading it; this is the last resort that keeps
    // a case they missed a one-line error rather than a crash.
    throw Error(model_dir.string() + ": tokenizer files: unexpected JSON value (" +
                brief_text(error.what(), 200) + ")");
  }
  throw Error(model_dir.string() + ": no tokenizer for family '" + std::string(family) + "'");
}

}  // namespace attn
