// Server life cycle and I/O loop: see server.h. Request handling is in server_requests.cpp and
// server_management.cpp, the side channel in server_sessions.cpp.
#include "daemon/server/server.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "daemon/ipc/wire_convert.h"
#include "daemon/server/prometheus_text.h"
#include "daemon/server/status_report.h"
#include "daemon/serving/region_import.h"
#include "gpu/log.h"

namespace recon::daemon {
namespace {

constexpr auto kTimerPeriod = std::chrono::milliseconds(100);
constexpr auto kMaxPollWait = std::chrono::milliseconds(100);

ResultLimits result_limits(const ServerLimits& l) {
  return ResultLimits{l.max_handles_per_client, l.max_result_bytes_per_client, l.max_total_result_bytes};
}

}  // namespace

Server::Server(ServerOptions options, const Notifier* notifier)
    : options_(std::move(options)),
      notifier_(notifier),
      manager_policy_{::getuid(), options_.manager_gid},
      verify_limits_{static_cast<size_t>(options_.limits.max_message_bytes), 16, 100'000},
      repository_(options_.model_dir),
      registry_(options_.registry),
      store_(result_limits(options_.limits)),
      sessions_(SessionLimits{options_.limits.max_clients, options_.limits.max_remote_sessions,
                              options_.limits.max_remote_sessions_per_peer}) {}

Server::~Server() {
  // Workers must be gone before the scheduler and the stores they use; jobs before the workers
  // (closing the scheduler drops the steps they wait on).
  if (scheduler_ && !scheduler_->closed()) answer_dropped(scheduler_->close(), unavailable("the daemon is stopping"));
  jobs_.reset();
  if (!workers_stuck_) workers_.clear();
  for (const std::string& path : bound_socket_files_) ::unlink(path.c_str());
}

Result<std::unique_ptr<Server>> Server::create(ServerOptions options, ServerSockets sockets,
                                               std::vector<gpu::Runtime*> runtimes, const Notifier* notifier,
                                               ServerHooks hooks) {
  if (runtimes.empty()) return invalid_argument("the server needs at least one device");
  std::unique_ptr<Server> server(new Server(std::move(options), notifier));
  RECON_RETURN_IF_ERROR(server->init(std::move(sockets), std::move(runtimes), std::move(hooks)));
  return server;
}

Status Server::init(ServerSockets sockets, std::vector<gpu::Runtime*> runtimes, ServerHooks hooks) {
  RECON_ASSIGN_OR_RETURN(Outbox outbox, Outbox::create());
  outbox_.emplace(std::move(outbox));
  stop_event_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop_event_) return internal_error(std::string("eventfd: ") + std::strerror(errno));

  for (size_t i = 0; i < runtimes.size(); ++i) devices_.push_back(std::make_unique<Device>(i, *runtimes[i]));
  SchedulerOptions scheduling{options_.limits.max_queue, options_.limits.max_fetch_queue};
  scheduler_ =
      std::make_unique<Scheduler>(scheduling, devices_.size(), [this](size_t device, const std::string& model) {
        // A device runs a model it has ready; a model no device has ready goes to any worker, which
        // answers it (rather than leaving it queued forever).
        if (devices_[device]->model_ready(model)) return true;
        for (const auto& d : devices_) {
          if (d->model_ready(model)) return false;
        }
        return true;
      });

  WorkerOptions worker_options;
  worker_options.before_batch = std::move(hooks.before_batch);
  worker_options.skip_models = std::move(hooks.skip_models);
  worker_options.device_lost = std::move(hooks.device_lost);
  worker_options.gpu_preprocess = options_.gpu_preprocess;
  if (!options_.gpu_preprocess) log_info("Images are prepared on the CPU (gpu_preprocess off)");
  before_startup_ = std::move(hooks.before_startup);
  if (notifier_ != nullptr && notifier_->watchdog_ping_interval()) {
    const auto ping = std::chrono::duration_cast<std::chrono::milliseconds>(*notifier_->watchdog_ping_interval());
    worker_options.idle_tick = std::clamp(ping / 2, std::chrono::milliseconds(1), std::chrono::milliseconds(250));
    pacer_.emplace(*notifier_);
  }
  for (auto& device : devices_) {
    workers_.push_back(std::make_unique<GpuWorker>(*device, *scheduler_, store_, metrics_, *outbox_, worker_options));
  }
  jobs_ = std::make_unique<JobRunner>(*scheduler_, store_, *outbox_,
                                      JobRunnerOptions{options_.limits.max_jobs, options_.limits.max_jobs_per_client});

  RegionServiceOptions region_options;
  region_options.server_version = options_.server_version;
  region_options.max_handles = options_.limits.max_handles_per_client;
  region_options.max_result_bytes = options_.limits.max_result_bytes_per_client;
  region_options.max_message_bytes = options_.limits.max_message_bytes;
  // Regions are imported into every device that can import host memory (region_import.h).
  if (options_.import_regions) {
    std::vector<gpu::Runtime*> runtimes;
    for (const auto& device : devices_) runtimes.push_back(&device->runtime());
    region_options.importer = make_region_importer(std::move(runtimes));
  }
  region_service_ = std::make_unique<RegionService>(registry_, std::move(region_options));

  RECON_ASSIGN_OR_RETURN(ZmqContext zmq, ZmqContext::create());
  zmq_.emplace(std::move(zmq));
  ZmqRouterOptions router_options;
  router_options.max_frame_bytes = options_.limits.max_message_bytes;
  router_options.max_parts = options_.limits.max_message_parts;
  auto open_router = [&](Listener& listener, const char* what) -> Result<ZmqRouter> {
    RECON_ASSIGN_OR_RETURN(ZmqRouter router, ZmqRouter::create(*zmq_, router_options));
    RECON_RETURN_IF_ERROR(router.bind_listening_fd(listener.fd.get(), listener.path)
                              .with_context(std::string("the ") + what + " socket"));
    (void)listener.fd.release();  // libzmq owns and closes it now
    if (!listener.activated) bound_socket_files_.push_back(listener.path);
    return router;
  };
  RECON_ASSIGN_OR_RETURN(ZmqRouter client, open_router(sockets.client, "client"));
  client_router_.emplace(std::move(client));
  RECON_ASSIGN_OR_RETURN(ConnectionMonitor client_monitor,
                         ConnectionMonitor::attach(*zmq_, *client_router_, "recon-connections-client"));
  client_monitor_.emplace(std::move(client_monitor));
  RECON_ASSIGN_OR_RETURN(ZmqRouter manager, open_router(sockets.manager, "manager"));
  manager_router_.emplace(std::move(manager));
  if (!options_.tcp_endpoint.empty()) {
    RECON_ASSIGN_OR_RETURN(ZmqRouter tcp, ZmqRouter::create(*zmq_, router_options));
    RECON_RETURN_IF_ERROR(tcp.bind(options_.tcp_endpoint));
    log_info("Serving remote clients on " + tcp.endpoint() + " (inline images only)");
    tcp_router_.emplace(std::move(tcp));
    RECON_ASSIGN_OR_RETURN(ConnectionMonitor tcp_monitor,
                           ConnectionMonitor::attach(*zmq_, *tcp_router_, "recon-connections-tcp"));
    tcp_monitor_.emplace(std::move(tcp_monitor));
  }
  const std::string regions_path = sockets.regions.path;
  const bool regions_activated = sockets.regions.activated;
  RECON_ASSIGN_OR_RETURN(regions_listener_, RegionChannelListener::adopt(std::move(sockets.regions.fd)));
  RECON_RETURN_IF_ERROR(regions_listener_.set_nonblocking(true));
  regions_listening_ = true;
  if (!regions_activated) bound_socket_files_.push_back(regions_path);

  if (options_.metrics_port) {
    RECON_ASSIGN_OR_RETURN(metrics_http_,
                           MetricsHttp::listen(*options_.metrics_port, options_.limits.max_metrics_connections));
    log_info("Serving Prometheus metrics on http://127.0.0.1:" + std::to_string(metrics_http_.port()) + "/metrics");
  }
  return Status::ok();
}

void Server::request_stop() {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(stop_event_.get(), &one, sizeof(one));
}

int Server::run(SignalFd* signals) {
  state_ = wire::DaemonState::WARMING;
  for (auto& worker : workers_) worker->start();
  WarmupPlan plan = plan_for({});
  for (auto& device : devices_) {
    ControlWork startup;
    startup.what = "start-up of device " + std::to_string(device->index());
    startup.run = [this, plan](Device& d) -> Result<std::optional<std::vector<uint8_t>>> {
      if (before_startup_) before_startup_();
      auto summary = start_device(d, options_, plan, notifier_);
      outbox_->push(StartupDone{summary.status(), summary.is_ok() ? summary.value() : std::string(), d.index()});
      return std::optional<std::vector<uint8_t>>();
    };
    (void)scheduler_->submit(std::move(startup), device->index());
    ++startups_pending_;
  }

  std::vector<zmq_pollitem_t> items;
  while (true) {
    items.clear();
    items.push_back({nullptr, stop_event_.get(), ZMQ_POLLIN, 0});
    items.push_back({nullptr, outbox_->fd(), ZMQ_POLLIN, 0});
    items.push_back({nullptr, signals ? signals->fd() : -1, static_cast<short>(signals ? ZMQ_POLLIN : 0), 0});
    items.push_back({client_router_->handle(), 0, ZMQ_POLLIN, 0});
    items.push_back({manager_router_->handle(), 0, ZMQ_POLLIN, 0});
    items.push_back(
        {tcp_router_ ? tcp_router_->handle() : nullptr, -1, static_cast<short>(tcp_router_ ? ZMQ_POLLIN : 0), 0});
    items.push_back({nullptr, regions_listening_ ? regions_listener_.fd() : -1,
                     static_cast<short>(regions_listening_ ? ZMQ_POLLIN : 0), 0});
    items.push_back({client_monitor_->handle(), 0, ZMQ_POLLIN, 0});
    items.push_back(
        {tcp_monitor_ ? tcp_monitor_->handle() : nullptr, -1, static_cast<short>(tcp_monitor_ ? ZMQ_POLLIN : 0), 0});
    const size_t first_channel = items.size();
    for (const SideChannel& c : side_channels_) items.push_back({nullptr, c.channel.fd(), ZMQ_POLLIN, 0});
    const size_t first_metrics = items.size();
    const size_t metrics_items = metrics_http_.add_poll_items(items);

    auto wait = kMaxPollWait;
    if (pacer_) {
      if (auto due = pacer_->time_until_due()) wait = std::min(wait, std::max(*due, std::chrono::milliseconds(1)));
    }
    const int ready = zmq_poll(items.data(), static_cast<int>(items.size()), static_cast<long>(wait.count()));
    if (ready < 0 && zmq_errno() != EINTR) {
      log_error(std::string("zmq_poll failed: ") + zmq_strerror(zmq_errno()));
      exit_code_ = 1;
      begin_stop("poll failure");
    }
    const auto now = SteadyClock::now();

    if (items[0].revents & ZMQ_POLLIN) {
      uint64_t count = 0;
      [[maybe_unused]] const ssize_t n = ::read(stop_event_.get(), &count, sizeof(count));
      begin_stop("asked to stop");
    }
    if (signals != nullptr && (items[2].revents & ZMQ_POLLIN)) {
      while (true) {
        auto event = signals->read();
        if (!event.is_ok() || !event->has_value()) break;
        const SignalEvent& signal = **event;
        if (signal.action() == SignalAction::kShutdown) {
          if (stopping_ && signal.signal == SIGINT) {
            log_warning("Second interrupt: exiting without waiting for the GPU");
            exit_code_ = 1;
            workers_stuck_ = true;
            return exit_code_;
          }
          begin_stop(std::string("signal ") + ::strsignal(signal.signal) + " from pid " +
                     std::to_string(signal.sender_pid));
        } else if (signal.action() == SignalAction::kReload) {
          // Nothing is reloadable at run time yet: limits, models and sockets need a restart.
          log_warning("SIGHUP: recond cannot reload its configuration yet; restart it to apply changes");
          if (notifier_ != nullptr && state_ == wire::DaemonState::READY) {
            (void)notifier_->reloading();
            (void)notifier_->ready();
          }
        }
      }
    }
    if (items[1].revents & ZMQ_POLLIN) deliver_outbox();
    if (items[7].revents & ZMQ_POLLIN) watch_connections(ReplySocket::kClient);
    if (tcp_monitor_ && (items[8].revents & ZMQ_POLLIN)) watch_connections(ReplySocket::kTcp);
    if (items[3].revents & ZMQ_POLLIN) drain_router(ReplySocket::kClient);
    if (items[4].revents & ZMQ_POLLIN) drain_router(ReplySocket::kManager);
    if (tcp_router_ && (items[5].revents & ZMQ_POLLIN)) drain_router(ReplySocket::kTcp);
    // Side channels: indices shift when one closes, so walk the poll results backwards.
    for (size_t i = side_channels_.size(); i-- > 0;) {
      if (items[first_channel + i].revents & (ZMQ_POLLIN | ZMQ_POLLERR)) {
        if (!on_side_channel(i)) side_channels_.erase(side_channels_.begin() + static_cast<ptrdiff_t>(i));
      }
    }
    if (regions_listening_ && (items[6].revents & ZMQ_POLLIN)) accept_side_channels();
    if (metrics_items > 0) {
      metrics_http_.handle(&items[first_metrics], metrics_items, [this] { return prometheus_text(snapshot(false)); });
    }
    if (now - last_timers_ >= kTimerPeriod) {
      last_timers_ = now;
      on_timers(now);
    }
    // Pings while ready and while draining (systemd may keep the watchdog armed during a stop).
    const wire::DaemonState state = state_.load();
    if (pacer_ && (state == wire::DaemonState::READY || state == wire::DaemonState::STOPPING) && workers_healthy(now)) {
      (void)pacer_->ping_if_due(now);
    }

    if (stopping_) {
      const bool drained = jobs_->running() == 0 &&
                           std::none_of(workers_.begin(), workers_.end(), [](const auto& w) { return w->running(); });
      if (drained) {
        for (auto& worker : workers_) worker->join();
        deliver_outbox();
        break;
      }
      if (now > drain_deadline_) {
        log_error(
            "In-flight GPU work did not finish within " +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(options_.drain_timeout).count()) +
            " ms; exiting without it");
        deliver_outbox();
        exit_code_ = 1;
        workers_stuck_ = true;
        break;
      }
    }
  }
  log_info("recond stopped");
  return exit_code_;
}

