//===- TrainingUtils.cpp - Helpers of the training-IR passes --------------===//
#include "passes/TrainingUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::llmc;

StringRef mlir::llmc::paramName(func::FuncOp func, unsigned i) {
  if (auto name = func.getArgAttrOfType<StringAttr>(i, "llmc.param"))
    return name.getValue();
  return "";
}

bool mlir::llmc::isTrainable(func::FuncOp func, unsigned i) {
  return func.getArgAttr(i, "llmc.param") &&
         !func.getArgAttr(i, "llmc.frozen") &&
         isa<FloatType>(getElementTypeOrSelf(func.getArgument(i).getType()));
}

StringRef mlir::llmc::outputName(func::FuncOp func, unsigned i) {
  if (auto name = func.getResultAttrOfType<StringAttr>(i, "llmc.output"))
    return name.getValue();
  return "";
}

FailureOr<func::FuncOp> mlir::llmc::lookupFunction(ModuleOp module,
                                                   StringRef name,
                                                   StringRef pass,
                                                   StringRef hint) {
  if (auto func = module.lookupSymbol<func::FuncOp>(name))
    return func;
  return module.emitError()
         << pass << ": the module has no func.func @" << name << "; " << hint;
}

void mlir::llmc::setResults(func::FuncOp func, ValueRange values,
                            ArrayRef<DictionaryAttr> attrs) {
  Operation *ret = func.getBody().front().getTerminator();
  ret->setOperands(values);
  func.setFunctionType(FunctionType::get(
      func.getContext(), func.getArgumentTypes(), TypeRange(values)));
  func.setAllResultAttrs(attrs);
}

BlockArgument mlir::llmc::appendArgument(func::FuncOp func, Type type,
                                         DictionaryAttr attrs, Location loc) {
  unsigned index = func.getNumArguments();
  func.insertArgument(index, type, attrs, loc);
  return func.getArgument(index);
}
