#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

// What the command line says to a person: help without the parser's internals, and errors that
// suggest the option or command meant and point to the right --help.
namespace attn {

// Help text as "-n, --max-new-tokens INT   description": no validator ranges, no "=default"
// (each description states its default once), no "{false}" on negated flags.
std::shared_ptr<CLI::Formatter> help_formatter();

// The candidate nearest to `given` (by edit distance, or of which `given` is a prefix), if near
// enough to be a likely typo; empty otherwise.
std::string closest_name(std::string_view given, const std::vector<std::string>& candidates);

// "see attn CMD --help" (or "see attn --help" for the app itself), the end of every usage error.
std::string help_hint(const CLI::App& command);

// One line for a CLI11 parse error of `command` (the subcommand, or the app itself when no
// subcommand was reached): "unknown option '--sed' (did you mean --seed?); see attn generate
// --help".
std::string describe_parse_error(const CLI::ParseError& error, const CLI::App& command);

// Takes llama.cpp's GPU options (-ngl N, --n-gpu-layers N, -fa [on|off|auto]) out of a
// command's arguments, so that a command line written for llama.cpp runs; returns their names,
// for main to say once that attn runs on the CPU. CLI11 would read -ngl as -n gl.
std::vector<std::string> take_gpu_options(std::vector<std::string>& arguments);

}  // namespace attn
