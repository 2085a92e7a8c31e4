// FakeDaemon: sessions, regions, fake inference, fetch, release, status and management calls.
#include "fake_daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "daemon/ipc/id128.h"
#include "daemon/ipc/message_verify.h"
#include "daemon/ipc/region_channel.h"
#include "daemon/ipc/wire_convert.h"
#include "schema/protocol.h"
#include "schema/request_generated.h"
#include "schema/response_generated.h"

namespace recon::test {
namespace {

using daemon::Id128;

struct Mapping {
  uint8_t* data = nullptr;
  size_t size = 0;
  Mapping() = default;
  Mapping(uint8_t* d, size_t s) : data(d), size(s) {}
  Mapping(Mapping&& o) noexcept : data(std::exchange(o.data, nullptr)), size(std::exchange(o.size, 0)) {}
  Mapping& operator=(Mapping&& o) noexcept {
    std::swap(data, o.data);
    std::swap(size, o.size);
    return *this;
  }
  ~Mapping() {
    if (data != nullptr) ::munmap(data, size);
  }
};

struct Tensor {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<float> values;
};

struct Session {
  Id128 token;
  std::string name;
  std::map<std::pair<uint64_t, uint64_t>, Mapping> regions;
  std::map<std::pair<uint64_t, uint64_t>, std::vector<Tensor>> handles;
};

std::pair<uint64_t, uint64_t> key(const Id128& id) {
  return {id.lo, id.hi};
}

Id128 random_id() {
  auto id = Id128::random();
  if (!id.is_ok()) throw std::runtime_error("getrandom failed");
  return id.value();
}

struct Delayed {
  std::chrono::steady_clock::time_point due;
  void* socket;
  std::vector<std::vector<uint8_t>> envelope;  // identity (+ delimiter)
  std::vector<uint8_t> answer;
};

}  // namespace

struct FakeDaemon::State {
  void* context = nullptr;
  void* client = nullptr;
  void* manager = nullptr;
  daemon::RegionChannelListener listener;
  std::map<int, daemon::RegionChannel> channels;              // by fd
  std::map<int, Id128> channel_session;                       // fd → session token
  std::map<std::pair<uint64_t, uint64_t>, Session> sessions;  // by token
  std::deque<Delayed> delayed;
  std::vector<std::string> model_names{"mast3r"};

