// reconctl retrieve IMG... [--top-k K]: retrieval embeddings of every image on the daemon, and the
// candidate pairs (each image's K most similar others) as a table or --json.
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "exit_codes.h"
#include "format.h"
#include "input_images.h"
#include "recon/client.h"

namespace reconctl {

using namespace recon::client;

int cmd_retrieve(const Context& context) {
  const Args args(context.args, {"top-k", "size", "model"}, {"json"});
  const std::vector<std::string>& paths = args.positionals();
  if (paths.size() < 2) throw UsageError("retrieve takes at least two images");
  const bool json = args.has("json");
  RetrievalOptions options;
  options.model = args.string_or("model", "");
  const auto default_k = static_cast<int64_t>(std::min<size_t>(5, paths.size() - 1));
  options.top_k = static_cast<uint32_t>(args.int_or("top-k", default_k, 1, static_cast<int64_t>(paths.size()) - 1));

  Client client = Client::connect(context.connect);
  // The retrieval head's preparation is its backbone's (the daemon reports it under the head's name).
  const std::vector<recon::io::Image> images = load_prepared_images(
      paths, model_preparation(client, options.model.empty() ? "retrieval" : options.model, args.value("size")), !json);
  options.resolution = Resolution{static_cast<uint32_t>(images[0].height), static_cast<uint32_t>(images[0].width)};
  ImagesInBuffer uploaded = upload_images(client, images, "reconctl-retrieve");
  RetrievalResult result = client.encode_retrieval(uploaded.views, options).get();
  const TensorInfo* embeddings = result.outputs.find("embeddings");
  const uint64_t dim = embeddings != nullptr && embeddings->shape.size() == 2 ? embeddings->shape[1] : 0;
  result.outputs.release();

  if (json) {
    JsonWriter w;
    w.begin_object().key("model").value(result.outputs.model()).key("embedding_dim").value(dim);
    w.key("images").begin_array();
    for (const std::string& path : paths) w.value(path);
    w.end_array().key("pairs").begin_array();
    for (size_t i = 0; i < result.pairs.size(); ++i) {
      w.begin_object().key("first").value(result.pairs[i].first).key("second").value(result.pairs[i].second);
      w.key("score").value(static_cast<double>(result.scores[i])).end_object();
    }
    w.end_array().end_object();
    std::printf("%s\n", w.str().c_str());
    return kExitOk;
  }
  std::printf("%zu images, %llu-d embeddings (model %s), top %u per image:\n\n", paths.size(),
              static_cast<unsigned long long>(dim), result.outputs.model().c_str(), options.top_k);
  Table table;
  table.add_row({"IMAGE", "FILE", "MOST SIMILAR (cosine)"});
  for (size_t i = 0; i < paths.size(); ++i) {
    std::string best;
    for (size_t k = 0; k < result.pairs.size(); ++k) {
      if (result.pairs[k].first != i) continue;
      char cell[64];
      std::snprintf(cell, sizeof(cell), "%u (%.3f)", result.pairs[k].second, static_cast<double>(result.scores[k]));
      best += (best.empty() ? "" : ", ") + std::string(cell);
    }
    table.add_row({std::to_string(i), paths[i], best});
  }
  std::fputs(table.render().c_str(), stdout);
  return kExitOk;
}

}  // namespace reconctl