void Server::begin_stop(const std::string& why) {
  if (stopping_) return;
  stopping_ = true;
  state_ = wire::DaemonState::STOPPING;
  const SchedulerStats queue = scheduler_->stats();
  log_info("Stopping (" + why + "): answering " + std::to_string(queue.pending) + " queued requests UNAVAILABLE, " +
           "draining " + std::to_string(queue.in_flight) + " in flight");
  if (notifier_ != nullptr) {
    (void)notifier_->stopping("stopping: draining " + std::to_string(queue.in_flight) + " requests");
    (void)notifier_->extend_timeout(options_.drain_timeout + std::chrono::seconds(5));
  }
  answer_dropped(scheduler_->close(), unavailable("the daemon is stopping"));
  jobs_->stop();  // each job stops at its next check or step (the closed scheduler refuses or drops it)
  // No new side-channel connections (under socket activation systemd keeps its own copy).
  regions_listening_ = false;
  regions_listener_ = RegionChannelListener();
  drain_deadline_ = SteadyClock::now() + options_.drain_timeout;
}

bool Server::workers_healthy(SteadyClock::time_point now) const {
  if (notifier_ == nullptr || !notifier_->watchdog_ping_interval()) return true;
  // A worker inside one GPU call for longer than the ping interval counts as hung: the pings
  // stop and systemd's watchdog restarts the daemon after WatchdogSec.
  const auto limit = *notifier_->watchdog_ping_interval();
  for (const auto& worker : workers_) {
    if (now - worker->heartbeat() > limit) return false;
  }
  return true;
}

