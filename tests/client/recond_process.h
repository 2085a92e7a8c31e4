// Recond: the real daemon as a child process for librecon tests — recond --foreground on a private
// socket directory and pipeline cache, READY awaited by polling its status, SIGTERM at the end
// (whose exit status a test may check), its log for failure messages. Needs RECOND_PATH defined
// (RECON_RECOND in the environment overrides it: benches copied to another machine).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "recon/client.h"

namespace recon::client::testing {

using namespace std::chrono_literals;

class Recond {
 public:
  // `model`: the weights recond serves as "mast3r" (the tiny golden model in most tests).
  explicit Recond(const std::string& model_path)
      : Recond({"--model", "mast3r=" + model_path, "--warmup", "64x48", "--precision", "fp32"}) {}
  // recond with `args` after the private socket directory and pipeline cache.
  explicit Recond(const std::vector<std::string>& args) {
    char tmpl[] = "/tmp/recon-recond-test-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp");
    dir_ = tmpl;
    const std::string log = dir_ + "/recond.log";
    pid_ = ::fork();
    if (pid_ == 0) {
      const char* recond = std::getenv("RECON_RECOND") != nullptr ? std::getenv("RECON_RECOND") : RECOND_PATH;
      std::vector<std::string> argv = {
          recond,         "--foreground", "--config",         "/dev/null",
          "--socket-dir", dir_ + "/run",  "--pipeline-cache", dir_ + "/pipeline-cache.bin"};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> c_argv;
      for (std::string& a : argv) c_argv.push_back(a.data());
      c_argv.push_back(nullptr);
      std::freopen(log.c_str(), "w", stderr);
      std::freopen(log.c_str(), "a", stdout);
      ::execv(recond, c_argv.data());
      ::_exit(127);
    }
  }
  ~Recond() {
    stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  const std::string& dir() const { return dir_; }

  ConnectOptions options() const {
    ConnectOptions o = ConnectOptions::in_directory(dir_ + "/run");
    o.timeout = 120s;
    o.client_name = "recond-integration-test";
    return o;
  }

  // Waits for READY (warm-up compiles pipelines: minutes on a CPU device).
  bool wait_ready(std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    ConnectOptions o = options();
    o.timeout = 2s;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      try {
        if (Client::connect_control(o).status().state == DaemonState::kReady) return true;
      } catch (const Error&) {
      }
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }

  // SIGTERM; the exit status (-1 when it had to be killed).
  int stop() {
    if (pid_ <= 0) return exit_code_;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 600; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        return exit_code_;
      }
      std::this_thread::sleep_for(50ms);
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    return -1;
  }

  std::string log() const {
    std::string out;
    if (FILE* f = std::fopen((dir_ + "/recond.log").c_str(), "r")) {
      char chunk[4096];
      size_t n;
      while ((n = std::fread(chunk, 1, sizeof(chunk), f)) > 0) out.append(chunk, n);
      std::fclose(f);
    }
    return out;
  }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

}  // namespace recon::client::testing
