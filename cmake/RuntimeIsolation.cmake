#===- RuntimeIsolation.cmake - the runtime never links MLIR or LLVM -------===#
#
# The runtime ships next to a bundle on machines without LLVM. Configure fails
# if any runtime target links (directly or transitively) an MLIR/LLVM library.
#
#===------------------------------------------------------------------------===#
function(llmc_collect_links target out_var)
  set(seen ${${out_var}})
  get_target_property(libs ${target} LINK_LIBRARIES)
  get_target_property(ilibs ${target} INTERFACE_LINK_LIBRARIES)
  foreach(lib IN LISTS libs ilibs)
    if(NOT lib OR lib MATCHES "-NOTFOUND$" OR lib IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${lib})
    if(TARGET ${lib})
      llmc_collect_links(${lib} seen)
    endif()
  endforeach()
  set(${out_var} ${seen} PARENT_SCOPE)
endfunction()

get_property(_llmc_runtime_targets GLOBAL PROPERTY LLMC_RUNTIME_TARGETS)
foreach(t IN LISTS _llmc_runtime_targets)
  set(_links)
  llmc_collect_links(${t} _links)
  foreach(lib IN LISTS _links)
    if(lib MATCHES "(^|[/:])(MLIR|LLVM|libMLIR|libLLVM)")
      message(FATAL_ERROR "runtime target '${t}' links '${lib}': the runtime "
        "must not depend on MLIR or LLVM (see docs/architecture.md)")
    endif()
  endforeach()
endforeach()