void Server::on_timers(SteadyClock::time_point now) {
  if (const size_t expired = store_.expire(now); expired > 0) {
    log_message(LogLevel::kDebug, "Freed " + std::to_string(expired) + " result handles at their TTL");
  }
  for (ClientId client : sessions_.idle_remote(now, options_.limits.remote_session_idle)) {
    end_session(client, "idle remote session");
  }
  metrics_http_.expire(now);
}

ConnectionMonitor* Server::monitor(ReplySocket socket) {
  switch (socket) {
    case ReplySocket::kClient:
      return client_monitor_ ? &*client_monitor_ : nullptr;
    case ReplySocket::kTcp:
      return tcp_monitor_ ? &*tcp_monitor_ : nullptr;
    case ReplySocket::kManager:
      return nullptr;
  }
  return nullptr;
}

void Server::watch_connections(ReplySocket socket) {
  ConnectionMonitor* m = monitor(socket);
  if (m == nullptr) return;
  for (const ConnectionId& closed : m->drain()) {
    for (ClientId client : sessions_.remote_on(static_cast<int>(socket), closed)) {
      end_session(client, "its ZeroMQ connection closed");
    }
  }
}

ZmqRouter* Server::router(ReplySocket socket) {
  switch (socket) {
    case ReplySocket::kClient:
      return client_router_ ? &*client_router_ : nullptr;
    case ReplySocket::kManager:
      return manager_router_ ? &*manager_router_ : nullptr;
    case ReplySocket::kTcp:
      return tcp_router_ ? &*tcp_router_ : nullptr;
  }
  return nullptr;
}

