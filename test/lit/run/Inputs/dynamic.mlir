func.func @forward(%x: tensor<?x2xf32> {llmc.input = "x"}) -> (tensor<?x2xf32> {llmc.output = "y"}) {
  %y = llmc.exp %x : tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}
