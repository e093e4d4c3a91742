// RUN: llmc-opt %s --split-input-file --verify-diagnostics

// Every verifier error of llmc.kernel and llmc.yield.

func.func @yield_type(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'llmc.kernel' op yield operand #0 has type 'tensor<8xf32>' but result #0 has type 'tensor<4xf32>'}}
  %0 = llmc.kernel -> (tensor<4xf32>) {
    %1 = llmc.neg %a : tensor<8xf32>
    llmc.yield %1 : tensor<8xf32>
  }
  return %a : tensor<8xf32>
}

// -----

func.func @yield_count(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'llmc.kernel' op yields 1 values for 2 results}}
  %0:2 = llmc.kernel -> (tensor<8xf32>, tensor<8xf32>) {
    %1 = llmc.neg %a : tensor<8xf32>
    llmc.yield %1 : tensor<8xf32>
  }
  return %a : tensor<8xf32>
}

// -----

func.func @empty(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'llmc.kernel' op holds no op: a group launches something}}
  %0 = llmc.kernel -> (tensor<8xf32>) {
    llmc.yield %a : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}

// -----

func.func @block_argument(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'llmc.kernel' op body takes no block arguments, it has 1}}
  %0 = "llmc.kernel"() ({
  ^bb0(%x: tensor<8xf32>):
    %1 = llmc.neg %x : tensor<8xf32>
    llmc.yield %1 : tensor<8xf32>
  }) : () -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @no_yield(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'llmc.kernel' op body must end in llmc.yield}}
  %0 = "llmc.kernel"() ({
    %1 = llmc.neg %a : tensor<8xf32>
    func.return %1 : tensor<8xf32>
  }) : () -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @in_place_size(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'llmc.kernel' op in_place has 2 entries for 1 results}}
  %0 = llmc.kernel -> (tensor<8xf32>) attributes {in_place = array<i64: 0, -1>} {
    %1 = llmc.neg %a : tensor<8xf32>
    llmc.yield %1 : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}

// -----

func.func @in_place_entry(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'llmc.kernel' op in_place entry -2 is neither an argument index nor -1}}
  %0 = llmc.kernel -> (tensor<8xf32>) attributes {in_place = array<i64: -2>} {
    %1 = llmc.neg %a : tensor<8xf32>
    llmc.yield %1 : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}

// -----

func.func @yield_outside(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'llmc.yield' op expects parent op 'llmc.kernel'}}
  llmc.yield %a : tensor<8xf32>
  return %a : tensor<8xf32>
}

// -----

func.func @overwrites_size(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'llmc.kernel' op llmc.overwrites has 2 entries for 1 results}}
  %0 = llmc.kernel -> (tensor<8xf32>) attributes {llmc.overwrites = array<i64: 0, -1>} {
    %1 = llmc.neg %a : tensor<8xf32>
    llmc.yield %1 : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}

// -----

func.func @overwrites_entry(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'llmc.kernel' op llmc.overwrites entry 1 is neither one of the group's 1 inputs nor -1}}
  %0 = llmc.kernel -> (tensor<8xf32>) attributes {llmc.overwrites = array<i64: 1>} {
    %1 = llmc.neg %a : tensor<8xf32>
    llmc.yield %1 : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}

// -----

func.func @overwrites_bytes(%a: tensor<8xbf16>) -> tensor<8xf32> {
  // expected-error @+1 {{'llmc.kernel' op result #0 ('tensor<8xf32>') cannot overwrite input #0 ('tensor<8xbf16>'): their sizes differ}}
  %0 = llmc.kernel -> (tensor<8xf32>) attributes {llmc.overwrites = array<i64: 0>} {
    %1 = llmc.cast %a : tensor<8xbf16> -> tensor<8xf32>
    llmc.yield %1 : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}