void Server::send_reply(const ReplyTarget& target, std::span<const uint8_t> bytes, StatusCode code, bool final) {
  if (final) metrics_.record_request(code);
  // A remote session is idle from its last request or answer, and never while a request of it is
  // in flight: a long inference does not expire it.
  if (Session* session = final && target.client != 0 ? sessions_.find_client(target.client) : nullptr) {
    session->last_used = SteadyClock::now();
    if (session->in_flight > 0) --session->in_flight;
  }
  const ZmqReplyRoute* route = zmq_route(target);
  ZmqRouter* r = route != nullptr ? router(route->socket) : nullptr;
  if (r == nullptr) return;
  const Status sent = r->send(route->envelope, bytes);
  if (!sent.is_ok()) {
    // The peer is gone (or not reading): the answer is dropped, as its session's resources are.
    log_message(LogLevel::kDebug,
                "Dropping the answer to request " + std::to_string(target.request_id) + ": " + sent.message());
  }
}

void Server::reply_error(const ReplyTarget& target, const Status& status, uint32_t retry_after_ms) {
  const std::vector<uint8_t> bytes = error_response(target.request_id, status, retry_after_ms);
  send_reply(target, bytes, status.code());
}

void Server::answer_dropped(const DroppedJobs& dropped, const Status& status) {
  for (const BatchWork& job : dropped.batched) reply_error(job.context.reply, status, 1000);
  for (const FetchWork& job : dropped.fetch) reply_error(job.context.reply, status, 1000);
  for (const SoloWork& job : dropped.solo) {
    if (std::holds_alternative<DeviceStep>(job)) continue;  // its job answers, once it sees the step dropped
    reply_error(std::visit([](const auto& j) -> const ReplyTarget& { return j.context.reply; }, job), status, 1000);
  }
  std::set<std::pair<ClientId, uint64_t>> answered;  // a management request has one item per device
  for (const ControlWork& job : dropped.control) {
    if (job.context && answered.insert({job.context->reply.client, job.context->reply.request_id}).second) {
      reply_error(job.context->reply, status, 1000);
    }
  }
}

