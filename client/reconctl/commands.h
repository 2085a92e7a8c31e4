// reconctl's subcommands. Each takes the connection options (from the global flags) and its own
// arguments, prints to stdout, and returns an exit code (exit_codes.h). librecon errors and
// UsageError propagate to main(), which prints them and maps them to exit codes.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "recon/client/options.h"

namespace reconctl {

// A local file could not be read or written (exit code kExitLocalFile).
struct LocalFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Context {
  recon::client::ConnectOptions connect;
  std::vector<std::string> args;  // after the subcommand's name
};

int cmd_status(const Context& context);        // status [--json] [--sessions]
int cmd_models(const Context& context);        // models [--json]
int cmd_wait_ready(const Context& context);    // wait-ready [SECONDS]
int cmd_warmup(const Context& context);        // warmup [--model NAME]... [RES...]
int cmd_load(const Context& context);          // load NAME [PATH] [...]
int cmd_unload(const Context& context);        // unload NAME
int cmd_infer(const Context& context);         // infer A B --out DIR [...]
int cmd_infer_tensor(const Context& context);  // infer-tensor MODEL --input NAME=FILE.npy... --out DIR
int cmd_bench(const Context& context);         // bench [A B] [--pairs N] [--concurrency C] [...]
int cmd_batch(const Context& context);         // batch IMG... --out DIR [--pairs I-J,...] [--symmetric]
int cmd_match(const Context& context);         // match A B --out DIR [--max-matches N] [...]
int cmd_retrieve(const Context& context);      // retrieve IMG... [--top-k K] [--json]
int cmd_reconstruct(const Context& context);   // reconstruct IMG... --out DIR [--pairs GRAPH] [...]

}  // namespace reconctl
