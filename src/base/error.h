#pragma once

#include <stdexcept>
#include <string>

namespace attn {

// Every user-facing failure (bad file, bad field, bad argument) is an Error whose message names
// the file or option and says what is wrong. main() catches it once and prints it on one line.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A command-line usage error (bad option value); main() exits with status 2 for these.
class UsageError : public Error {
 public:
  using Error::Error;
};

}  // namespace attn
