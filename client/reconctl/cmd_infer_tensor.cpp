// reconctl infer-tensor MODEL --input NAME=FILE.npy... --out DIR: a generic Infer of a model that
// takes tensors (an ONNX model): each input read from a .npy file into one shared-memory buffer
// (or sent inline with --inline), every output fetched and written to DIR/<name>.npy, every
// character of the name outside [A-Za-z0-9._-] replaced by '_' (as recon-run does).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include "args.h"
#include "commands.h"
#include "exit_codes.h"
#include "format.h"
#include "recon/client.h"
#include "tools/io/npy.h"

namespace reconctl {
namespace {

using namespace recon::client;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

const struct {
  const char* descr;
  DType dtype;
} kDtypes[] = {{"<f4", DType::kF32}, {"<f2", DType::kF16}, {"|u1", DType::kU8}, {"<i4", DType::kI32},
               {"<i8", DType::kI64}, {"<u4", DType::kU32}, {"|b1", DType::kU8}};  // bool: one byte each, as U8

DType dtype_of(const std::string& descr, const std::string& file) {
  for (const auto& d : kDtypes) {
    if (descr == d.descr) return d.dtype;
  }
  throw UsageError(file + ": .npy dtype " + descr + " is not sent (float32, float16, uint8, bool, int32, int64)");
}

const char* descr_of(DType dtype) {
  for (const auto& d : kDtypes) {
    if (dtype == d.dtype) return d.descr;
  }
  return nullptr;
}

}  // namespace

int cmd_infer_tensor(const Context& context) {
  const Args args(context.args, {"input", "out", "precision"}, {"inline"});
  if (args.positionals().size() != 1) throw UsageError("infer-tensor takes one model name");
  const std::string model = args.positionals()[0];
  const auto out_dir = args.value("out");
  if (!out_dir || out_dir->empty()) throw UsageError("infer-tensor needs --out DIR");
  InferOptions options;
  options.precision = parse_precision(args.string_or("precision", "default"));

  std::vector<std::pair<std::string, recon::io::NpyArray>> arrays;
  uint64_t total = 0;
  for (const std::string& spec : args.values("input")) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) throw UsageError("--input takes NAME=FILE.npy");
    const std::string file = spec.substr(eq + 1);
    auto array = recon::io::read_npy_file(file);
    if (!array.is_ok()) throw LocalFileError(array.status().message());
    dtype_of(array->descr, file);
    total += (array->data.size() + 255) / 256 * 256;
    arrays.emplace_back(spec.substr(0, eq), std::move(*array));
  }
  if (arrays.empty()) throw UsageError("infer-tensor needs at least one --input NAME=FILE.npy");

  Client client = Client::connect(context.connect);
  const bool send_inline = args.has("inline");
  ImageBuffer buffer;
  if (!send_inline) buffer = client.create_buffer(total, "reconctl-infer-tensor");
  std::vector<BufferTensor> views;
  views.reserve(arrays.size());
  std::vector<ModelInput> inputs;
  uint64_t offset = 0;
  for (auto& [name, array] : arrays) {
    const DType dtype = dtype_of(array.descr, name);
    std::vector<uint64_t> shape(array.shape.begin(), array.shape.end());
    if (shape.empty()) shape = {1};
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(array.data.data()), array.data.size());
    if (send_inline) {
      inputs.push_back(ModelInput::inline_tensor(name, dtype, shape, bytes));
      continue;
    }
    views.push_back(buffer.write_tensor(offset, dtype, shape, bytes));
    inputs.push_back(ModelInput::buffer_tensor(name, views.back()));
    offset += (array.data.size() + 255) / 256 * 256;
  }

  const auto start = Clock::now();
  Result result = client.infer(model, inputs, {}, options).get();
  const auto infer_time = Clock::now() - start;
  result.fetch();
  std::error_code ec;
  fs::create_directories(*out_dir, ec);
  if (ec) throw LocalFileError("cannot create " + *out_dir + ": " + ec.message());
  for (const TensorInfo& info : result.tensors()) {
    const TensorView view = result.tensor(info.name);
    const char* descr = descr_of(view.dtype());
    if (descr == nullptr) throw LocalFileError(info.name + ": no .npy dtype for " + dtype_name(view.dtype()));
    recon::io::NpyArray out{descr, {view.shape().begin(), view.shape().end()}, {}};
    const auto* b = reinterpret_cast<const uint8_t*>(view.bytes().data());
    out.data.assign(b, b + view.bytes().size());
    const std::string path = (fs::path(*out_dir) / recon::io::npy_file_name(info.name)).string();
    const recon::Status written = recon::io::write_npy_file(path, out);
    if (!written.is_ok()) throw LocalFileError("cannot write " + path + ": " + written.message());
    std::string dims;
    for (uint64_t d : view.shape()) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    std::printf("output %s: %s [%s] -> %s\n", info.name.c_str(), dtype_name(view.dtype()), dims.c_str(), path.c_str());
  }
  std::printf("timings: round trip %s (daemon compute %s)\n", format_ns(infer_time).c_str(),
              format_ns(result.timings().compute).c_str());
  result.release();
  return kExitOk;
}

}  // namespace reconctl
