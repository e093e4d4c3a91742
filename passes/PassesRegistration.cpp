//===- PassesRegistration.cpp - Anchor of the llmc pass library -----------===//
//
// Pass bodies live one per file; this file only gives the library a
// translation unit that sees the generated declarations.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
