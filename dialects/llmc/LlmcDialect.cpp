//===- LlmcDialect.cpp - The llmc graph dialect ---------------------------===//
#include "dialects/llmc/LlmcDialect.h"
#include "dialects/llmc/LlmcOps.h"

using namespace mlir;
using namespace mlir::llmc;

#include "dialects/llmc/LlmcDialect.cpp.inc"
#include "dialects/llmc/LlmcEnums.cpp.inc"

void LlmcDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/llmc/LlmcOps.cpp.inc"
      >();
}

Operation *LlmcDialect::materializeConstant(OpBuilder &builder,
                                            Attribute value, Type type,
                                            Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, type, elements);
}

#include "dialects/llmc/LlmcInterfaces.cpp.inc"
