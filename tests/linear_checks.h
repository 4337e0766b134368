#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/kernels/ops.h"

namespace attn {

// Each of the `rows` rows of x (rows, linear.in) gives the same outputs, bit for bit, alone (one
// row), among separate rows (RowKind::kSeparate) and among the rows of one product: what a
// packed Linear (Linear::panels) promises, all three going through the same GEMM. `what` names
// the case in a failure.
inline void expect_rows_equal_alone(const Linear& linear, const std::vector<float>& x, int rows,
                                    const std::string& what) {
  const int in = linear.in, out = linear.out;
  std::vector<float> product(std::size_t(rows) * out), separate(product.size()), alone(out);
  linear_forward(product.data(), x.data(), rows, linear);
  linear_forward(separate.data(), x.data(), rows, linear, RowKind::kSeparate);
  for (int r = 0; r < rows; ++r) {
    linear_forward(alone.data(), x.data() + long(r) * in, 1, linear);
    for (int j = 0; j < out; ++j) {
      ASSERT_EQ(alone[j], product[std::size_t(r) * out + j])
          << what << ": row " << r << " alone, output " << j;
      ASSERT_EQ(separate[std::size_t(r) * out + j], product[std::size_t(r) * out + j])
          << what << ": row " << r << " among separate rows, output " << j;
    }
  }
}

}  // namespace attn