  mutable std::mutex mutex;  // guards the knobs and counters below
  std::optional<std::tuple<wire::ErrorCode, std::string, uint32_t>> fail_next;
  bool bodyless_next = false;
  std::chrono::milliseconds infer_delay{0};
  bool swallow_infer = false;
  bool drop_sessions = false;
  Counters counters;
};

FakeDaemon::FakeDaemon() : state_(std::make_unique<State>()) {
  char tmpl[] = "/tmp/recon-fake-daemon-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  State& s = *state_;
  s.context = zmq_ctx_new();
  s.client = zmq_socket(s.context, ZMQ_ROUTER);
  s.manager = zmq_socket(s.context, ZMQ_ROUTER);
  const int linger = 0;
  zmq_setsockopt(s.client, ZMQ_LINGER, &linger, sizeof(linger));
  zmq_setsockopt(s.manager, ZMQ_LINGER, &linger, sizeof(linger));
  if (zmq_bind(s.client, ("ipc://" + dir_ + "/client.sock").c_str()) != 0 ||
      zmq_bind(s.manager, ("ipc://" + dir_ + "/manager.sock").c_str()) != 0) {
    throw std::runtime_error(std::string("zmq_bind: ") + zmq_strerror(zmq_errno()));
  }
  auto listener = daemon::RegionChannelListener::bind(dir_ + "/regions.sock");
  if (!listener.is_ok()) throw std::runtime_error(listener.status().to_string());
  s.listener = std::move(listener.value());
  (void)s.listener.set_nonblocking(true);
  thread_ = std::thread([this] { run(); });
}

FakeDaemon::~FakeDaemon() {
  stop_ = true;
  thread_.join();
  State& s = *state_;
  s.channels.clear();
  s.sessions.clear();
  zmq_close(s.client);
  zmq_close(s.manager);
  zmq_ctx_term(s.context);
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

client::ConnectOptions FakeDaemon::connect_options() const {
  auto options = client::ConnectOptions::in_directory(dir_);
  options.timeout = std::chrono::seconds(10);
  options.client_name = "fake-daemon-test";
  return options;
}

void FakeDaemon::fail_next(wire::ErrorCode code, const std::string& message, uint32_t retry_after_ms) {
  std::lock_guard lock(state_->mutex);
  state_->fail_next = std::make_tuple(code, message, retry_after_ms);
}

void FakeDaemon::answer_next_without_body() {
  std::lock_guard lock(state_->mutex);
  state_->bodyless_next = true;
}

void FakeDaemon::set_infer_delay(std::chrono::milliseconds delay) {
  std::lock_guard lock(state_->mutex);
  state_->infer_delay = delay;
}

void FakeDaemon::set_swallow_infer(bool swallow) {
  std::lock_guard lock(state_->mutex);
  state_->swallow_infer = swallow;
}

void FakeDaemon::drop_sessions() {
  std::lock_guard lock(state_->mutex);
  state_->drop_sessions = true;
}

FakeDaemon::Counters FakeDaemon::counters() const {
  std::lock_guard lock(state_->mutex);
  return state_->counters;
}

float FakeDaemon::expected_value(const std::string& name, int x, int y, int c, const uint8_t* rgb) {
  if (name.rfind("pts3d_", 0) == 0) {
    if (c == 0) return static_cast<float>(x);
    if (c == 1) return static_cast<float>(y);
    return 1.0f + static_cast<float>(rgb[0]) / 255.0f;
  }
  if (name.rfind("conf_", 0) == 0) return 1.0f + static_cast<float>(rgb[1]);
  if (name.rfind("desc_conf_", 0) == 0) return 2.0f + static_cast<float>(rgb[2]);
  return static_cast<float>(c) * 0.5f + static_cast<float>(rgb[c % 3]);  // desc_*
}

namespace {

std::vector<uint8_t> error_answer(uint64_t request_id, wire::ErrorCode code, const std::string& message,
                                  uint32_t retry_after_ms = 0) {
  flatbuffers::FlatBufferBuilder b(256);
  const auto text = b.CreateString(message);
  const auto body = wire::CreateError(b, code, text, retry_after_ms);
  daemon::finish_response(b, request_id, wire::ResponseBody::Error, body.Union());
  return daemon::to_bytes(b);
}

// Reads one image of a request out of the session's regions: packed RGB rows, or an error text.
std::string read_image(Session& session, const wire::Image* image, int& width, int& height,
                       std::vector<uint8_t>& pixels) {
  if (image == nullptr || image->source_type() != wire::ImageSource::ImageRef) return "image must be an ImageRef";
  const wire::ImageRef* ref = image->source_as_ImageRef();
  const Id128 id = daemon::from_wire(ref->region_id());
  const auto it = session.regions.find(key(id));
  if (it == session.regions.end()) return "region not found";
  width = static_cast<int>(ref->width());
  height = static_cast<int>(ref->height());
  const uint64_t row = uint64_t{ref->width()} * 3;
  if (width == 0 || height == 0 || ref->stride() < row ||
      ref->offset() + uint64_t{ref->stride()} * (ref->height() - 1) + row > it->second.size) {
    return "image outside its region";
  }
  pixels.resize(static_cast<size_t>(row * ref->height()));
  for (uint32_t y = 0; y < ref->height(); ++y) {
    std::memcpy(pixels.data() + y * row, it->second.data + ref->offset() + uint64_t{y} * ref->stride(), row);
  }
  return "";
}

void add_view_tensors(std::vector<Tensor>& out, int view, int width, int height, const std::vector<uint8_t>& rgb) {
  const std::string s = std::to_string(view);
  const uint64_t h = static_cast<uint64_t>(height), w = static_cast<uint64_t>(width);
  const struct {
    std::string name;
    int channels;
  } specs[] = {{"pts3d_" + s, 3}, {"conf_" + s, 0}, {"desc_" + s, 24}, {"desc_conf_" + s, 0}};
  for (const auto& spec : specs) {
    Tensor t;
    t.name = spec.name;
    t.shape = spec.channels > 0 ? std::vector<uint64_t>{h, w, static_cast<uint64_t>(spec.channels)}
                                : std::vector<uint64_t>{h, w};
    const int c_count = std::max(1, spec.channels);
    t.values.resize(h * w * static_cast<uint64_t>(c_count));
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        const uint8_t* p = &rgb[(static_cast<size_t>(y) * width + x) * 3];
        for (int c = 0; c < c_count; ++c) {
          t.values[(static_cast<size_t>(y) * width + x) * c_count + c] = FakeDaemon::expected_value(t.name, x, y, c, p);
        }
      }
    }
    out.push_back(std::move(t));
  }
}

flatbuffers::Offset<wire::TensorInfo> tensor_info(flatbuffers::FlatBufferBuilder& b, const Tensor& t) {
  return wire::CreateTensorInfo(b, b.CreateString(t.name), b.CreateVector(t.shape), wire::DType::F32,
                                t.values.size() * sizeof(float));
}

flatbuffers::Offset<wire::ModelStatus> model_status(flatbuffers::FlatBufferBuilder& b, const std::string& name) {
  const wire::Resolution res[] = {wire::Resolution(384, 512), wire::Resolution(288, 512)};
  return wire::CreateModelStatus(b, b.CreateString(name), b.CreateString("mast3r"), wire::ModelState::READY,
                                 wire::Precision::FP16, b.CreateVectorOfStructs(res, 2), 1234567, b.CreateString(""));
}

}  // namespace

