# Writes OUT, a C++ source defining chord::RingPageHtml() as the bytes of IN (the ring page),
# so the page ships inside chord-node. Run by the build: cmake -DIN=... -DOUT=... -P this.
file(READ "${IN}" content HEX)
string(LENGTH "${content}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${content}")
file(WRITE "${OUT}"
  "// Generated from ${IN} by embed_file.cmake; do not edit.\n"
  "#include \"node/http/ring_page.h\"\n\n"
  "namespace chord {\nnamespace {\nconst char kPage[] = {${bytes} 0};\n}  // namespace\n\n"
  "std::string_view RingPageHtml() { return std::string_view(kPage, ${size}); }\n\n"
  "}  // namespace chord\n")
