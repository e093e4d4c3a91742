func.func private @helper(tensor<2xf32>) -> tensor<2xf32>
func.func @forward(%x: tensor<2xf32> {llmc.input = "x"}) -> (tensor<2xf32> {llmc.output = "y"}) {
  %y = func.call @helper(%x) : (tensor<2xf32>) -> tensor<2xf32> loc("call_node")
  return %y : tensor<2xf32>
}
