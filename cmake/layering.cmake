# Dependencies run downward only: kernels/ is math, training/ is what Cleave
# trains, and neither may link an actor library or CAF's networking. Checked
# at configure time over every library a target links, directly or through
# others, so a stray link fails the build before it compiles.

set(CLEAVE_ACTOR_LIBRARIES cleave_ps cleave_engine cleave_planner cleave_device cleave_detector
    cleave_supervisor cleave_transport cleave_churn cleave_console CAF::io)

# Every library `target` links, transitively, into `out`.
function(cleave_linked_closure target out)
  set(seen "")
  set(queue ${target})
  while(queue)
    list(POP_FRONT queue current)
    if(NOT TARGET ${current})
      continue()
    endif()
    get_target_property(links ${current} INTERFACE_LINK_LIBRARIES)
    get_target_property(direct ${current} LINK_LIBRARIES)
    foreach(lib IN LISTS links direct)
      if(lib AND NOT lib IN_LIST seen)
        list(APPEND seen ${lib})
        list(APPEND queue ${lib})
      endif()
    endforeach()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

function(cleave_check_layering)
  foreach(target ${ARGN})
    cleave_linked_closure(${target} closure)
    foreach(lib IN LISTS closure)
      if(lib IN_LIST CLEAVE_ACTOR_LIBRARIES)
        message(FATAL_ERROR "layering: ${target} links ${lib}, but kernels/ and training/ may "
                            "depend only on kernels/, schema/ and CAF's core (see docs/ARCHITECTURE.md)")
      endif()
    endforeach()
  endforeach()
endfunction()

# Each folder of actors/ is one role: its actor, its protocol and the pure code
# it owns. A peer speaks to another role through that role's protocol header
# (actors/<role>/<role>_protocol.hpp) or uses its pure code; it never includes
# another folder's actor implementation header (*_actor.hpp), which would tie it
# to that actor's state and build. cmd/ is the wiring and may.
#
# Checked at configure time, and run as a script (cmake
# -DCLEAVE_SOURCE_DIR=... -P cmake/layering.cmake) by the cleave_actor_includes
# target before every build of the binary, so an include added after
# configuration fails the build too.

function(cleave_check_actor_includes source_dir)
  file(GLOB_RECURSE sources RELATIVE ${source_dir}
       ${source_dir}/actors/*.hpp ${source_dir}/actors/*.cpp)
  set(violations "")
  foreach(file IN LISTS sources)
    string(REGEX MATCH "^actors/([^/]+)/" _ ${file})
    set(own ${CMAKE_MATCH_1})
    file(STRINGS ${source_dir}/${file} includes
         REGEX "^[ \t]*#[ \t]*include[ \t]*\"actors/[^/\"]+/([^\"]*/)?[^/\"]*_actor\\.hpp\"")
    foreach(line IN LISTS includes)
      string(REGEX MATCH "\"actors/([^/\"]+)/" _ "${line}")
      if(NOT CMAKE_MATCH_1 STREQUAL own)
        string(STRIP "${line}" line)
        list(APPEND violations "  ${file}: ${line}")
      endif()
    endforeach()
  endforeach()
  if(violations)
    list(JOIN violations "\n" listed)
    message(FATAL_ERROR "layering: a folder of actors/ includes another folder's actor; use that "
                        "role's *_protocol.hpp or its pure code (docs/ARCHITECTURE.md):\n${listed}")
  endif()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE)
  cleave_check_actor_includes(${CLEAVE_SOURCE_DIR})
endif()
