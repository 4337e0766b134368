#include "src/cli/cli_help.h"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/base/error.h"

namespace attn {
namespace {

class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* option, bool is_positional) const override {
    if (is_positional) return option->get_name(true, false);
    std::string names;
    for (const std::string& name : option->get_snames())
      names += (names.empty() ? "-" : ", -") + name;
    for (const std::string& name : option->get_lnames()) {
      names += (names.empty() ? "--" : ", --") + name;
    }
    return names;
  }

  std::string make_option_opts(const CLI::Option* option) const override {
    if (option->get_type_size() == 0) return "";  // a flag
    // CLI11 appends each validator's description to the type ("INT:INT:>= 0"); only a list of
    // choices ("TEXT:{f32,f16}") is worth showing.
    std::string type = option->get_type_name();
    const std::size_t choices = type.find(":{");
    type = choices != std::string::npos ? type.substr(choices + 1) : type.substr(0, type.find(':'));
    if (type == "UINT") type = "INT";
    if (option->get_expected_max() == CLI::detail::expected_max_vector_size) type += " ...";
    return " " + type;
  }

  // CLI11 starts the description one space after a name that just fits its column; two spaces,
  // or the next line, keep the name and the description apart.
  std::string make_option(const CLI::Option* option, bool is_positional) const override {
    const std::string name = make_option_name(option, is_positional) + make_option_opts(option);
    const std::string description = make_option_desc(option);
    std::stringstream out;
    if (name.size() + 3 == get_column_width() && !description.empty()) {
      out << "  " << name << "\n";
      CLI::detail::format_help(out, "", description, get_column_width());
    } else {
      CLI::detail::format_help(out, name, description, get_column_width());
    }
    return out.str();
  }
};

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> option_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_snames()) names.push_back("-" + name);
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

}  // namespace

std::string help_hint(const CLI::App& command) {
  return command.get_parent() ? "see attn " + command.get_name() + " --help" : "see attn --help";
}

std::shared_ptr<CLI::Formatter> help_formatter() { return std::make_shared<HelpFormatter>(); }

std::string closest_name(std::string_view given, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::string::npos;
  for (const std::string& candidate : candidates) {
    // "--temperature" for "--temp" is no typo, but "--temp" for "--tem" likely is.
    if (given.size() >= 3 && candidate.starts_with(given)) return candidate;
    const std::size_t distance = edit_distance(given, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  // A third of the name, at least 1 and at most 3 edits: "--sed" -> "--seed", not "-k" -> "-m".
  const std::size_t allowed = std::clamp<std::size_t>(given.size() / 3, 1, 3);
  return best_distance <= allowed ? best : "";
}

std::string describe_parse_error(const CLI::ParseError& error, const CLI::App& command) {
  if (dynamic_cast<const CLI::ExtrasError*>(&error)) {
    for (const std::string& extra : command.remaining()) {
      if (!extra.starts_with('-') || extra == "-") {
        // A model folder given without -m, as `attn info DIR`.
        const bool model_folder =
            command.get_option_no_throw("-m") != nullptr && std::filesystem::is_directory(extra);
        return "unexpected argument '" + extra + "'" +
               (model_folder ? " (a model folder goes after -m: -m " + extra + "; " : " (") +
               help_hint(command) + ")";
      }
      const std::string name = extra.substr(0, extra.find('='));
      const std::string suggestion = closest_name(name, option_names(command));
      return "unknown option '" + name + "'" +
             (suggestion.empty() ? "" : " (did you mean " + suggestion + "?)") + "; " +
             help_hint(command);
    }
  }
  return std::string(error.what()) + "; " + help_hint(command);
}

std::vector<std::string> take_gpu_options(std::vector<std::string>& arguments) {
  std::vector<std::string> taken;
  for (std::size_t i = 0; i < arguments.size() && arguments[i] != "--";) {
    const std::string& argument = arguments[i];
    const std::string name = argument.substr(0, argument.find('='));
    const bool layers = name == "-ngl" || name == "--n-gpu-layers" || name == "--gpu-layers";
    const bool flash = name == "-fa" || name == "--flash-attn";
    if (!layers && !flash) {
      ++i;
      continue;
    }
    taken.push_back(name);
    std::size_t count = 1;
    // -ngl N takes a value; -fa takes one only in llama.cpp's newer spelling (-fa on|off|auto).
    const bool value_attached = argument.find('=') != std::string::npos;
    if (!value_attached && i + 1 < arguments.size()) {
      static const std::set<std::string> kFlashValues = {"on", "off", "auto", "0", "1"};
      if (layers || kFlashValues.contains(arguments[i + 1])) count = 2;
    }
    arguments.erase(arguments.begin() + std::ptrdiff_t(i),
                    arguments.begin() + std::ptrdiff_t(i + count));
  }
  return taken;
}

}  // namespace attn
