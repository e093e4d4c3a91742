//===- GradCheckOnnxTest.cpp - Gradients of decomposed ONNX imports -------===//
//
// The ONNX ops that the importer builds from several llmc ops
// (OnnxDecomposedOps.cpp, LayerNormalization's statistics) are
// differentiated through their parts. Each test builds a one-node f64 ONNX
// model with the protobuf classes, imports it, ends it in
// loss = ReduceSum(y * r), makes its float inputs trainable and compares
// llmc-autodiff's gradients with central differences.
//
//===----------------------------------------------------------------------===//
#include "GradCheckUtils.h"

#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/onnx.pb.h"

#include "llvm/Support/raw_ostream.h"

#include <functional>

using namespace llmc;
using namespace llmc::test;

namespace {

constexpr int kDouble = 11, kInt64 = 7;

void addInput(onnx::GraphProto &g, const std::string &name,
              const std::vector<int64_t> &shape) {
  auto *in = g.add_input();
  in->set_name(name);
  auto *tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(kDouble);
  auto *s = tt->mutable_shape();
  for (int64_t d : shape)
    s->add_dim()->set_dim_value(d);
}

struct OnnxCase {
  std::string op;
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputs;
  std::vector<int64_t> yShape;
  /// Integer initializers read by the node after the inputs (axes, ...).
  std::vector<std::pair<std::string, std::vector<int64_t>>> ints;
  std::function<void(onnx::NodeProto &)> attrs = [](onnx::NodeProto &) {};
  /// Which node output is y (LayerNormalization's statistics).
  int output = 0;
  int outputs = 1;
  /// The node's inputs in order, when not the inputs then the ints.
  std::vector<std::string> nodeInputs = {};
};

void setInt(onnx::NodeProto &node, const std::string &name, int64_t v) {
  auto *a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void setFloat(onnx::NodeProto &node, const std::string &name, float v) {
  auto *a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

class GradCheckOnnx : public GradCheck {
protected:
  /// The imported @forward of `c`, its float inputs made parameters.
  std::string import(const OnnxCase &c) {
    onnx::ModelProto model;
    model.set_ir_version(8);
    auto *opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(18);
    auto &g = *model.mutable_graph();
    g.set_name("grad");
    auto &node = *g.add_node();
    node.set_op_type(c.op);
    node.set_name("n");
    for (const auto &[name, shape] : c.inputs) {
      addInput(g, name, shape);
      if (c.nodeInputs.empty())
        node.add_input(name);
    }
    for (const auto &[name, values] : c.ints) {
      auto *t = g.add_initializer();
      t->set_name(name);
      t->set_data_type(kInt64);
      t->add_dims(static_cast<int64_t>(values.size()));
      for (int64_t v : values)
        t->add_int64_data(v);
      if (c.nodeInputs.empty())
        node.add_input(name);
    }
    for (const std::string &name : c.nodeInputs)
      node.add_input(name);
    for (int i = 0; i < c.outputs; ++i)
      node.add_output(i == c.output ? "y" : "unused" + std::to_string(i));
    c.attrs(node);
    addInput(g, "r", c.yShape);
    auto &mul = *g.add_node();
    mul.set_op_type("Mul");
    mul.add_input("y");
    mul.add_input("r");
    mul.add_output("p");
    auto &sum = *g.add_node();
    sum.set_op_type("ReduceSum");
    sum.add_input("p");
    sum.add_output("loss");
    setInt(sum, "keepdims", 0);
    g.add_output()->set_name("loss");

    std::string bytes;
    model.SerializeToString(&bytes);
    auto module = importOnnxBuffer(bytes, "grad.onnx", {}, context);
    if (!module) {
      ADD_FAILURE() << "import failed";
      return "";
    }
    std::string ir;
    llvm::raw_string_ostream os(ir);
    module->print(os);
    for (const auto &[name, shape] : c.inputs) {
      std::string from = "{llmc.input = \"" + name + "\"}";
      size_t at = ir.find(from);
      if (at == std::string::npos) {
        ADD_FAILURE() << "no input '" << name << "' in\n" << ir;
        return "";
      }
      ir.replace(at, from.size(),
                 "{llmc.param = \"" + name +
                     "\", llmc.init_rule = \"zeros\"}");
    }
    return ir;
  }

  /// Runs the check; every element of every input is compared.
  void expectGradients(const OnnxCase &c, GradCheckOptions opt = {}) {
    std::string ir = import(c);
    ASSERT_FALSE(ir.empty());
    int64_t expected = 0;
    for (const auto &[name, shape] : c.inputs) {
      int64_t n = 1;
      for (int64_t d : shape)
        n *= d;
      expected += std::min<int64_t>(n, opt.maxPerParam);
    }
    EXPECT_EQ(check(ir, {}, opt), expected) << diagnostics << ir;
  }
};

TEST_F(GradCheckOnnx, LeakyRelu) {
  expectGradients({"LeakyRelu", {{"x", {3, 4}}}, {3, 4}, {},
                   [](onnx::NodeProto &n) { setFloat(n, "alpha", 0.2f); }});
}

TEST_F(GradCheckOnnx, PReluWithABroadcastSlope) {
  expectGradients({"PRelu", {{"x", {3, 4}}, {"s", {4}}}, {3, 4}});
}

TEST_F(GradCheckOnnx, HardSigmoidAndHardSwish) {
  // Over [-5, 5] both clamps are active for some elements.
  GradCheckOptions opt;
  opt.lo = -5, opt.hi = 5;
  expectGradients({"HardSigmoid", {{"x", {12}}}, {12}}, opt);
  expectGradients({"HardSwish", {{"x", {12}}}, {12}}, opt);
}

TEST_F(GradCheckOnnx, ExponentialAndSmoothActivations) {
  // Over [-4, 4] both branches of Elu, Selu and Celu are taken; Celu's
  // alpha 2 divides inside the exp.
  GradCheckOptions opt;
  opt.lo = -4, opt.hi = 4;
  expectGradients({"Elu", {{"x", {12}}}, {12}, {},
                   [](onnx::NodeProto &n) { setFloat(n, "alpha", 0.5f); }},
                  opt);
  expectGradients({"Selu", {{"x", {12}}}, {12}}, opt);
  expectGradients({"Celu", {{"x", {12}}}, {12}, {},
                   [](onnx::NodeProto &n) { setFloat(n, "alpha", 2.f); }},
                  opt);
  expectGradients({"Softplus", {{"x", {12}}}, {12}}, opt);
  expectGradients({"Softsign", {{"x", {12}}}, {12}}, opt);
}

TEST_F(GradCheckOnnx, ThresholdedReluAndShrink) {
  GradCheckOptions opt;
  opt.lo = -3, opt.hi = 3;
  expectGradients({"ThresholdedRelu", {{"x", {12}}}, {12}}, opt);
  expectGradients({"Shrink", {{"x", {12}}}, {12}, {},
                   [](onnx::NodeProto &n) {
                     setFloat(n, "lambd", 1.f);
                     setFloat(n, "bias", 0.5f);
                   }},
                  opt);
}

TEST_F(GradCheckOnnx, Einsum) {
  auto equation = [](const char *eq) {
    return [eq](onnx::NodeProto &n) {
      auto *a = n.add_attribute();
      a->set_name("equation");
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(eq);
    };
  };
  // Batch, free and contracted labels, in an order that needs transposes
  // on both sides and of the result.
  expectGradients({"Einsum", {{"a", {2, 3, 4}}, {"b", {4, 2, 5}}}, {5, 2, 3},
                   {}, equation("bik,kbj->jbi")});
  // A label summed on one side only; ellipsis dims free on one side.
  expectGradients({"Einsum", {{"a", {2, 1, 3, 2}}, {"b", {3, 4}}}, {2, 1, 4},
                   {}, equation("...ij,ik->...k")});
  // A batch dim of size 1 that broadcasts: b's gradient sums over it.
  expectGradients({"Einsum", {{"a", {2, 1, 2}}, {"b", {1, 2, 3}}}, {2, 1, 3},
                   {}, equation("...ij,...jk->...ik")});
  expectGradients({"Einsum", {{"a", {3, 4}}}, {4}, {}, equation("ij->j")});
}

TEST_F(GradCheckOnnx, Reductions) {
  for (const char *op :
       {"ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSumExp",
        "ReduceMin"})
    expectGradients({op, {{"x", {3, 4}}}, {3}, {{"axes", {1}}},
                     [](onnx::NodeProto &n) { setInt(n, "keepdims", 0); }});
  // log needs a positive sum.
  GradCheckOptions positive;
  positive.lo = 0.5, positive.hi = 2;
  expectGradients({"ReduceLogSum", {{"x", {3, 4}}}, {3, 1}, {{"axes", {-1}}}},
                  positive);
}

TEST_F(GradCheckOnnx, MeanWithBroadcasting) {
  expectGradients({"Mean", {{"a", {2, 3}}, {"b", {3}}, {"c", {2, 1}}}, {2, 3}});
}

TEST_F(GradCheckOnnx, Tile) {
  expectGradients({"Tile", {{"x", {2, 3}}}, {4, 9}, {{"repeats", {2, 3}}}});
}

TEST_F(GradCheckOnnx, CumSumEveryDirection) {
  for (int exclusive : {0, 1})
    for (int reverse : {0, 1})
      expectGradients({"CumSum", {{"x", {3, 4}}}, {3, 4}, {{"axis", {1}}},
                       [=](onnx::NodeProto &n) {
                         setInt(n, "exclusive", exclusive);
                         setInt(n, "reverse", reverse);
                       }});
}

TEST_F(GradCheckOnnx, WeightedLosses) {
  // Target 2 is ignored; the weights get gradients too.
  for (const char *op : {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"})
    for (const char *reduction : {"mean", "sum", "none"}) {
      OnnxCase c{op, {{"x", {4, 3}}, {"w", {3}}}, {}, {{"t", {0, 2, 1, 0}}}};
      if (std::string(reduction) == "none")
        c.yShape = {4};
      c.nodeInputs = {"x", "t", "w"};
      c.attrs = [=](onnx::NodeProto &n) {
        setInt(n, "ignore_index", 2);
        auto *a = n.add_attribute();
        a->set_name("reduction");
        a->set_type(onnx::AttributeProto::STRING);
        a->set_s(reduction);
      };
      GradCheckOptions positive; // weights > 0 keep the mean's divisor away from 0
      positive.lo = 0.5, positive.hi = 2;
      expectGradients(c, positive);
    }
}

TEST_F(GradCheckOnnx, LayerNormStatistics) {
  // Mean (output 1) and InvStdDev (output 2), each the loss's only path.
  for (int output : {1, 2}) {
    OnnxCase c{"LayerNormalization", {{"x", {3, 4}}, {"g", {4}}}, {3, 1}};
    c.output = output;
    c.outputs = 3;
    c.attrs = [](onnx::NodeProto &n) { setInt(n, "axis", 1); };
    // g reaches only output 0, which the loss does not read: its gradient
    // is zero, and compared as such.
    std::string ir = import(c);
    ASSERT_FALSE(ir.empty());
    EXPECT_EQ(check(ir), 12 + 4) << diagnostics << ir;
  }
}

} // namespace
