#===- StaticLLVM.cmake - link MLIR tools without libLLVM.so ---------------===#
#
# Debian's MLIR 19 package exports its static MLIR libraries with "LLVM" (the
# shared libLLVM.so) in their link interfaces, and LLVMSupport with the shared
# zlib/zstd/z3. A tool linked that way needs LLVM installed wherever it runs.
# We rewrite those interfaces once, after find_package(MLIR):
#   "LLVM"                 -> the static component libraries MLIR needs
#   zstd/zlib shared       -> the static archives
#   libz3.so               -> dropped (only LLVM's constraint solver uses it)
#
#===------------------------------------------------------------------------===#
set(LLVM_LINK_LLVM_DYLIB OFF)

llvm_map_components_to_libnames(LLMC_LLVM_STATIC_LIBS
  Support Demangle Core BinaryFormat TargetParser Remarks BitstreamReader
  AsmParser)

find_library(LLMC_ZSTD_STATIC libzstd.a REQUIRED)
find_library(LLMC_ZLIB_STATIC libz.a REQUIRED)

function(llmc_rewrite_link_interface target)
  get_target_property(libs ${target} INTERFACE_LINK_LIBRARIES)
  if(NOT libs)
    return()
  endif()
  set(out)
  foreach(lib IN LISTS libs)
    if(lib STREQUAL "LLVM")
      list(APPEND out ${LLMC_LLVM_STATIC_LIBS})
    elseif(lib MATCHES "zstd::libzstd_shared")
      list(APPEND out ${LLMC_ZSTD_STATIC})
    elseif(lib MATCHES "ZLIB::ZLIB")
      list(APPEND out ${LLMC_ZLIB_STATIC})
    elseif(lib MATCHES "libz3")
      # dropped on purpose, see the file header
    else()
      list(APPEND out ${lib})
    endif()
  endforeach()
  set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${out}")
endfunction()

get_property(_llmc_imported DIRECTORY PROPERTY IMPORTED_TARGETS)
foreach(t IN LISTS _llmc_imported)
  get_target_property(_type ${t} TYPE)
  if(_type STREQUAL "STATIC_LIBRARY" OR _type STREQUAL "INTERFACE_LIBRARY")
    llmc_rewrite_link_interface(${t})
  endif()
endforeach()
