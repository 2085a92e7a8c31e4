// Server: recond's request side — the I/O thread and everything it owns.
//
// Threads: run() is the I/O thread. It polls (zmq_poll) the ZeroMQ ROUTER sockets (client,
// manager, optional tcp), the regions side-channel listener and its connections, the metrics
// endpoint, the signalfd, a stop eventfd and the Outbox's eventfd; it verifies and admits every
// request, answers the cheap ones itself (status, release, errors) and queues the GPU work. One
// GpuWorker thread per device takes work from the Scheduler and posts answers to the Outbox;
// only the I/O thread touches sockets.
//
// Life cycle: run() starts the workers, whose first job loads and warms the models (state
// WARMING: inference is answered UNAVAILABLE, status works), then sends READY=1 (state READY).
// SIGTERM / request_stop(): STOPPING=1, queued requests are answered UNAVAILABLE, new ones too,
// the side-channel listener closes, in-flight work drains for at most drain_timeout, run()
// returns 0 (1 when start-up failed or the drain timed out: then workers_stuck() tells whether
// a worker thread is still inside the GPU and the process must _exit).
// A session whose side-channel connection closes (exit, crash, SIGKILL) loses its queued
// requests, result handles and regions at once; a request of it that is running completes and
// its result is dropped. A remote session (opened over ZeroMQ) ends the same way when the ZeroMQ
// connection that opened it closes, or after limits.remote_session_idle without traffic.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/ipc/message_verify.h"
#include "daemon/ipc/region_channel.h"
#include "daemon/ipc/region_service.h"
#include "daemon/ipc/shm_registry.h"
#include "daemon/server/connection_monitor.h"
#include "daemon/server/gpu_worker.h"
#include "daemon/server/infer_options.h"
#include "daemon/server/job_runner.h"
#include "daemon/server/metrics_http.h"
#include "daemon/server/outbox.h"
#include "daemon/server/peer_access.h"
#include "daemon/server/reply_route.h"
#include "daemon/server/server_snapshot.h"
#include "daemon/server/session_table.h"
#include "daemon/server/zmq_router.h"
#include "daemon/service/notify.h"
#include "daemon/service/signals.h"
#include "daemon/service/socket_activation.h"
#include "daemon/serving/device.h"
#include "daemon/serving/metrics.h"
#include "daemon/serving/model_repository.h"
#include "daemon/serving/model_request.h"
#include "daemon/serving/result_store.h"
#include "daemon/serving/scheduler.h"
#include "daemon/serving/server_options.h"
#include "daemon/serving/warmup.h"
#include "gpu/runtime.h"

