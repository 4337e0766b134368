# Writes a C++ header that holds a text file as a raw string literal, so that a readable source
# file (the attention page) ships inside the binary:
#   cmake -DINPUT=page.html -DOUTPUT=page_html.h -DNAME=kPageHtml -P embed_text.cmake
file(READ "${INPUT}" text)
set(delimiter "attn_embedded")
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string delimiter ')${delimiter}\"'")
endif()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/embed_text.cmake: edit that file instead.\n"
  "#pragma once\n\n#include <string_view>\n\nnamespace attn {\n\n"
  "inline constexpr std::string_view ${NAME} = R\"${delimiter}(${text})${delimiter}\";\n\n"
  "}  // namespace attn\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
