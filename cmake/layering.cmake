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
