//===- PlanAttention.h - Attention steps: checks and cuDNN's view -*- C++ -*-===//
//
// What validatePlan checks of an AttentionStep (Plan.h) and how the step
// maps onto cuDNN's description (CudnnAttention.h): kept out of Plan.cpp so
// that the plan's core does not grow with each backend.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_PLANATTENTION_H
#define LLMC_RUNTIME_PLANATTENTION_H

#include "runtime/CudnnAttention.h"
#include "runtime/Plan.h"

namespace llmc {

/// cuDNN's description of the step (no pointers).
CudnnAttentionDesc attentionDesc(const AttentionStep &step);

/// The views a step of this direction reads and writes, with their roles
/// ("q", "stats", ...), in the order of AttentionStep's fields.
std::vector<std::pair<const char *, const AttentionView *>>
attentionViews(const AttentionStep &step);

/// Every view names a buffer of the right type (stats f32, the rest the
/// step's dtype) that holds the view's extent; the sizes and strides are
/// ones cuDNN's fused engines take (checkSupported). Needs no GPU.
Status checkAttentionStep(const Plan &plan, const AttentionStep &step);

} // namespace llmc

#endif // LLMC_RUNTIME_PLANATTENTION_H
