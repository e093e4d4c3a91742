//===- llmc-opt.cpp - mlir-opt with the llmc dialects and passes ----------===//
#include "compiler/Pipeline.h"
#include "dialects/llmc/LlmcDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  // First: llmc-rematerialize with the memory planner, which the generated
  // registration (no planner) then leaves in place.
  llmc::registerRematerializeWithPlanner();
  mlir::llmc::registerLlmcPasses();
  llmc::registerTrainingPipeline();

  mlir::DialectRegistry registry;
  registry.insert<mlir::llmc::LlmcDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "llmc optimizer driver\n", registry));
}
