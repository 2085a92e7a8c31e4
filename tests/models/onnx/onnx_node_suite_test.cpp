// The ONNX backend test collections of Debian's libonnx-testdata (one model, its inputs and
// expected outputs per folder) run through recon's ONNX engine on the default device: `node` (one
// operator per test), `pytorch-converted` and `pytorch-operator` (small PyTorch modules and
// operators, exported by the ONNX project with opset 6 to 12) and `simple` (small hand-made graphs).
// Every test whose nodes the op table accepts is compiled and run; its outputs must match within
// the suite's own tolerance (rtol 1e-3, atol 1e-7; integers exactly). Tests the compiler refuses
// for an attribute or dtype the op library lacks are listed with the reason, and the number that
// pass may not fall below each collection's recorded floor. Set RECON_ONNX_SUITE_REPORT=DIR for
// the full lists (DIR/<collection>.tsv; docs/ONNX.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gpu/models/onnx/onnx_engine.h"
#include "gpu/models/onnx/onnx_file.h"
#include "gpu/models/onnx/onnx_host.h"
#include "gpu/models/onnx/onnx_op_table.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/models/onnx/onnx_backend_data.h"

namespace recon::gpu::onnx {
namespace {

namespace fs = std::filesystem;

struct Collection {
  const char* name;   // the folder under the data root
  int passing_floor;  // tests that pass today; the collection fails if fewer do
};

const Collection kCollections[] = {{"node", 778}, {"pytorch-converted", 69}, {"pytorch-operator", 30}, {"simple", 7}};

fs::path data_root() {
  if (const char* dir = std::getenv("RECON_ONNX_TESTDATA")) return dir;
  return "/usr/share/libonnx-testdata/data";
}

class OnnxBackendSuite : public testing::GpuTest, public ::testing::WithParamInterface<Collection> {};

TEST_P(OnnxBackendSuite, EveryTestTheCompilerAcceptsMatchesItsExpectedOutputs) {
  const Collection& collection = GetParam();
  const fs::path root = data_root() / collection.name;
  if (!fs::exists(root)) GTEST_SKIP() << "no ONNX test data at " << root << " (libonnx-testdata)";
  std::vector<fs::path> tests;
  for (const auto& entry : fs::directory_iterator(root)) tests.push_back(entry.path());
  std::sort(tests.begin(), tests.end());

  struct Tally {
    int passed = 0, refused = 0, unsupported = 0;
  };
  std::map<std::string, Tally> per_op;
  std::vector<std::string> report;
  int passed = 0, mismatched = 0;
  for (const fs::path& dir : tests) {
    const std::string name = dir.filename().string();
    Result<Model> model = read_onnx_model((dir / "model.onnx").string());
    if (!model) {
      report.push_back(name + "\tunreadable\t" + model.status().message());
      continue;
    }
    const std::string op = model->graph.nodes.empty() ? "?" : model->graph.nodes[0].op_type;
    if (!unsupported_nodes(*model).empty()) {
      ++per_op[op].unsupported;
      report.push_back(name + "\tunsupported\t" + unsupported_nodes(*model)[0]);
      continue;
    }
    Result<std::vector<HostTensor>> inputs = read_tensor_set(dir / "test_data_set_0", "input_");
    Result<std::vector<HostTensor>> outputs = read_tensor_set(dir / "test_data_set_0", "output_");
    if (!inputs || !outputs) {
      ++per_op[op].refused;
      report.push_back(name + "\trefused\ttest data: " + (inputs ? outputs : inputs).status().message());
      continue;
    }
    const std::vector<HostTensor>& expected = *outputs;
    Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), std::move(*model));
    Result<std::vector<HostTensor>> got =
        engine ? (*engine)->run(*inputs) : Result<std::vector<HostTensor>>(engine.status());
    if (!got) {
      ++per_op[op].refused;
      std::string why = got.status().message();
      std::replace(why.begin(), why.end(), '\n', ' ');
      report.push_back(name + "\trefused\t" + why);
      continue;
    }
    std::string diff = got->size() == expected.size() ? "" : "wrong number of outputs";
    for (size_t i = 0; diff.empty() && i < expected.size(); ++i) {
      diff = compare_as_onnx((*got)[i], expected[i]);
      if (!diff.empty()) diff = "output " + std::to_string(i) + ": " + diff;
    }
    if (!diff.empty()) {
      ++mismatched;
      ADD_FAILURE() << name << ": " << diff;
      report.push_back(name + "\tMISMATCH\t" + diff);
      continue;
    }
    ++passed;
    ++per_op[op].passed;
    report.push_back(name + "\tpassed\t");
  }

  std::ostringstream summary;
  summary << "ONNX " << collection.name << " tests: " << passed << " passed, " << mismatched << " mismatched, of "
          << tests.size() << "\n";
  for (const auto& [op, t] : per_op) {
    if (t.passed + t.refused == 0) continue;
    summary << "  " << op << ": " << t.passed << " passed, " << t.refused << " refused\n";
  }
  std::cout << summary.str();
  if (const char* report_dir = std::getenv("RECON_ONNX_SUITE_REPORT")) {
    std::ofstream out(fs::path(report_dir) / (std::string(collection.name) + ".tsv"));
    for (const std::string& line : report) out << line << "\n";
  }
  EXPECT_EQ(mismatched, 0);
  EXPECT_GE(passed, collection.passing_floor);
}

INSTANTIATE_TEST_SUITE_P(Debian, OnnxBackendSuite, ::testing::ValuesIn(kCollections),
                         [](const ::testing::TestParamInfo<Collection>& info) {
                           std::string name = info.param.name;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace recon::gpu::onnx
