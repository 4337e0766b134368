#include "src/cli/commands.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "src/base/error.h"
#include "src/base/files.h"
#include "src/base/unicode.h"
#include "src/io/output_file.h"
#include "src/model/sentence_transformers.h"
#include "src/tasks/embed.h"

namespace attn {

void require_utf8(std::string_view text, const std::string& what) {
  if (!is_valid_utf8(text)) decode_utf8(text, what);  // throws, naming the first invalid byte
}

std::vector<std::string> split_lines(std::string_view contents) {
  std::vector<std::string> lines;
  for (std::size_t begin = 0; begin < contents.size();) {
    std::size_t end = contents.find('\n', begin);
    if (end == std::string_view::npos) end = contents.size();
    std::string_view line = contents.substr(begin, end - begin);
    if (line.ends_with('\r')) line.remove_suffix(1);
    lines.emplace_back(line);
    begin = end + 1;
  }
  return lines;
}

std::string plural(long count, std::string_view singular, std::string_view plural_form) {
  if (count == 1) return "1 " + std::string(singular);
  return std::to_string(count) + " " +
         (plural_form.empty() ? std::string(singular) + "s" : std::string(plural_form));
}

std::string error_line(std::string_view message) {
  // Far above any real message; a line of megabytes would only bury the terminal.
  constexpr std::size_t kMaxLineBytes = 2000;
  std::string line = "attn: error: ";
  std::size_t shown = 0;
  for (; shown < message.size() && line.size() < kMaxLineBytes; ++shown) {
    const unsigned char c = message[shown];
    if (c < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02X", c);
      line += escaped;
    } else {
      line += char(c);
    }
  }
  if (shown < message.size()) {
    line.resize(complete_utf8_prefix(line));
    line += "...";
  }
  return line + '\n';
}

void print_error(std::string_view message) {
  const std::string line = error_line(message);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

std::string page_with_data(std::string_view page, std::string_view marker,
                           const nlohmann::ordered_json& data) {
  std::string json;
  for (char c : json_text(data)) {
    if (c == '<') {
      json += "\\u003c";
    } else {
      json += c;
    }
  }
  const std::size_t at = page.find(marker);
  if (at == std::string_view::npos) throw std::logic_error("page template has no marker");
  return std::string(page.substr(0, at)) + json + std::string(page.substr(at + marker.size()));
}

}  // namespace attn
