// RUN: llmc-opt %s --llmc-raise-cross-entropy --split-input-file | FileCheck %s

// F.cross_entropy(x, t, ignore_index=-100) as PyTorch decomposes it.
// CHECK-LABEL: func.func @masked_mean
// CHECK-SAME: (%[[X:.+]]: tensor<30x512xf32>, %[[T:.+]]: tensor<30xi64>)
// CHECK: %[[L:.+]] = llmc.cross_entropy mean %[[X]], %[[T]] : (tensor<30x512xf32>, tensor<30xi64>) -> tensor<f32>
// CHECK-NOT: llmc.gather_elements
// CHECK: return %[[L]]
func.func @masked_mean(%x: tensor<30x512xf32>, %t: tensor<30xi64>) -> tensor<f32> {
  %ii = llmc.constant dense<-100> : tensor<i64>
  %izero = llmc.constant dense<0> : tensor<i64>
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %lp = llmc.log_softmax %x : tensor<30x512xf32>
  %valid = llmc.compare ne, %t, %ii : (tensor<30xi64>, tensor<i64>) -> tensor<30xi1>
  %ts = llmc.where %valid, %t, %izero : (tensor<30xi1>, tensor<30xi64>, tensor<i64>) -> tensor<30xi64>
  %ti = llmc.reshape %ts : tensor<30xi64> -> tensor<30x1xi64>
  %g = llmc.gather_elements %lp, %ti axis 1 : (tensor<30x512xf32>, tensor<30x1xi64>) -> tensor<30x1xf32>
  %g1 = llmc.reshape %g : tensor<30x1xf32> -> tensor<30xf32>
  %n = llmc.neg %g1 : tensor<30xf32>
  %l = llmc.where %valid, %n, %zero : (tensor<30xi1>, tensor<30xf32>, tensor<f32>) -> tensor<30xf32>
  %sum = llmc.reduce_sum %l axes [0] : (tensor<30xf32>) -> tensor<f32>
  %vf = llmc.cast %valid : tensor<30xi1> -> tensor<30xf32>
  %cnt = llmc.reduce_sum %vf axes [0] : (tensor<30xf32>) -> tensor<f32>
  %loss = llmc.div %sum, %cnt : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Another ignore index, written (ii != t), and the count cast after the sum.
// CHECK-LABEL: func.func @masked_mean_other_index
// CHECK: llmc.cross_entropy mean %{{[^ ]+}}, %{{[^ ]+}} {ignore_index = 0 : i64} : (tensor<2x15x64xf32>, tensor<2x15xi64>) -> tensor<f32>
func.func @masked_mean_other_index(%x: tensor<2x15x64xf32>, %t: tensor<2x15xi64>) -> tensor<f32> {
  %ii = llmc.constant dense<0> : tensor<i64>
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %lp = llmc.log_softmax %x {axis = 2 : i64} : tensor<2x15x64xf32>
  %valid = llmc.compare ne, %ii, %t : (tensor<i64>, tensor<2x15xi64>) -> tensor<2x15xi1>
  %ts = llmc.where %valid, %t, %ii : (tensor<2x15xi1>, tensor<2x15xi64>, tensor<i64>) -> tensor<2x15xi64>
  %ti = llmc.reshape %ts : tensor<2x15xi64> -> tensor<2x15x1xi64>
  %g = llmc.gather_elements %lp, %ti axis 2 : (tensor<2x15x64xf32>, tensor<2x15x1xi64>) -> tensor<2x15x1xf32>
  %g1 = llmc.reshape %g : tensor<2x15x1xf32> -> tensor<2x15xf32>
  %n = llmc.neg %g1 : tensor<2x15xf32>
  %l = llmc.where %valid, %n, %zero : (tensor<2x15xi1>, tensor<2x15xf32>, tensor<f32>) -> tensor<2x15xf32>
  %sum = llmc.reduce_sum %l axes [0, 1] : (tensor<2x15xf32>) -> tensor<f32>
  %vi = llmc.cast %valid : tensor<2x15xi1> -> tensor<2x15xi64>
  %cnti = llmc.reduce_sum %vi axes [0, 1] : (tensor<2x15xi64>) -> tensor<i64>
  %cnt = llmc.cast %cnti : tensor<i64> -> tensor<f32>
  %loss = llmc.div %sum, %cnt : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// No ignore mask: mean of -log p[t], the negation as a multiply by -1.
// CHECK-LABEL: func.func @unmasked_mean
// CHECK: llmc.cross_entropy mean %{{[^ ]+}}, %{{[^ ]+}} : (tensor<30x512xf32>, tensor<30xi64>) -> tensor<f32>
func.func @unmasked_mean(%x: tensor<30x512xf32>, %t: tensor<30xi64>) -> tensor<f32> {
  %m1 = llmc.constant dense<-1.0> : tensor<f32>
  %lp = llmc.log_softmax %x : tensor<30x512xf32>
  %ti = llmc.reshape %t : tensor<30xi64> -> tensor<30x1xi64>
  %g = llmc.gather_elements %lp, %ti axis 1 : (tensor<30x512xf32>, tensor<30x1xi64>) -> tensor<30x1xf32>
  %g1 = llmc.reshape %g : tensor<30x1xf32> -> tensor<30xf32>
  %n = llmc.mul %g1, %m1 : (tensor<30xf32>, tensor<f32>) -> tensor<30xf32>
  %loss = llmc.reduce_mean %n axes [0] : (tensor<30xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Sum reduction with the ignore mask.
// CHECK-LABEL: func.func @masked_sum
// CHECK: llmc.cross_entropy sum %{{[^ ]+}}, %{{[^ ]+}} : (tensor<30x512xf32>, tensor<30xi64>) -> tensor<f32>
func.func @masked_sum(%x: tensor<30x512xf32>, %t: tensor<30xi64>) -> tensor<f32> {
  %ii = llmc.constant dense<-100> : tensor<i64>
  %izero = llmc.constant dense<0> : tensor<i64>
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %lp = llmc.log_softmax %x : tensor<30x512xf32>
  %valid = llmc.compare ne, %t, %ii : (tensor<30xi64>, tensor<i64>) -> tensor<30xi1>
  %ts = llmc.where %valid, %t, %izero : (tensor<30xi1>, tensor<30xi64>, tensor<i64>) -> tensor<30xi64>
  %ti = llmc.reshape %ts : tensor<30xi64> -> tensor<30x1xi64>
  %g = llmc.gather_elements %lp, %ti axis 1 : (tensor<30x512xf32>, tensor<30x1xi64>) -> tensor<30x1xf32>
  %g1 = llmc.reshape %g : tensor<30x1xf32> -> tensor<30xf32>
  %n = llmc.neg %g1 : tensor<30xf32>
  %l = llmc.where %valid, %n, %zero : (tensor<30xi1>, tensor<30xf32>, tensor<f32>) -> tensor<30xf32>
  %sum = llmc.reduce_sum %l axes [0] : (tensor<30xf32>) -> tensor<f32>
  return %sum : tensor<f32>
}

// -----

// The HF causal-LM shift stays as slices in front of the raised loss.
// CHECK-LABEL: func.func @hf_shift
// CHECK: %[[XS:.+]] = llmc.slice %{{[^ ]+}} starts [0, 0, 0] limits [2, 15, 64]
// CHECK: %[[TS:.+]] = llmc.slice %{{[^ ]+}} starts [0, 1] limits [2, 16]
// CHECK: %[[X2:.+]] = llmc.reshape %[[XS]]
// CHECK: %[[T2:.+]] = llmc.reshape %[[TS]]
// CHECK: llmc.cross_entropy mean %[[X2]], %[[T2]]
func.func @hf_shift(%logits: tensor<2x16x64xf32>, %tgt: tensor<2x16xi64>) -> tensor<f32> {
  %ii = llmc.constant dense<-100> : tensor<i64>
  %izero = llmc.constant dense<0> : tensor<i64>
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %xs = llmc.slice %logits starts [0, 0, 0] limits [2, 15, 64] strides [1, 1, 1] : (tensor<2x16x64xf32>) -> tensor<2x15x64xf32>
  %ts = llmc.slice %tgt starts [0, 1] limits [2, 16] strides [1, 1] : (tensor<2x16xi64>) -> tensor<2x15xi64>
  %x = llmc.reshape %xs : tensor<2x15x64xf32> -> tensor<30x64xf32>
  %t = llmc.reshape %ts : tensor<2x15xi64> -> tensor<30xi64>
  %lp = llmc.log_softmax %x : tensor<30x64xf32>
  %valid = llmc.compare ne, %t, %ii : (tensor<30xi64>, tensor<i64>) -> tensor<30xi1>
  %tsafe = llmc.where %valid, %t, %izero : (tensor<30xi1>, tensor<30xi64>, tensor<i64>) -> tensor<30xi64>
  %ti = llmc.reshape %tsafe : tensor<30xi64> -> tensor<30x1xi64>
  %g = llmc.gather_elements %lp, %ti axis 1 : (tensor<30x64xf32>, tensor<30x1xi64>) -> tensor<30x1xf32>
  %g1 = llmc.reshape %g : tensor<30x1xf32> -> tensor<30xf32>
  %n = llmc.neg %g1 : tensor<30xf32>
  %l = llmc.where %valid, %n, %zero : (tensor<30xi1>, tensor<30xf32>, tensor<f32>) -> tensor<30xf32>
  %sum = llmc.reduce_sum %l axes [0] : (tensor<30xf32>) -> tensor<f32>
  %vf = llmc.cast %valid : tensor<30xi1> -> tensor<30xf32>
  %cnt = llmc.reduce_sum %vf axes [0] : (tensor<30xf32>) -> tensor<f32>
  %loss = llmc.div %sum, %cnt : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Near miss: a masked sum divided by the number of all positions is not
// the mean over the valid ones; the sum alone is raised, the division stays.
// CHECK-LABEL: func.func @masked_sum_over_all
// CHECK-NOT: llmc.cross_entropy mean
// CHECK: %[[S:.+]] = llmc.cross_entropy sum
// CHECK: llmc.div %[[S]]
func.func @masked_sum_over_all(%x: tensor<30x512xf32>, %t: tensor<30xi64>) -> tensor<f32> {
  %ii = llmc.constant dense<-100> : tensor<i64>
  %izero = llmc.constant dense<0> : tensor<i64>
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %n30 = llmc.constant dense<30.0> : tensor<f32>
  %lp = llmc.log_softmax %x : tensor<30x512xf32>
  %valid = llmc.compare ne, %t, %ii : (tensor<30xi64>, tensor<i64>) -> tensor<30xi1>
  %ts = llmc.where %valid, %t, %izero : (tensor<30xi1>, tensor<30xi64>, tensor<i64>) -> tensor<30xi64>
  %ti = llmc.reshape %ts : tensor<30xi64> -> tensor<30x1xi64>
  %g = llmc.gather_elements %lp, %ti axis 1 : (tensor<30x512xf32>, tensor<30x1xi64>) -> tensor<30x1xf32>
  %g1 = llmc.reshape %g : tensor<30x1xf32> -> tensor<30xf32>
  %n = llmc.neg %g1 : tensor<30xf32>
  %l = llmc.where %valid, %n, %zero : (tensor<30xi1>, tensor<30xf32>, tensor<f32>) -> tensor<30xf32>
  %sum = llmc.reduce_sum %l axes [0] : (tensor<30xf32>) -> tensor<f32>
  %loss = llmc.div %sum, %n30 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Near miss: log_softmax over the batch axis.
// CHECK-LABEL: func.func @wrong_axis
// CHECK-NOT: llmc.cross_entropy
func.func @wrong_axis(%x: tensor<30x512xf32>, %t: tensor<30xi64>) -> tensor<f32> {
  %lp = llmc.log_softmax %x {axis = 0 : i64} : tensor<30x512xf32>
  %ti = llmc.reshape %t : tensor<30xi64> -> tensor<30x1xi64>
  %g = llmc.gather_elements %lp, %ti axis 1 : (tensor<30x512xf32>, tensor<30x1xi64>) -> tensor<30x1xf32>
  %g1 = llmc.reshape %g : tensor<30x1xf32> -> tensor<30xf32>
  %n = llmc.neg %g1 : tensor<30xf32>
  %loss = llmc.reduce_mean %n axes [0] : (tensor<30xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Near miss: the loss is not negated (mean log-likelihood).
// CHECK-LABEL: func.func @not_negated
// CHECK-NOT: llmc.cross_entropy
func.func @not_negated(%x: tensor<30x512xf32>, %t: tensor<30xi64>) -> tensor<f32> {
  %lp = llmc.log_softmax %x : tensor<30x512xf32>
  %ti = llmc.reshape %t : tensor<30xi64> -> tensor<30x1xi64>
  %g = llmc.gather_elements %lp, %ti axis 1 : (tensor<30x512xf32>, tensor<30x1xi64>) -> tensor<30x1xf32>
  %g1 = llmc.reshape %g : tensor<30x1xf32> -> tensor<30xf32>
  %loss = llmc.reduce_mean %g1 axes [0] : (tensor<30xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Near miss: the log-probabilities are also returned.
// CHECK-LABEL: func.func @logprobs_other_use
// CHECK-NOT: llmc.cross_entropy
func.func @logprobs_other_use(%x: tensor<30x512xf32>, %t: tensor<30xi64>) -> (tensor<f32>, tensor<30x512xf32>) {
  %lp = llmc.log_softmax %x : tensor<30x512xf32>
  %ti = llmc.reshape %t : tensor<30xi64> -> tensor<30x1xi64>
  %g = llmc.gather_elements %lp, %ti axis 1 : (tensor<30x512xf32>, tensor<30x1xi64>) -> tensor<30x1xf32>
  %g1 = llmc.reshape %g : tensor<30x1xf32> -> tensor<30xf32>
  %n = llmc.neg %g1 : tensor<30xf32>
  %loss = llmc.reduce_mean %n axes [0] : (tensor<30xf32>) -> tensor<f32>
  return %loss, %lp : tensor<f32>, tensor<30x512xf32>
}

// -----

// Near miss: the mask tests another tensor than the gathered targets.
// CHECK-LABEL: func.func @mask_of_other_targets
// CHECK-NOT: llmc.cross_entropy
func.func @mask_of_other_targets(%x: tensor<30x512xf32>, %t: tensor<30xi64>, %u: tensor<30xi64>) -> tensor<f32> {
  %ii = llmc.constant dense<-100> : tensor<i64>
  %izero = llmc.constant dense<0> : tensor<i64>
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %lp = llmc.log_softmax %x : tensor<30x512xf32>
  %valid = llmc.compare ne, %u, %ii : (tensor<30xi64>, tensor<i64>) -> tensor<30xi1>
  %ts = llmc.where %valid, %t, %izero : (tensor<30xi1>, tensor<30xi64>, tensor<i64>) -> tensor<30xi64>
  %ti = llmc.reshape %ts : tensor<30xi64> -> tensor<30x1xi64>
  %g = llmc.gather_elements %lp, %ti axis 1 : (tensor<30x512xf32>, tensor<30x1xi64>) -> tensor<30x1xf32>
  %g1 = llmc.reshape %g : tensor<30x1xf32> -> tensor<30xf32>
  %n = llmc.neg %g1 : tensor<30xf32>
  %l = llmc.where %valid, %n, %zero : (tensor<30xi1>, tensor<30xf32>, tensor<f32>) -> tensor<30xf32>
  %sum = llmc.reduce_sum %l axes [0] : (tensor<30xf32>) -> tensor<f32>
  %vf = llmc.cast %valid : tensor<30xi1> -> tensor<30xf32>
  %cnt = llmc.reduce_sum %vf axes [0] : (tensor<30xf32>) -> tensor<f32>
  %loss = llmc.div %sum, %cnt : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %loss : tensor<f32>
}
