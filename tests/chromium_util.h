#pragma once

// Headless Chromium for the tests of attn's HTML pages: find it, load a page, read its DOM.

#include <string>
#include <utility>
#include <vector>

#include "tests/cli_util.h"

namespace attn::test {

// The Chromium on the PATH, or "" when there is none.
inline std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    const CommandResult found = run_program("/bin/sh", {"-c", std::string("command -v ") + name});
    if (found.exit_status == 0) return found.out.substr(0, found.out.find('\n'));
  }
  return "";
}

// Loads a page in headless chromium with the given output options (--dump-dom prints the DOM
// after the page's scripts ran), giving up after 4 minutes: a hang guard, not a time limit. The
// largest page (512 tokens, 18 MB) takes 30 s on an idle 2-vCPU machine, and a shared machine's
// load slows it 2-5x (it passed 60 s once, under a parallel build).
inline CommandResult run_chromium(const std::string& chromium, const std::string& url,
                                  const std::vector<std::string>& output_options) {
  TempDir profile;
  std::vector<std::string> args = {"240",
                                   chromium,
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--disable-quic",
                                   "--no-first-run",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--user-data-dir=" + profile.path().string()};
  args.insert(args.end(), output_options.begin(), output_options.end());
  args.push_back(url);
  return run_program("/usr/bin/timeout", args);
}

// Text as the DOM serializes it inside an element.
inline std::string html_escape(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    escaped += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
  }
  return escaped;
}

// `html` with a script at the start of its <head> that keeps the page's uncaught errors in the
// data-errors attribute of its <html> element, for the DOM after load to show them.
inline std::string with_error_probe(std::string html) {
  const std::string head = "<head>";
  const std::size_t at = html.find(head);
  if (at == std::string::npos) return html;
  return html.insert(at + head.size(), R"(
<script>
addEventListener("error", (event) => {
  const root = document.documentElement;
  root.dataset.errors = (root.dataset.errors || "") + event.message + "; ";
});
</script>)");
}

// The attention page's label of a token with one of these pieces: spaces, byte-level BPE's "Ġ"
// (a space) and "Ċ" (a newline) and SentencePiece's "▁" (a space) as marks. Only for pieces
// whose other characters are printable ASCII, which the page shows as they are.
inline std::string shown_token(const std::string& piece) {
  static const std::pair<std::string, std::string> kMarks[] = {
      {" ", "␣"}, {"Ġ", "␣"}, {"Ċ", "⏎"}, {"▁", "␣"}};
  std::string shown;
  for (std::size_t i = 0; i < piece.size();) {
    bool marked = false;
    for (const auto& [stand_in, mark] : kMarks) {
      if (piece.compare(i, stand_in.size(), stand_in) == 0) {
        shown += mark;
        i += stand_in.size();
        marked = true;
        break;
      }
    }
    if (!marked) shown += piece[i++];
  }
  return shown;
}

}  // namespace attn::test
