// reconctl reconstruct IMG... --out DIR: the daemon's reconstruct job (N images → cameras and one
// point cloud), its progress shown as it runs, its result written as files (reconstruct_output.h).
// Interrupting reconctl ends its session, which cancels the job on the daemon.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "exit_codes.h"
#include "format.h"
#include "input_images.h"
#include "job_progress.h"
#include "recon/client.h"
#include "reconstruct_output.h"

namespace reconctl {

using namespace recon::client;

int cmd_reconstruct(const Context& context) {
  const Args args(context.args,
                  {"out", "size", "model", "pairs", "subsample", "iterations", "min-conf", "colmap-points", "param"},
                  {});
  const std::vector<std::string>& paths = args.positionals();
  if (paths.size() < 2) throw UsageError("reconstruct takes at least two images");
  const auto out_dir = args.value("out");
  if (!out_dir || out_dir->empty()) throw UsageError("reconstruct needs --out DIR");
  const auto colmap_points = static_cast<size_t>(args.int_or("colmap-points", 200000, 1, 100000000));

  JobOptions job;
  job.job = "reconstruct";
  // The silence between two events spans one device step (a few pairs): minutes on a CPU device.
  if (context.connect.timeout.count() > 0) {
    job.timeout = std::max<std::chrono::milliseconds>(context.connect.timeout, std::chrono::minutes(30));
  }
  job.model = args.string_or("model", "");
  if (const auto pairs = args.value("pairs")) job.parameters.emplace_back("pairs", *pairs);
  if (const auto subsample = args.value("subsample")) job.parameters.emplace_back("subsample", *subsample);
  if (const auto min_conf = args.value("min-conf")) job.parameters.emplace_back("min_conf", *min_conf);
  if (const auto iterations = args.value("iterations")) {
    const size_t comma = iterations->find(',');
    if (comma == std::string::npos) throw UsageError("--iterations takes COARSE,FINE (e.g. 300,300)");
    job.parameters.emplace_back("niter1", iterations->substr(0, comma));
    job.parameters.emplace_back("niter2", iterations->substr(comma + 1));
  }
  for (const std::string& param : args.values("param")) {
    const size_t equals = param.find('=');
    if (equals == std::string::npos) throw UsageError("--param takes NAME=VALUE; got '" + param + "'");
    job.parameters.emplace_back(param.substr(0, equals), param.substr(equals + 1));
  }

  Client client = Client::connect(context.connect);
  const std::vector<recon::io::PreparedImage> images =
      load_prepared_originals(paths, model_preparation(client, job.model, args.value("size")), true);
  // The images go up already prepared at --size (or the model's own); the daemon must use them as they are, not
  // prepare them again at the model's own size (which it does when no resolution is named).
  // Images of different aspects keep the daemon's choice; the outputs check it (image_hw).
  const bool one_size = std::all_of(images.begin(), images.end(), [&](const recon::io::PreparedImage& image) {
    return image.image.width == images[0].image.width && image.image.height == images[0].image.height;
  });
  if (one_size) {
    job.resolution =
        Resolution{static_cast<uint32_t>(images[0].image.height), static_cast<uint32_t>(images[0].image.width)};
  }
  std::vector<recon::io::Image> pixels;
  for (const auto& image : images) pixels.push_back(image.image);
  ImagesInBuffer uploaded = upload_images(client, pixels, "reconctl-reconstruct");

  JobProgressView view(::isatty(STDERR_FILENO) != 0);
  Job running = client.start_job(uploaded.views, job);
  while (auto event = running.next()) view.show(*event);
  view.finish();

  const ReconstructSummary summary = write_reconstruction(running.result(), images, paths, *out_dir, colmap_points);
  std::printf("reconstructed %zu of %zu cameras in one frame (%d component%s), %zu points\n", summary.cameras_placed,
              summary.cameras, summary.components, summary.components == 1 ? "" : "s", summary.points);
  for (const std::string& file : summary.files) std::printf("  %s\n", file.c_str());
  return kExitOk;
}

}  // namespace reconctl
