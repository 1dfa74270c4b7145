#pragma once
// The page `GET /` serves: one self-contained HTML document (its CSS and JS
// inline, no external address of any kind) that polls /api/state every
// second and draws the run. Its sources are actors/console/page/; the build
// embeds them (actors/CMakeLists.txt), so the binary needs no files at run time.

#include <string_view>

namespace cleave {

inline constexpr std::string_view console_page_content_type = "text/html; charset=utf-8";

std::string_view console_page();

}  // namespace cleave