namespace recon::daemon {

// The three listening sockets (socket-activated or bound by main/tests).
struct ServerSockets {
  Listener client;   // AF_UNIX stream: ZeroMQ ipc://
  Listener regions;  // AF_UNIX seqpacket: side channel
  Listener manager;  // AF_UNIX stream: ZeroMQ ipc://
};

// Where a ZeroMQ request came from: what the transport tells about the peer and its connection.
struct RequestOrigin {
  std::optional<PeerCredentials> peer;  // ipc:// peers (SO_PEERCRED)
  std::string address;                  // libzmq's Peer-Address (tcp: the IP address)
  int fd = -1;                          // the connection's descriptor (ConnectionMonitor)
};

// Test hooks; empty in the daemon.
struct ServerHooks {
  // Runs on the worker thread before every pair batch (tests hold requests in flight with it).
  std::function<void()> before_batch;
  // Runs on the worker thread before loading the models (tests hold the daemon in WARMING).
  std::function<void()> before_startup;
  // WorkerOptions::skip_models (the request fuzzer).
  std::function<bool()> skip_models;
  // WorkerOptions::device_lost (tests of a GPU that fails).
  std::function<bool(size_t)> device_lost;
};

class Server {
 public:
  // `runtimes`: one per device, outliving the server. `notifier` may be null (no sd_notify).
  static Result<std::unique_ptr<Server>> create(ServerOptions options, ServerSockets sockets,
                                                std::vector<gpu::Runtime*> runtimes, const Notifier* notifier,
                                                ServerHooks hooks = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The I/O loop; see the file comment. `signals` may be null (in-process tests).
  int run(SignalFd* signals = nullptr);
  // Thread-safe: stop as on SIGTERM.
  void request_stop();

  wire::DaemonState state() const { return state_.load(); }
  uint16_t metrics_port() const { return metrics_http_.port(); }
  // The bound tcp:// endpoint (with the real port when the configured one was "*"), or "".
  std::string tcp_endpoint() const { return tcp_router_ ? tcp_router_->endpoint() : std::string(); }
  bool workers_stuck() const { return workers_stuck_; }

 private:
  Server(ServerOptions options, const Notifier* notifier);

  // ---- server.cpp: life cycle and the loop ----
  Status init(ServerSockets sockets, std::vector<gpu::Runtime*> runtimes, ServerHooks hooks);
  void begin_stop(const std::string& why);
  void on_timers(SteadyClock::time_point now);
  bool workers_healthy(SteadyClock::time_point now) const;
  void deliver_outbox();
  // `final` false: a streamed partial answer, not counted as a request.
  void send_reply(const ReplyTarget& target, std::span<const uint8_t> bytes, StatusCode code, bool final = true);
  void reply_error(const ReplyTarget& target, const Status& status, uint32_t retry_after_ms = 0);
  void answer_dropped(const DroppedJobs& dropped, const Status& status);
  ZmqRouter* router(ReplySocket socket);
  ServerSnapshot snapshot(bool include_sessions) const;

  // ---- server_requests.cpp: ZeroMQ requests ----
  void drain_router(ReplySocket socket);
  void on_request(ReplySocket socket, ZmqIncoming incoming);
  // An immediate answer, or nullopt when the request was queued (answered by a worker).
  Result<std::optional<std::vector<uint8_t>>> dispatch(ReplySocket socket, const RequestOrigin& origin,
                                                       const wire::Request& request, ReplyTarget& target);
  Result<Session*> session_for(const wire::Request& request, ReplySocket socket,
                               const std::optional<PeerCredentials>& peer);
  // ---- server_model_requests.cpp: Infer, and the released verbs that are adapters onto it ----
  Result<std::optional<std::vector<uint8_t>>> on_infer(const wire::Infer& body, Session& session,
                                                       const ReplyTarget& target);
  Result<std::optional<std::vector<uint8_t>>> on_infer_pair(const wire::InferPair& body, Session& session,
                                                            const ReplyTarget& target);
  // server_batch.cpp
  Result<std::optional<std::vector<uint8_t>>> on_infer_batch(const wire::InferBatch& body, Session& session,
                                                             const ReplyTarget& target);
  Result<std::optional<std::vector<uint8_t>>> on_encode_retrieval(const wire::EncodeRetrieval& body, Session& session,
                                                                  const ReplyTarget& target);
  Result<std::optional<std::vector<uint8_t>>> on_match(const wire::Match& body, Session& session,
                                                       const ReplyTarget& target);
  // A ready model of that name, or a built-in kind's (match) when none is loaded under it.
  Result<ModelInfo> infer_model(const std::string& name) const;
  // The model's kind admits the request; its work goes to the scheduler.
  Status submit_model_request(ModelRequest request);
  // server_jobs.cpp: StartJob (admission of a long job; its answers come from the JobRunner).
  Result<std::optional<std::vector<uint8_t>>> on_start_job(const wire::StartJob& body, Session& session,
                                                           const ReplyTarget& target);
  Result<std::optional<std::vector<uint8_t>>> on_fetch(const wire::Fetch& body, Session& session,
                                                       const ReplyTarget& target);
  Result<std::vector<uint8_t>> on_release(const wire::Release& body, Session& session, uint64_t request_id);
  Result<std::vector<uint8_t>> on_open_remote_session(const wire::OpenSession& body, ReplySocket socket,
                                                      const RequestOrigin& origin, uint64_t request_id);
  ConnectionMonitor* monitor(ReplySocket socket);
  // Ends the remote sessions whose ZeroMQ connections on `socket` closed since the last call.
  void watch_connections(ReplySocket socket);

  // ---- server_admission.cpp: what every inference verb checks before it is queued ----
  Result<ModelInfo> ready_model(const std::string& name) const;
  // The model a request names (empty: `kind`'s default, which has the kind's name) is ready and
  // of `kind`, and the request's InferOptions hold for it.
  Result<std::pair<ModelInfo, InferSettings>> admit_inference(const char* verb, const flatbuffers::String* model,
                                                              const char* kind, const wire::InferOptions* options,
                                                              const ReplyTarget& target) const;
  // Every image of an image list (InferBatch, EncodeRetrieval, StartJob: 1..max_images of them).
  Result<std::vector<PendingImage>> accept_images(const char* verb,
                                                  const flatbuffers::Vector<flatbuffers::Offset<wire::Image>>* images,
                                                  const Session& session, const ImageRules& rules, uint32_t max_images);

  // ---- server_management.cpp: Warmup, LoadModel, UnloadModel ----
  Result<std::optional<std::vector<uint8_t>>> on_warmup(const wire::Warmup& body, const ReplyTarget& target);
  // The first device not lost (else device 0): its catalog stands for every device's, as management
  // runs on all of them.
  Device& catalog_device() const;
  // Runs `part` on the worker of every device not lost, one control item each; the last to finish
  // answers.
  Status submit_on_every_device(const ReplyTarget& target, const std::string& what,
                                std::function<Result<std::vector<uint8_t>>(Device&)> part);
  Result<std::optional<std::vector<uint8_t>>> on_load_model(const wire::LoadModel& body, const ReplyTarget& target);
  Result<std::optional<std::vector<uint8_t>>> on_unload_model(const wire::UnloadModel& body, const ReplyTarget& target);
  WarmupPlan plan_for(const std::vector<ImageSize>& resolutions) const;

  // ---- server_sessions.cpp: the regions side channel and session ends ----
  void accept_side_channels();
  // false when the connection ended (its session is gone).
  bool on_side_channel(size_t index);
  void end_session(ClientId client, const std::string& why);

  ServerOptions options_;
  const Notifier* notifier_;
  const ManagerPolicy manager_policy_;
  const VerifyLimits verify_limits_;
  const ModelRepository repository_;
  const SteadyClock::time_point started_ = SteadyClock::now();
  std::atomic<wire::DaemonState> state_{wire::DaemonState::STARTING};

  // Declaration order is destruction order reversed: workers (joined) go before the scheduler
  // (whose jobs hold leases and reservations), which goes before the store and the registry.
  ShmRegistry registry_;
  ResultStore store_;
  Metrics metrics_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::optional<Outbox> outbox_;
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<std::unique_ptr<GpuWorker>> workers_;
  std::unique_ptr<JobRunner> jobs_;  // its threads wait on steps the scheduler hands to workers
  std::unique_ptr<RegionService> region_service_;
  SessionTable sessions_;

  std::optional<ZmqContext> zmq_;  // before the routers: it is terminated after they close
  std::optional<ZmqRouter> client_router_;
  std::optional<ZmqRouter> manager_router_;
  std::optional<ZmqRouter> tcp_router_;
  // Connection ends on the sockets where remote sessions are opened (not the manager socket).
  std::optional<ConnectionMonitor> client_monitor_;
  std::optional<ConnectionMonitor> tcp_monitor_;
  RegionChannelListener regions_listener_;
  bool regions_listening_ = false;
  struct SideChannel {
    RegionChannel channel;
    ClientId client = 0;
  };
  std::vector<SideChannel> side_channels_;
  MetricsHttp metrics_http_;
  UniqueFd stop_event_;
  std::vector<std::string> bound_socket_files_;  // removed on exit (never activated ones)

  std::function<void()> before_startup_;
  std::optional<WatchdogPacer> pacer_;
  size_t startups_pending_ = 0;
  std::vector<std::string> startup_summaries_;
  bool stopping_ = false;
  SteadyClock::time_point drain_deadline_;
  int exit_code_ = 0;
  bool workers_stuck_ = false;
  SteadyClock::time_point last_timers_;
};

}  // namespace recon::daemon
