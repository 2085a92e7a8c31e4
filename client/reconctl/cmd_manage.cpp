// reconctl warmup / load / unload: the management calls (manager socket; members of the daemon's
// manager group only).
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "exit_codes.h"
#include "format.h"
#include "recon/client.h"
#include "status_view.h"

namespace reconctl {

using namespace recon::client;

int cmd_warmup(const Context& context) {
  const Args args(context.args, {"model"}, {});
  std::vector<Resolution> resolutions;
  for (const std::string& r : args.positionals()) resolutions.push_back(parse_resolution(r));
  const std::vector<std::string> models = args.values("model");
  Client client = Client::connect_control(context.connect);
  std::printf("warming up %s at %s ...\n", models.empty() ? "every model" : join(models, ", ").c_str(),
              resolutions.empty() ? "their configured resolutions" : join(args.positionals(), ", ").c_str());
  std::fflush(stdout);
  const WarmupReport report = client.warmup(models, resolutions);
  std::printf("warm-up took %s\n\n", format_ms(static_cast<double>(report.duration.count())).c_str());
  std::fputs(models_text(report.models).c_str(), stdout);
  return kExitOk;
}

int cmd_load(const Context& context) {
  const Args args(context.args, {"kind", "version", "backbone", "precision", "resolution"}, {"no-warm"});
  if (args.positionals().empty() || args.positionals().size() > 2) throw UsageError("load takes NAME [PATH]");
  LoadModelRequest request;
  request.name = args.positionals()[0];
  request.weights = args.positionals().size() == 2 ? args.positionals()[1] : request.name;
  request.kind = args.string_or("kind", "");
  request.version = static_cast<uint32_t>(args.int_or("version", 0, 0, 999'999'999));
  request.backbone = args.string_or("backbone", "");
  request.precision = parse_precision(args.string_or("precision", "default"));
  for (const std::string& r : args.values("resolution")) request.resolutions.push_back(parse_resolution(r));
  request.warm = !args.has("no-warm");
  Client client = Client::connect_control(context.connect);
  std::printf("loading %s from %s ...\n", request.name.c_str(), request.weights.c_str());
  std::fflush(stdout);
  const LoadModelReport report = client.load_model(request);
  std::printf("loaded in %s\n\n", format_ms(static_cast<double>(report.duration.count())).c_str());
  std::fputs(models_text({report.model}).c_str(), stdout);
  return kExitOk;
}

int cmd_unload(const Context& context) {
  const Args args(context.args, {}, {});
  if (args.positionals().size() != 1) throw UsageError("unload takes NAME");
  Client client = Client::connect_control(context.connect);
  client.unload_model(args.positionals()[0]);
  std::printf("unloaded %s\n", args.positionals()[0].c_str());
  return kExitOk;
}

}  // namespace reconctl
