// The live ring page served at / by the HTTP API: one self-contained HTML file
// (node/http/ring_page.html, inline script and style, no external resources) compiled into the
// binary by CMake (node/http/embed_file.cmake). Any thread.
#ifndef CHORD_NODE_HTTP_RING_PAGE_H_
#define CHORD_NODE_HTTP_RING_PAGE_H_

#include <string_view>

namespace chord {

std::string_view RingPageHtml();

}  // namespace chord

#endif  // CHORD_NODE_HTTP_RING_PAGE_H_
