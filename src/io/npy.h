#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "src/io/output_file.h"

// NumPy's .npy format (version 1.0) for a float32 matrix, written row by row so that a large
// matrix never has to be held in memory: numpy.load(path) gives an array of shape
// (rows, columns), dtype float32, C order.
namespace attn {

// The 64-byte-aligned header announcing a little-endian float32 matrix (rows, columns).
std::string npy_header(std::size_t rows, std::size_t columns);

class NpyMatrixWriter {
 public:
  // Writes the header to `out` at once; the rows must follow, exactly `rows` of them.
  NpyMatrixWriter(OutputFile& out, std::size_t rows, std::size_t columns);

  // One row of `columns` values (std::logic_error for another width or one row too many).
  void write_row(std::span<const float> row);

  // Checks that every announced row was written (std::logic_error otherwise).
  void finish() const;

 private:
  OutputFile& out_;
  std::size_t rows_;
  std::size_t columns_;
  std::size_t rows_written_ = 0;
};

}  // namespace attn
