// Conversion of StatusReport and ModelStatus tables into librecon's structs.
#include "status_convert.h"

namespace recon::client::detail {
namespace {

std::string str(const flatbuffers::String* s) {
  return s != nullptr ? s->str() : std::string();
}

template <typename T, typename Enum>
T clamp_enum(Enum value, T fallback, uint8_t max) {
  const auto raw = static_cast<uint8_t>(value);
  return raw <= max ? static_cast<T>(raw) : fallback;
}

}  // namespace

ModelStatus model_from_wire(const wire::ModelStatus* m) {
  ModelStatus out;
  if (m == nullptr) return out;
  out.name = str(m->name());
  out.kind = str(m->kind());
  out.state = clamp_enum(m->state(), ModelState::kFailed, static_cast<uint8_t>(ModelState::kUnloading));
  out.precision = clamp_enum(m->precision(), Precision::kDefault, static_cast<uint8_t>(Precision::kFp32Split));
  if (m->resolutions() != nullptr) {
    for (const wire::Resolution* r : *m->resolutions()) out.resolutions.push_back({r->height(), r->width()});
  }
  out.weight_bytes = m->weight_bytes();
  out.error = str(m->error());
  out.version = m->version();
  if (m->inputs() != nullptr) {
    for (const flatbuffers::String* name : *m->inputs()) out.inputs.push_back(str(name));
  }
  if (m->outputs() != nullptr) {
    for (const flatbuffers::String* name : *m->outputs()) out.outputs.push_back(str(name));
  }
  out.max_batch = std::max<uint32_t>(1, m->max_batch());
  out.max_queue_delay_us = m->max_queue_delay_us();
  out.requests = m->requests();
  out.inferences = m->inferences();
  out.executions = m->executions();
  out.queue_us = m->queue_us();
  out.compute_us = m->compute_us();
  out.image_size = m->image_size();
  out.patch_size = m->patch_size();
  out.square_ok = m->square_ok();
  return out;
}

DaemonStatus status_from_wire(const wire::StatusReport& r) {
  DaemonStatus out;
  out.server_version = str(r.server_version());
  out.state = clamp_enum(r.state(), DaemonState::kDegraded, static_cast<uint8_t>(DaemonState::kStopping));
  out.uptime = std::chrono::seconds(r.uptime_s());
  if (r.devices() != nullptr) {
    for (const wire::DeviceStatus* d : *r.devices()) {
      DeviceStatus device;
      device.index = d->index();
      device.name = str(d->name());
      device.vendor_id = d->vendor_id();
      device.device_id = d->device_id();
      device.driver_version = str(d->driver_version());
      device.api_version = str(d->api_version());
      if (d->uuid() != nullptr) device.uuid.assign(d->uuid()->begin(), d->uuid()->end());
      if (d->capabilities() != nullptr) {
        for (const flatbuffers::String* c : *d->capabilities()) device.capabilities.push_back(c->str());
      }
      device.device_local_total_bytes = d->device_local_total_bytes();
      device.device_local_budget_bytes = d->device_local_budget_bytes();
      device.device_local_used_bytes = d->device_local_used_bytes();
      if (const wire::PoolStats* p = d->pool()) {
        device.pool = {p->bytes_reserved(), p->bytes_in_use(), p->high_water_bytes(),
                       p->hits(),           p->misses(),       p->blocks()};
      }
      device.weight_bytes = d->weight_bytes();
      device.result_bytes = d->result_bytes();
      device.work_items = d->work_items();
      if (d->error() != nullptr) device.error = d->error()->str();
      out.devices.push_back(std::move(device));
    }
  }
  if (r.models() != nullptr) {
    for (const wire::ModelStatus* m : *r.models()) out.models.push_back(model_from_wire(m));
  }
  if (const wire::QueueStats* q = r.queue()) {
    out.queue = {q->pending(), q->in_flight(), q->capacity(), q->oldest_wait_ms()};
  }
  if (const wire::ThroughputStats* t = r.throughput()) {
    out.throughput = {t->requests_ok(), t->requests_failed(), t->inferences(),
                      t->executions(),  t->pairs_per_s(),     t->window_s()};
  }
  if (r.latency() != nullptr) {
    for (const wire::LatencyStats* l : *r.latency()) {
      out.latency.push_back({str(l->stage()), l->count(), l->p50_us(), l->p90_us(), l->p99_us(), l->max_us()});
    }
  }
  out.sessions_open = r.sessions_open();
  out.region_bytes = r.region_bytes();
  if (r.sessions() != nullptr) {
    for (const wire::SessionStatus* s : *r.sessions()) {
      SessionStatus session;
      session.client_name = str(s->client_name());
      session.pid = s->pid();
      session.uid = s->uid();
      session.regions = s->regions();
      session.handles = s->handles();
      session.region_bytes = s->region_bytes();
      session.result_bytes = s->result_bytes();
      out.sessions.push_back(std::move(session));
    }
  }
  return out;
}

}  // namespace recon::client::detail
