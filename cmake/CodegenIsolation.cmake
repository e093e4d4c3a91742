#===- CodegenIsolation.cmake - codegen never links the evaluator ----------===#
#
# Codegen stands alone (issue 11): LLMCCodegen must not link the reference
# evaluator (LLMCEval), directly or transitively; what both need is in
# LLMCCommon. Configure fails if that changes, and the transitive link list
# is written to codegen-links.txt for test/check-codegen-alone.sh, which
# also checks includes and symbols. Uses llmc_collect_links
# (RuntimeIsolation.cmake).
#
#===------------------------------------------------------------------------===#
set(_llmc_codegen_links)
llmc_collect_links(LLMCCodegen _llmc_codegen_links)
if("LLMCEval" IN_LIST _llmc_codegen_links)
  message(FATAL_ERROR "LLMCCodegen links LLMCEval: codegen must not depend "
    "on the reference evaluator; move what both need to compiler/common/ "
    "(see docs/codegen.md)")
endif()
list(JOIN _llmc_codegen_links "\n" _llmc_codegen_links_text)
file(WRITE ${CMAKE_BINARY_DIR}/codegen-links.txt "${_llmc_codegen_links_text}\n")