void Server::deliver_outbox() {
  for (OutboxItem& item : outbox_->take()) {
    if (auto* reply = std::get_if<OutgoingReply>(&item)) {
      send_reply(reply->target, reply->bytes, reply->code, reply->final);
      continue;
    }
    const auto& done = std::get<StartupDone>(item);
    if (!done.status.is_ok()) {
      log_error("Start-up failed: " + done.status.to_string());
      if (notifier_ != nullptr) (void)notifier_->status("start-up failed: " + done.status.message());
      exit_code_ = 1;
      begin_stop("start-up failed");
      continue;
    }
    startup_summaries_.resize(devices_.size());
    startup_summaries_[done.device] = done.summary;
    if (--startups_pending_ == 0 && !stopping_) {
      state_ = wire::DaemonState::READY;
      std::string summary;
      for (size_t d = 0; d < startup_summaries_.size(); ++d) {
        const std::string gpu = devices_.size() > 1 ? "GPU " + std::to_string(d) + ": " : std::string();
        summary += (summary.empty() ? "" : "; ") + gpu + startup_summaries_[d];
      }
      log_info("Ready: " + summary);
      if (notifier_ != nullptr) (void)notifier_->ready("ready: " + summary);
    }
  }
}

ServerSnapshot Server::snapshot(bool include_sessions) const {
  ServerSnapshot s;
  s.server_version = options_.server_version;
  s.state = state_.load();
  s.uptime_s =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(SteadyClock::now() - started_).count());
  s.results = store_.total();
  for (const auto& device : devices_) s.devices.push_back(snapshot_device(*device, store_.bytes_on(device->index())));
  // Serving, but not from every GPU it was given.
  if (s.state == wire::DaemonState::READY &&
      std::any_of(devices_.begin(), devices_.end(), [](const auto& d) { return d->lost(); })) {
    s.state = wire::DaemonState::DEGRADED;
  }
  s.queue = scheduler_->stats();
  s.metrics = metrics_.snapshot();
  s.regions = registry_.stats();
  s.handles_expired = store_.expired_count();
  s.sessions_open = static_cast<uint32_t>(sessions_.size());
  if (include_sessions) {
    for (const Session* session : sessions_.all()) {
      SessionSnapshot out;
      out.client_name = session->name;
      out.pid = static_cast<uint32_t>(session->peer.pid);
      out.uid = static_cast<uint32_t>(session->peer.uid);
      out.remote = session->kind == SessionKind::kRemote;
      out.regions = registry_.usage(session->client);
      out.results = store_.usage(session->client);
      s.sessions.push_back(std::move(out));
    }
  }
  return s;
}

}  // namespace recon::daemon
