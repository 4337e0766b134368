#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

// Reading whole input files without letting a hostile path hang attn or exhaust memory: a FIFO
// with no writer, /dev/zero or /dev/urandom in place of a model file, or a 2 GB "vocabulary".
namespace attn {

// Size caps, each stated in the error when exceeded. Real files are far below them
// (config.json: a few kB; the largest tokenizer.json on the hub: about 35 MB).
constexpr std::size_t kMaxConfigBytes = 16u << 20;      // config.json and the other small JSON
constexpr std::size_t kMaxTokenizerBytes = 256u << 20;  // vocab.*, merges.txt, *.model
// tokenizer.json is parsed whole, which takes several times its size in memory; the largest
// real ones (Gemma 3's) are 33 MB.
constexpr std::size_t kMaxTokenizerJsonBytes = 128u << 20;
constexpr std::size_t kMaxInputTextBytes = 256u << 20;  // --file and standard input

// Reads a model file, which must be a regular file (a folder, FIFO or device is refused
// without blocking) of at most max_bytes. Errors name the path: "<path>: cannot open file
// (No such file or directory)", "<path>: is a folder, not a file", "<path>: not a regular
// file", "<path>: larger than the 16 MB limit for this file".
std::string read_model_file(const std::filesystem::path& path, std::size_t max_bytes);

// Reads user input text: standard input for "-", otherwise a regular file or a pipe (so that
// `--file <(command)` works); devices and folders are refused. At most max_bytes. `what` names
// the source in errors ("--file").
std::string read_input_text(const std::filesystem::path& path, const std::string& what,
                            std::size_t max_bytes);

// Whether there is anything at `path` (a file, a folder, a FIFO, even a dangling or looping
// symbolic link): a model file in the wrong form must be reported by its reader, not taken for
// an absent file. Never throws.
bool entry_exists(const std::filesystem::path& path);

}  // namespace attn
