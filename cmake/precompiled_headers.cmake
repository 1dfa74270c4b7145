# The third-party headers most translation units include (CAF, Eigen,
# spdlog, JSON) are parsed once, into cleave_pch, and every target compiled
# with the same flags reuses that precompiled header: 2.6-5.4 s less for
# each of the files measured (11.6 s instead of 14.6 s for
# actors/ps/engine/tile_check.cpp, 26.8 s instead of 32.1 s for
# tests/runtime_test.cpp). A header precompiled under other flags would be
# refused by the compiler, and the file then parses the headers as text:
# slower, never wrong. -DCLEAVE_PCH=OFF turns it off.

include(layering)  # cleave_linked_closure

function(cleave_add_pch)
  add_library(cleave_pch STATIC ${CMAKE_SOURCE_DIR}/cmake/pch.cpp)
  # The same links, so the same definitions and flags, as the targets that reuse it.
  target_link_libraries(cleave_pch PRIVATE CAF::core Eigen3::Eigen spdlog::spdlog
                        nlohmann_json::nlohmann_json OpenMP::OpenMP_CXX)
  target_precompile_headers(cleave_pch PRIVATE
    <algorithm> <chrono> <cstdint> <functional> <map> <memory> <optional> <string> <unordered_map> <vector>
    <caf/all.hpp> <Eigen/Core> <spdlog/spdlog.h> <nlohmann/json.hpp>)
endfunction()

# Every C++ target of the source tree that links spdlog and OpenMP (the
# flags cleave_pch was built with) reuses cleave_pch, but for those named.
function(cleave_reuse_pch)
  set(except ${ARGN})
  set(dirs ${CMAKE_SOURCE_DIR})
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${subdirs})
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t IN LISTS targets)
      get_target_property(type ${t} TYPE)
      if(t STREQUAL cleave_pch OR t IN_LIST except
         OR NOT type MATCHES "^(STATIC_LIBRARY|EXECUTABLE|OBJECT_LIBRARY)$")
        continue()
      endif()
      cleave_linked_closure(${t} links)
      if("spdlog::spdlog" IN_LIST links AND "OpenMP::OpenMP_CXX" IN_LIST links)
        target_precompile_headers(${t} REUSE_FROM cleave_pch)
      endif()
    endforeach()
  endwhile()
endfunction()
