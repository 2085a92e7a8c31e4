// Metrics: counters and nearest-rank percentiles, the Prometheus text, the HTTP answer, and the
// ZeroMQ peer-address parsing the manager check relies on.
#include "daemon/serving/metrics.h"

#include <gtest/gtest.h>

#include "daemon/server/metrics_http.h"
#include "daemon/server/peer_access.h"
#include "daemon/server/prometheus_text.h"
#include "daemon/server/zmq_router.h"

namespace recon::daemon {
namespace {

TEST(Metrics, CountsRequestsAndComputesPercentiles) {
  Metrics metrics;
  for (int i = 1; i <= 100; ++i) {
    RequestTimings t;
    t.total_ns = uint64_t(i) * 1000;  // 1..100 µs
    t.queue_ns = 2000;
    metrics.record_timings(i <= 60 ? "a" : "b", t);
    metrics.record_request(StatusCode::kOk);
  }
  metrics.record_request(StatusCode::kNotFound);
  metrics.record_execution("a", 4);
  metrics.record_execution("b", 2);
  const MetricsSnapshot s = metrics.snapshot();
  EXPECT_EQ(s.requests_ok, 100u);
  EXPECT_EQ(s.requests_failed, 1u);
  EXPECT_EQ(s.failures_by_code[static_cast<size_t>(StatusCode::kNotFound)], 1u);
  EXPECT_EQ(s.inferences, 6u);
  EXPECT_EQ(s.executions, 2u);
  const LatencySummary& total = s.latency[static_cast<size_t>(Stage::kTotal)];
  EXPECT_EQ(total.count, 100u);
  EXPECT_EQ(total.p50_us, 50u);
  EXPECT_EQ(total.p90_us, 90u);
  EXPECT_EQ(total.p99_us, 99u);
  EXPECT_EQ(total.max_us, 100u);
  EXPECT_EQ(s.cumulative_us[static_cast<size_t>(Stage::kTotal)], 5050u);
  EXPECT_GT(s.pairs_per_s, 0.0);
  // Per model: requests answered, rows, engine calls, cumulative queue time.
  ASSERT_EQ(s.models.size(), 2u);
  EXPECT_EQ(s.models.at("a").requests, 60u);
  EXPECT_EQ(s.models.at("a").inferences, 4u);
  EXPECT_EQ(s.models.at("a").executions, 1u);
  EXPECT_EQ(s.models.at("a").queue_us, 120u);
  EXPECT_EQ(s.models.at("b").requests, 40u);
  EXPECT_EQ(s.models.at("b").inferences, 2u);
}

TEST(Metrics, RendersPrometheusTextAndAnswersOnlyGetMetrics) {
  ServerSnapshot s;
  s.state = wire::DaemonState::READY;
  s.metrics.requests_ok = 3;
  s.metrics.latency.push_back(LatencySummary{Stage::kTotal, 1, 5, 6, 7, 8});
  s.metrics.models["resnet"] = ModelCounters{5, 40, 6, 900, 1200};
  const std::string text = prometheus_text(s);
  EXPECT_NE(text.find("recon_model_inference_total{model=\"resnet\"} 40\n"), std::string::npos);
  EXPECT_NE(text.find("recon_model_execution_total{model=\"resnet\"} 6\n"), std::string::npos);
  EXPECT_NE(text.find("recon_model_queue_duration_us_total{model=\"resnet\"} 900\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE recon_request_success_total counter\nrecon_request_success_total 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("recon_up{state=\"ready\"} 1"), std::string::npos);
  EXPECT_NE(text.find("recon_inference_latency_us{stage=\"total\",quantile=\"0.99\"} 7"), std::string::npos);
  EXPECT_EQ(prometheus_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");

  auto render = [] { return std::string("x 1\n"); };
  EXPECT_EQ(http_answer("GET /metrics HTTP/1.1", render).rfind("HTTP/1.1 200 OK", 0), 0u);
  EXPECT_NE(http_answer("GET /metrics?x=1 HTTP/1.0", render).find("\r\n\r\nx 1\n"), std::string::npos);
  EXPECT_EQ(http_answer("POST /metrics HTTP/1.1", render).rfind("HTTP/1.1 405", 0), 0u);
  EXPECT_EQ(http_answer("GET / HTTP/1.1", render).rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(http_answer("garbage", render).rfind("HTTP/1.1 400", 0), 0u);
}

TEST(PeerAccess, ParsesZmqPeerAddressesAndChecksTheManagerPolicy) {
  auto peer = parse_peer_address("localhost:1000:100:4242");
  ASSERT_TRUE(peer);
  EXPECT_EQ(peer->uid, 1000u);
  EXPECT_EQ(peer->gid, 100u);
  EXPECT_EQ(peer->pid, 4242);
  EXPECT_FALSE(parse_peer_address("127.0.0.1"));
  EXPECT_FALSE(parse_peer_address(nullptr));
  EXPECT_FALSE(parse_peer_address("x:1:2:abc"));
  const ManagerPolicy policy{500, 600};
  EXPECT_TRUE(check_manager_access(policy, PeerCredentials{1, 0, 0}).is_ok()) << "root";
  EXPECT_TRUE(check_manager_access(policy, PeerCredentials{1, 500, 500}).is_ok()) << "the daemon's uid";
  EXPECT_TRUE(check_manager_access(policy, PeerCredentials{1, 4000, 600}).is_ok()) << "primary group";
  EXPECT_EQ(check_manager_access(policy, PeerCredentials{1, 4001, 4001}).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(check_manager_access(policy, std::nullopt).code(), StatusCode::kPermissionDenied) << "tcp peers";
}

}  // namespace
}  // namespace recon::daemon
