// Pair outputs as stored tensors: see pair_outputs.h.
#include "daemon/serving/pair_outputs.h"

#include <algorithm>

namespace recon::daemon {

Result<std::vector<StoredTensor>> pair_tensors(const gpu::Mast3rOutputs& out, size_t index,
                                               const std::vector<std::string>& keep) {
  struct Output {
    const char* name;
    const gpu::Tensor* tensor;
    size_t rank;  // of one pair's tensor
  };
  const Output outputs[] = {{"pts3d_1", &out.pts3d[0], 3},         {"pts3d_2", &out.pts3d[1], 3},
                            {"conf_1", &out.conf[0], 2},           {"conf_2", &out.conf[1], 2},
                            {"desc_1", &out.desc[0], 3},           {"desc_2", &out.desc[1], 3},
                            {"desc_conf_1", &out.desc_conf[0], 2}, {"desc_conf_2", &out.desc_conf[1], 2}};
  std::vector<StoredTensor> tensors;
  for (const Output& o : outputs) {
    if (!keep.empty() && std::find(keep.begin(), keep.end(), o.name) == keep.end()) continue;
    const gpu::Tensor& tensor = *o.tensor;
    gpu::Tensor view = tensor;
    if (tensor.shape().size() == o.rank + 1) {
      // [B, ...] → this pair's [...]: a view into the batch's storage (freed with its last view).
      const auto b = static_cast<int64_t>(index);
      auto row = tensor.slice_rows(b, b + 1);
      if (!row.is_ok()) return row.status().with_context(std::string("slicing ") + o.name);
      auto reshaped = row->reshape(gpu::Shape(tensor.shape().begin() + 1, tensor.shape().end()));
      if (!reshaped.is_ok()) return reshaped.status().with_context(std::string("slicing ") + o.name);
      view = std::move(reshaped).value();
    } else if (tensor.shape().size() != o.rank || index != 0) {
      return internal_error(std::string("engine output ") + o.name + " has shape " + gpu::shape_string(tensor.shape()));
    }
    StoredTensor t;
    t.name = o.name;
    t.dtype = view.dtype();
    t.shape.assign(view.shape().begin(), view.shape().end());
    t.bytes = view.bytes();
    t.tensor = std::move(view);
    tensors.push_back(std::move(t));
  }
  return tensors;
}

}  // namespace recon::daemon
