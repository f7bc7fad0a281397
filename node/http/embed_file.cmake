# Writes OUT, a C++ source defining chord::RingPageHtml() as the bytes of IN (the ring page),
# so the page ships inside chord-node. Run by the build: cmake -DIN=... -DOUT=... -P this.
file(READ "${IN}" content HEX)
string(LENGTH "${content}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${content}")
file(WRITE "${OUT}"
  "// Generated from ${IN} by embed_file.cmake; do not edit.\n"
  "#include \"node/http/ring_page.h\"\n\n"
  "namespace chord {\nnamespace {\n"
  "// unsigned: bytes of UTF-8 text from 0x80 up do not fit a (signed) char initializer.\n"
  "const unsigned char kPage[] = {${bytes} 0};\n}  // namespace\n\n"
  "std::string_view RingPageHtml() {\n"
  "  return std::string_view(reinterpret_cast<const char*>(kPage), ${size});\n}\n\n"
  "}  // namespace chord\n")