void FakeDaemon::run() {
  State& s = *state_;
  while (!stop_) {
    {
      std::lock_guard lock(s.mutex);
      if (s.drop_sessions) {
        s.drop_sessions = false;
        s.channels.clear();
        s.channel_session.clear();
        s.sessions.clear();
        s.counters.sessions_open = 0;
        s.counters.regions_alive = 0;
        s.counters.handles_alive = 0;
      }
    }
    std::vector<zmq_pollitem_t> items;
    items.push_back({s.client, 0, ZMQ_POLLIN, 0});
    items.push_back({s.manager, 0, ZMQ_POLLIN, 0});
    items.push_back({nullptr, s.listener.fd(), ZMQ_POLLIN, 0});
    for (const auto& [fd, channel] : s.channels) items.push_back({nullptr, fd, ZMQ_POLLIN, 0});
    zmq_poll(items.data(), static_cast<int>(items.size()), 10);

    // Delayed answers that are due.
    const auto now = std::chrono::steady_clock::now();
    while (!s.delayed.empty() && s.delayed.front().due <= now) {
      Delayed d = std::move(s.delayed.front());
      s.delayed.pop_front();
      for (const auto& frame : d.envelope) zmq_send(d.socket, frame.data(), frame.size(), ZMQ_SNDMORE);
      zmq_send(d.socket, d.answer.data(), d.answer.size(), 0);
    }

    if ((items[2].revents & ZMQ_POLLIN) != 0) {
      auto channel = s.listener.accept();
      if (channel.is_ok()) {
        const int fd = channel->fd();
        s.channels.emplace(fd, std::move(channel.value()));
      }
    }
    for (size_t i = 3; i < items.size(); ++i) {
      if ((items[i].revents & (ZMQ_POLLIN | ZMQ_POLLERR)) == 0) continue;
      const int fd = items[i].fd;
      daemon::RegionChannel& channel = s.channels.at(fd);
      auto message = channel.receive();
      if (!message.is_ok() || message->event == daemon::ReceiveEvent::kPeerClosed) {
        std::lock_guard lock(s.mutex);
        if (auto it = s.channel_session.find(fd); it != s.channel_session.end()) {
          auto session = s.sessions.find(key(it->second));
          if (session != s.sessions.end()) {
            s.counters.regions_alive -= static_cast<int>(session->second.regions.size());
            s.counters.handles_alive -= static_cast<int>(session->second.handles.size());
            s.sessions.erase(session);
          }
          s.channel_session.erase(it);
          --s.counters.sessions_open;
        }
        s.channels.erase(fd);
        continue;
      }
      if (message->event != daemon::ReceiveEvent::kMessage) continue;
      auto request = daemon::verify_request(message->bytes, daemon::kSideChannelLimits);
      if (!request.is_ok()) {
        (void)channel.send(daemon::error_response(0, request.status()));
        continue;
      }
      const wire::Request* r = request.value();
      flatbuffers::FlatBufferBuilder b(256);
      std::lock_guard lock(s.mutex);
      switch (r->body_type()) {
        case wire::RequestBody::OpenSession: {
          Session session;
          session.token = random_id();
          const auto* name = r->body_as_OpenSession()->client_name();
          session.name = name ? name->str() : "";
          s.counters.last_client_name = session.name;
          s.channel_session[fd] = session.token;
          const wire::Id128 token = daemon::to_wire(session.token);
          s.sessions.emplace(key(session.token), std::move(session));
          ++s.counters.sessions_opened;
          ++s.counters.sessions_open;
          const auto limits = wire::CreateSessionLimits(b, 64, uint64_t{4} << 30, 256, 0, 64 << 20);
          const auto body = wire::CreateSessionOpened(b, &token, limits, b.CreateString("fake-recond 0.1.0"), 1, 1);
          daemon::finish_response(b, r->request_id(), wire::ResponseBody::SessionOpened, body.Union());
          break;
        }
        case wire::RequestBody::RegisterRegion: {
          Session& session = s.sessions.at(key(s.channel_session.at(fd)));
          const int memfd = message->fd.get();
          struct stat st {};
          ::fstat(memfd, &st);
          s.counters.last_region_seals = static_cast<uint32_t>(::fcntl(memfd, F_GET_SEALS));
          void* data = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
          if (data == MAP_FAILED) {
            (void)channel.send(error_answer(r->request_id(), wire::ErrorCode::INVALID_ARGUMENT, "cannot map"));
            continue;
          }
          const Id128 id = random_id();
          session.regions.emplace(key(id), Mapping(static_cast<uint8_t*>(data), static_cast<size_t>(st.st_size)));
          ++s.counters.regions_registered;
          ++s.counters.regions_alive;
          const wire::Id128 wire_id = daemon::to_wire(id);
          const auto body = wire::CreateRegisterRegionResult(b, &wire_id, static_cast<uint64_t>(st.st_size), false);
          daemon::finish_response(b, r->request_id(), wire::ResponseBody::RegisterRegionResult, body.Union());
          break;
        }
        case wire::RequestBody::UnregisterRegion: {
          Session& session = s.sessions.at(key(s.channel_session.at(fd)));
          const Id128 id = daemon::from_wire(r->body_as_UnregisterRegion()->region_id());
          if (session.regions.erase(key(id)) == 0) {
            (void)channel.send(error_answer(r->request_id(), wire::ErrorCode::NOT_FOUND, "no such region"));
            continue;
          }
          ++s.counters.regions_unregistered;
          --s.counters.regions_alive;
          const auto body = wire::CreateUnregisterRegionResult(b, false);
          daemon::finish_response(b, r->request_id(), wire::ResponseBody::UnregisterRegionResult, body.Union());
          break;
        }
        default:
          (void)channel.send(error_answer(r->request_id(), wire::ErrorCode::INVALID_ARGUMENT, "not on this socket"));
          continue;
      }
      (void)channel.send(std::span<const uint8_t>(b.GetBufferPointer(), b.GetSize()));
    }

    for (int which = 0; which < 2; ++which) {
      if ((items[which].revents & ZMQ_POLLIN) == 0) continue;
      void* socket = which == 0 ? s.client : s.manager;
      const bool manager = which == 1;
      for (;;) {
        std::vector<std::vector<uint8_t>> frames;
        bool more = true;
        while (more) {
          zmq_msg_t frame;
          zmq_msg_init(&frame);
          if (zmq_msg_recv(&frame, socket, frames.empty() ? ZMQ_DONTWAIT : 0) < 0) {
            zmq_msg_close(&frame);
            break;
          }
          const auto* data = static_cast<const uint8_t*>(zmq_msg_data(&frame));
          frames.emplace_back(data, data + zmq_msg_size(&frame));
          more = zmq_msg_more(&frame) != 0;
          zmq_msg_close(&frame);
        }
        if (frames.size() < 2) break;
        std::vector<uint8_t> payload = std::move(frames.back());
        frames.pop_back();  // the envelope: identity (and a delimiter if the client sent one)

        std::vector<uint8_t> answer;
        std::chrono::milliseconds delay{0};
        bool swallow = false;
        auto request = daemon::copy_and_verify_request(payload);
        std::lock_guard lock(s.mutex);
        if (manager) ++s.counters.manager_requests;
        if (!request.is_ok()) {
          answer = daemon::error_response(0, request.status());
        } else if (s.bodyless_next) {
          s.bodyless_next = false;
          flatbuffers::FlatBufferBuilder b(64);
          wire::ResponseBuilder response(b);
          response.add_protocol_version(wire::kProtocolVersion);
          response.add_request_id((*request)->request_id());
          // Success bodies share their request's union number.
          response.add_body_type(static_cast<wire::ResponseBody>((*request)->body_type()));
          b.Finish(response.Finish(), wire::ResponseIdentifier());
          answer.assign(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
        } else if (s.fail_next) {
          const auto [code, message, retry] = *s.fail_next;
          s.fail_next.reset();
          answer = error_answer((*request)->request_id(), code, message, retry);
        } else {
          const wire::Request* r = request->get();
          const uint64_t id = r->request_id();
          flatbuffers::FlatBufferBuilder b(1024);
          Session* session = nullptr;
          if (r->session() != nullptr) {
            auto it = s.sessions.find(key(daemon::from_wire(r->session())));
            if (it != s.sessions.end()) session = &it->second;
          }
          const auto need_session = [&]() {
            if (session == nullptr) answer = error_answer(id, wire::ErrorCode::NOT_FOUND, "session not found");
            return session != nullptr;
          };
          const auto manager_only = [&]() {
            if (!manager) answer = error_answer(id, wire::ErrorCode::PERMISSION_DENIED, "manager socket only");
            return manager;
          };
          switch (r->body_type()) {
            case wire::RequestBody::InferPair: {
              if (!need_session()) break;
              const wire::InferPair* infer = r->body_as_InferPair();
              int w1 = 0, h1 = 0, w2 = 0, h2 = 0;
              std::vector<uint8_t> rgb1, rgb2;
              std::string why = read_image(*session, infer->image1(), w1, h1, rgb1);
              if (why.empty()) why = read_image(*session, infer->image2(), w2, h2, rgb2);
              if (!why.empty()) {
                answer = error_answer(id, wire::ErrorCode::INVALID_ARGUMENT, why);
                break;
              }
              std::vector<Tensor> tensors;
              add_view_tensors(tensors, 1, w1, h1, rgb1);
              add_view_tensors(tensors, 2, w2, h2, rgb2);
              const Id128 handle = random_id();
              std::vector<flatbuffers::Offset<wire::TensorInfo>> infos;
              for (const Tensor& t : tensors) infos.push_back(tensor_info(b, t));
              const wire::Id128 wire_handle = daemon::to_wire(handle);
              const auto timings = wire::CreateTimings(b, 1000, 2000, 3'000'000, 4000, 3'100'000, 1);
              const auto result = wire::CreateResultHandle(b, &wire_handle, b.CreateVector(infos), timings, 300000,
                                                           b.CreateString("mast3r"));
              const auto body = wire::CreateInferPairResult(b, result);
              daemon::finish_response(b, id, wire::ResponseBody::InferPairResult, body.Union());
              answer = daemon::to_bytes(b);
              session->handles.emplace(key(handle), std::move(tensors));
              ++s.counters.infers;
              ++s.counters.handles_alive;
              delay = s.infer_delay;
              swallow = s.swallow_infer;
              break;
            }
            case wire::RequestBody::Fetch: {
              if (!need_session()) break;
              const wire::Fetch* fetch = r->body_as_Fetch();
              auto handle = session->handles.find(key(daemon::from_wire(fetch->handle())));
              if (handle == session->handles.end()) {
                answer = error_answer(id, wire::ErrorCode::NOT_FOUND, "handle not found");
                break;
              }
              if (fetch->destination_type() != wire::FetchDestination::RegionDestination) {
                answer = error_answer(id, wire::ErrorCode::UNIMPLEMENTED, "inline fetch");
                break;
              }
              const wire::RegionDestination* dst = fetch->destination_as_RegionDestination();
              auto region = session->regions.find(key(daemon::from_wire(dst->region_id())));
              if (region == session->regions.end()) {
                answer = error_answer(id, wire::ErrorCode::NOT_FOUND, "destination region not found");
                break;
              }
              std::vector<const Tensor*> wanted;
              s.counters.last_fetch_names.clear();
              for (const Tensor& t : handle->second) {
                bool asked = fetch->tensors() == nullptr || fetch->tensors()->size() == 0;
                if (fetch->tensors() != nullptr) {
                  for (const auto* n : *fetch->tensors()) asked = asked || n->str() == t.name;
                }
                if (asked) wanted.push_back(&t);
              }
              const uint64_t alignment = dst->alignment() == 0 ? 256 : dst->alignment();
              const uint64_t end = dst->capacity() == 0 ? region->second.size : dst->offset() + dst->capacity();
              uint64_t at = dst->offset(), written = 0;
              std::vector<flatbuffers::Offset<wire::FetchedTensor>> fetched;
              bool fits = true;
              for (const Tensor* t : wanted) {
                at = (at + alignment - 1) / alignment * alignment;
                const uint64_t bytes = t->values.size() * sizeof(float);
                if (at + bytes > end || end > region->second.size) {
                  fits = false;
                  break;
                }
                std::memcpy(region->second.data + at, t->values.data(), bytes);
                fetched.push_back(wire::CreateFetchedTensor(b, tensor_info(b, *t), at));
                s.counters.last_fetch_names.push_back(t->name);
                at += bytes;
                written += bytes;
              }
              if (!fits) {
                answer = error_answer(id, wire::ErrorCode::RESOURCE_EXHAUSTED, "destination too small");
                break;
              }
              const wire::Id128 wire_handle = daemon::to_wire(daemon::from_wire(fetch->handle()));
              const auto body =
                  wire::CreateFetchResult(b, &wire_handle, b.CreateVector(fetched), written, 5000, fetch->release());
              daemon::finish_response(b, id, wire::ResponseBody::FetchResult, body.Union());
              answer = daemon::to_bytes(b);
              ++s.counters.fetches;
              if (fetch->release()) {
                session->handles.erase(handle);
                ++s.counters.releases;
                --s.counters.handles_alive;
              }
              break;
            }
            case wire::RequestBody::Release: {
              if (!need_session()) break;
              uint32_t released = 0;
              std::vector<wire::Id128> not_found;
              if (r->body_as_Release()->handles() != nullptr) {
                for (const wire::Id128* h : *r->body_as_Release()->handles()) {
                  if (session->handles.erase(key(daemon::from_wire(h))) != 0) {
                    ++released;
                  } else {
                    not_found.push_back(*h);
                  }
                }
              }
              s.counters.releases += static_cast<int>(released);
              s.counters.handles_alive -= static_cast<int>(released);
              const auto body = wire::CreateReleaseResult(b, released, b.CreateVectorOfStructs(not_found));
              daemon::finish_response(b, id, wire::ResponseBody::ReleaseResult, body.Union());
              answer = daemon::to_bytes(b);
              break;
            }
            case wire::RequestBody::GetStatus: {
              ++s.counters.status_requests;
              const bool sessions = r->body_as_GetStatus()->include_sessions();
              if (sessions && !manager_only()) break;
              const auto pool = wire::CreatePoolStats(b, 64 << 20, 16 << 20, 32 << 20, 10, 2, 3);
              const char* caps[] = {"fp16", "subgroup"};
              const auto device = wire::CreateDeviceStatus(
                  b, 0, b.CreateString("FakeGPU 9000"), 0x10de, 0x2330, b.CreateString("1.0"), b.CreateString("1.3"), 0,
                  b.CreateVectorOfStrings(std::vector<std::string>(caps, caps + 2)), uint64_t{80} << 30,
                  uint64_t{78} << 30, uint64_t{2} << 30, pool, 1234567, 0);
              std::vector<flatbuffers::Offset<wire::ModelStatus>> models;
              for (const std::string& m : s.model_names) models.push_back(model_status(b, m));
              const auto queue = wire::CreateQueueStats(b, 1, 2, 256, 3);
              const auto throughput = wire::CreateThroughputStats(b, 100, 1, 100, 50, 12.5, 60);
              std::vector<flatbuffers::Offset<wire::LatencyStats>> latency = {
                  wire::CreateLatencyStats(b, b.CreateString("compute"), 100, 80000, 90000, 99000, 120000),
                  wire::CreateLatencyStats(b, b.CreateString("total"), 100, 81000, 91000, 100000, 121000)};
              std::vector<flatbuffers::Offset<wire::SessionStatus>> session_list;
              if (sessions) {
                for (const auto& [k, sess] : s.sessions) {
                  session_list.push_back(wire::CreateSessionStatus(b, b.CreateString(sess.name), 42, 1000,
                                                                   static_cast<uint32_t>(sess.regions.size()), 0,
                                                                   static_cast<uint32_t>(sess.handles.size()), 0));
                }
              }
              const auto body = wire::CreateStatusReport(
                  b, b.CreateString("fake-recond 0.1.0"), wire::DaemonState::READY, 3725,
                  b.CreateVector(std::vector{device}), b.CreateVector(models), queue, throughput,
                  b.CreateVector(latency), static_cast<uint32_t>(s.sessions.size()), 0,
                  sessions ? b.CreateVector(session_list) : 0);
              daemon::finish_response(b, id, wire::ResponseBody::StatusReport, body.Union());
              answer = daemon::to_bytes(b);
              break;
            }
            case wire::RequestBody::Warmup: {
              if (!manager_only()) break;
              std::vector<flatbuffers::Offset<wire::ModelStatus>> models;
              for (const std::string& m : s.model_names) models.push_back(model_status(b, m));
              const auto body = wire::CreateWarmupResult(b, b.CreateVector(models), 42);
              daemon::finish_response(b, id, wire::ResponseBody::WarmupResult, body.Union());
              answer = daemon::to_bytes(b);
              break;
            }
            case wire::RequestBody::LoadModel: {
              if (!manager_only()) break;
              const wire::LoadModel* load = r->body_as_LoadModel();
              const std::string name = load->name()->str();
              const auto text = [](const flatbuffers::String* t) { return t != nullptr ? t->str() : std::string("-"); };
              s.counters.last_load = text(load->weights()) + " " + text(load->kind()) + " " +
                                     std::to_string(load->version()) + " " + text(load->backbone());
              s.model_names.push_back(name);
              const auto body = wire::CreateLoadModelResult(b, model_status(b, name), 7);
              daemon::finish_response(b, id, wire::ResponseBody::LoadModelResult, body.Union());
              answer = daemon::to_bytes(b);
              break;
            }
            case wire::RequestBody::UnloadModel: {
              if (!manager_only()) break;
              const std::string name = r->body_as_UnloadModel()->name()->str();
              const auto it = std::find(s.model_names.begin(), s.model_names.end(), name);
              if (it == s.model_names.end()) {
                answer = error_answer(id, wire::ErrorCode::NOT_FOUND, "model '" + name + "' is not loaded");
                break;
              }
              s.model_names.erase(it);
              const auto body = wire::CreateUnloadModelResult(b);
              daemon::finish_response(b, id, wire::ResponseBody::UnloadModelResult, body.Union());
              answer = daemon::to_bytes(b);
              break;
            }
            default:
              answer = error_answer(id, wire::ErrorCode::UNIMPLEMENTED, "not in the fake daemon");
          }
        }
        if (swallow) continue;
        if (delay.count() > 0) {
          s.delayed.push_back({std::chrono::steady_clock::now() + delay, socket, std::move(frames), std::move(answer)});
          continue;
        }
        for (const auto& frame : frames) zmq_send(socket, frame.data(), frame.size(), ZMQ_SNDMORE);
        zmq_send(socket, answer.data(), answer.size(), 0);
      }
    }
  }
}

}  // namespace recon::test
