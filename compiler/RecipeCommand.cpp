//===- RecipeCommand.cpp - `llmc recipe`: named model graphs --------------===//
//
// Writes the JSON graph of a named model (gpt2, llama, bert) at a size, or
// with --summary its parameter and op counts. The graph is what
// `llmc import-json` reads; nothing is checked in, the recipe code is the
// source (frontends/json/recipes/).
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver.h"
#include "compiler/OutputFile.h"
#include "frontends/json/recipes/Recipes.h"

#include "llvm/Support/raw_ostream.h"

namespace llmc {

static const char *kUsage =
    "usage: llmc recipe NAME --size SIZE [-o FILE.json] [--summary]\n"
    "       llmc recipe --list\n";

static std::string joinSizes(const std::vector<std::string> &sizes) {
  std::string s;
  for (const std::string &size : sizes)
    s += (s.empty() ? "" : ", ") + size;
  return s;
}

static void printSummary(const json::Json &graph, llvm::raw_ostream &os) {
  json::GraphSummary s = json::summarizeGraph(graph);
  const json::Json *name = json::member(graph, "name");
  const json::Json *about = json::member(graph, "//");
  os << (name && name->is_string() ? name->get<std::string>() : "graph");
  if (about && about->is_string())
    os << ": " << about->get<std::string>();
  os << "\nparameters: " << json::withThousands(s.parameterCount) << " in "
     << s.parameterTensors << " tensors\n";
  if (const json::Json *dims = json::member(graph, "dims")) {
    os << "dims:";
    for (auto it = dims->begin(); it != dims->end(); ++it)
      os << " " << it.key() << "=" << json::dump(it.value());
    os << "\n";
  }
  os << "nodes: " << s.nodeCount << "\n";
  for (const auto &[op, count] : s.opCounts)
    os << "  " << op << " " << count << "\n";
}

int runRecipe(const Args &args) {
  std::string name, size, output;
  bool summary = false, list = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (a == "--help" || a == "-h") {
      llvm::outs() << kUsage
                   << "\nWrites the JSON graph (docs/json-format.md) of a "
                      "named model at a size: the\ntraining forward pass "
                      "from `idx` and `targets` to the mean cross-entropy "
                      "`loss`.\n  --size SIZE  the model size (--list "
                      "shows them)\n  -o FILE      write the graph to FILE "
                      "instead of stdout\n  --summary    print parameter and "
                      "op counts instead of the graph\n  --list       list "
                      "the recipes and their sizes\n";
      return 0;
    }
    if ((a == "--size" || a == "-o") && i + 1 == args.size()) {
      llvm::errs() << "llmc recipe: error: " << a << " needs a value\n";
      return 2;
    }
    if (a == "--size")
      size = args[++i];
    else if (a == "-o")
      output = args[++i];
    else if (a == "--summary")
      summary = true;
    else if (a == "--list")
      list = true;
    else if (a.size() > 1 && a[0] == '-') {
      llvm::errs() << "llmc recipe: error: unknown option '" << a << "'\n"
                   << kUsage;
      return 2;
    } else if (name.empty())
      name = a;
    else {
      llvm::errs() << "llmc recipe: error: expected one recipe name, got '"
                   << name << "' and '" << a << "'\n";
      return 2;
    }
  }
  if (list) {
    for (const json::Recipe &r : json::recipes())
      llvm::outs() << r.name << "  " << r.description
                   << "\n  sizes: " << joinSizes(r.sizes()) << "\n";
    return 0;
  }
  if (name.empty()) {
    llvm::errs() << "llmc recipe: error: expected a recipe name\n" << kUsage;
    return 2;
  }
  const json::Recipe *recipe = json::lookupRecipe(name);
  if (!recipe) {
    llvm::errs() << "llmc recipe: error: unknown recipe '" << name
                 << "'; `llmc recipe --list` lists them\n";
    return 2;
  }
  if (size.empty()) {
    llvm::errs() << "llmc recipe: error: " << name
                 << " needs --size; its sizes are "
                 << joinSizes(recipe->sizes()) << "\n";
    return 2;
  }
  std::optional<json::Json> graph = recipe->build(size);
  if (!graph) {
    llvm::errs() << "llmc recipe: error: " << name << " has no size '" << size
                 << "'; its sizes are " << joinSizes(recipe->sizes()) << "\n";
    return 2;
  }
  if (summary)
    printSummary(*graph, llvm::outs());
  if (summary && output.empty())
    return 0;
  Status s = writeOutput(output.empty() ? "-" : output,
                         [&](llvm::raw_ostream &os) {
                           os << json::dump(*graph, 1) << "\n";
                         });
  if (!s) {
    llvm::errs() << "llmc recipe: error: " << s.message() << "\n";
    return 1;
  }
  return 0;
}

} // namespace llmc
