// GatewayService without sockets: routing by model and the retry/finish
// policy for an ended attempt, checked against the pool router's in-flight
// counts.
#include "services/gateway/gateway_service.h"

#include <gtest/gtest.h>

#include "core/clock.h"
#include "core/config.h"

namespace omni::gateway {
namespace {

std::unique_ptr<GatewayService> ThreeEndpoints(const FakeClock& clock, int max_attempts) {
  const char* yaml = R"(
plugins: [{type: queue-scorer}, {type: max-score-picker}]
schedulingProfiles:
- name: default
  plugins: [{pluginRef: queue-scorer, weight: 1}, {pluginRef: max-score-picker}]
pools:
- {name: llm, role: llm, models: [m], endpoints: ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"], schedulingProfile: default}
)";
  auto root = ParseYaml(yaml, "gw.yaml");
  OMNI_CHECK(root.ok()) << root.status().ToString();
  auto config = ParseGatewayConfig(*root);
  OMNI_CHECK(config.ok()) << config.status().ToString();
  auto service = GatewayService::Create(*config, GatewayOptions{.max_attempts = max_attempts, .seed = 1}, clock);
  OMNI_CHECK(service.ok()) << service.status().ToString();
  return std::move(service).value();
}

int InFlight(const RoutedRequest& r, int e) { return r.pool->router->Snapshot()[e].in_flight; }
int TotalInFlight(const RoutedRequest& r) {
  int n = 0;
  for (const auto& s : r.pool->router->Snapshot()) n += s.in_flight;
  return n;
}

RoutedRequest RouteOne(GatewayService& g) {
  HttpRequest req;
  req.path = "/v1/chat/completions";
  req.body = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
  auto routed = g.Route(req);
  OMNI_CHECK(routed.ok()) << routed.status().ToString();
  return *routed;
}

TEST(GatewayService, UnknownModelIsModelNotFoundWithTheServedList) {
  FakeClock clock;
  auto g = ThreeEndpoints(clock, 3);
  HttpRequest req;
  req.body = R"({"model":")" + std::string(5000, 'x') + R"("})";
  auto routed = g->Route(req);
  ASSERT_FALSE(routed.ok());
  EXPECT_EQ(routed.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(routed.status().error_code(), "model_not_found");
  EXPECT_LT(routed.status().message().size(), 200u);  // the name is not echoed whole
  EXPECT_NE(routed.status().message().find("[m]"), std::string::npos) << routed.status().message();
}

TEST(GatewayService, AnsweredAttemptFinishesOnItsEndpoint) {
  FakeClock clock;
  auto g = ThreeEndpoints(clock, 3);
  RoutedRequest r = RouteOne(*g);
  const int first = r.decision.chosen;
  EXPECT_EQ(InFlight(r, first), 1);
  AttemptVerdict v = g->OnAttemptEnd(r, AttemptEnd{.status = 200});
  EXPECT_EQ(v.action, AttemptVerdict::Action::kDeliver);
  EXPECT_FALSE(v.connect_failed);
  EXPECT_EQ(TotalInFlight(r), 0);
}

TEST(GatewayService, UnreachableEndpointIsRetriedOnTheNextUntilMaxAttempts) {
  FakeClock clock;
  auto g = ThreeEndpoints(clock, 2);
  RoutedRequest r = RouteOne(*g);
  const int first = r.decision.chosen;
  AttemptVerdict v = g->OnAttemptEnd(r, AttemptEnd{.status = Unavailable("connection refused")});
  EXPECT_EQ(v.action, AttemptVerdict::Action::kRetry);
  EXPECT_TRUE(v.connect_failed);
  EXPECT_NE(r.decision.chosen, first);
  EXPECT_EQ(InFlight(r, r.decision.chosen), 1);
  EXPECT_EQ(TotalInFlight(r), 1);  // moved, not duplicated
  // The second failure reaches max_attempts = 2: the request fails with 503.
  v = g->OnAttemptEnd(r, AttemptEnd{.status = Unavailable("connection refused")});
  EXPECT_EQ(v.action, AttemptVerdict::Action::kFail);
  EXPECT_EQ(v.error.code(), StatusCode::kUnavailable);
  EXPECT_NE(v.error.message().find("pool llm"), std::string::npos);
  EXPECT_EQ(TotalInFlight(r), 0);
}

TEST(GatewayService, NoRetryAfterBytesWentOutOrOnTimeoutOrWhenTheClientLeft) {
  FakeClock clock;
  auto g = ThreeEndpoints(clock, 3);
  RoutedRequest r = RouteOne(*g);
  AttemptVerdict v = g->OnAttemptEnd(r, AttemptEnd{.status = Unavailable("reset"), .responded = true});
  EXPECT_EQ(v.action, AttemptVerdict::Action::kCut);
  EXPECT_TRUE(v.connect_failed);
  EXPECT_EQ(TotalInFlight(r), 0);

  RoutedRequest t = RouteOne(*g);
  v = g->OnAttemptEnd(t, AttemptEnd{.status = DeadlineExceeded("timeout")});
  EXPECT_EQ(v.action, AttemptVerdict::Action::kFail);
  EXPECT_FALSE(v.connect_failed);
  EXPECT_EQ(v.error.code(), StatusCode::kDeadlineExceeded);

  RoutedRequest c = RouteOne(*g);
  v = g->OnAttemptEnd(c, AttemptEnd{.status = Cancelled("client left"), .client_gone = true});
  EXPECT_EQ(v.action, AttemptVerdict::Action::kClientGone);
  EXPECT_EQ(TotalInFlight(c), 0);
}

// Bytes already went out, so there is no retry: an event stream ends with
// the LLM server's error-event shape, whatever the cause (reset, close
// before the last chunk, read timeout); any other body is cut.
TEST(GatewayService, AFailureAfterBytesWentOutEndsAnEventStreamWithAnErrorEvent) {
  FakeClock clock;
  auto g = ThreeEndpoints(clock, 3);
  for (Status cause : {Unavailable("read response body from 127.0.0.1:9: partial message"),
                       DeadlineExceeded("read response body from 127.0.0.1:9: timeout"),
                       Internal("bad chunk")}) {
    RoutedRequest r = RouteOne(*g);
    const std::string address = r.pool->router->address(r.decision.chosen);
    AttemptVerdict v =
        g->OnAttemptEnd(r, AttemptEnd{.status = cause, .responded = true, .event_stream = true});
    EXPECT_EQ(v.action, AttemptVerdict::Action::kEndStream) << cause.ToString();
    EXPECT_FALSE(v.shutdown);
    EXPECT_EQ(v.connect_failed, cause.code() == StatusCode::kUnavailable);  // a dead upstream is ejected
    EXPECT_EQ(v.error.message(), "upstream " + address + " failed mid-stream: " + cause.message());
    EXPECT_EQ(v.error.error_code(), "upstream_failed");
    EXPECT_EQ(v.error.ToOpenAiJson(), R"({"error":{"code":"upstream_failed","message":"upstream )" + address +
                                          " failed mid-stream: " + cause.message() +
                                          R"(","param":null,"type":"server_error"}})");
    EXPECT_EQ(TotalInFlight(r), 0);

    RoutedRequest plain = RouteOne(*g);
    v = g->OnAttemptEnd(plain, AttemptEnd{.status = cause, .responded = true, .event_stream = false});
    EXPECT_EQ(v.action, AttemptVerdict::Action::kCut) << cause.ToString();
    EXPECT_EQ(TotalInFlight(plain), 0);
  }
}

TEST(GatewayService, TheDrainDeadlineEndsStreamsWithServerShutdownAndNeverRetries) {
  FakeClock clock;
  auto g = ThreeEndpoints(clock, 3);
  RoutedRequest s = RouteOne(*g);
  AttemptVerdict v = g->OnAttemptEnd(s, AttemptEnd{.status = Cancelled("request cancelled"), .responded = true,
                                                   .event_stream = true, .shutting_down = true});
  EXPECT_EQ(v.action, AttemptVerdict::Action::kEndStream);
  EXPECT_TRUE(v.shutdown);
  EXPECT_FALSE(v.connect_failed);  // the endpoint did nothing wrong
  EXPECT_EQ(v.error.error_code(), "server_shutdown");
  EXPECT_EQ(OpenAiErrorType(v.error.code()), "server_error");
  EXPECT_EQ(TotalInFlight(s), 0);

  RoutedRequest plain = RouteOne(*g);
  v = g->OnAttemptEnd(plain, AttemptEnd{.status = Cancelled("request cancelled"), .responded = true,
                                        .shutting_down = true});
  EXPECT_EQ(v.action, AttemptVerdict::Action::kCut);

  // Not answered yet: a 503 with the same code, not a retry elsewhere.
  RoutedRequest waiting = RouteOne(*g);
  v = g->OnAttemptEnd(waiting, AttemptEnd{.status = Cancelled("request cancelled"), .shutting_down = true});
  EXPECT_EQ(v.action, AttemptVerdict::Action::kFail);
  EXPECT_EQ(v.error.http_status(), 503);
  EXPECT_EQ(v.error.error_code(), "server_shutdown");
  EXPECT_EQ(waiting.attempts, 1);
  EXPECT_EQ(TotalInFlight(waiting), 0);

  // An upstream that finished before the cancel took effect is delivered.
  RoutedRequest done = RouteOne(*g);
  v = g->OnAttemptEnd(done, AttemptEnd{.status = 200, .responded = true, .event_stream = true,
                                       .shutting_down = true});
  EXPECT_EQ(v.action, AttemptVerdict::Action::kDeliver);
}

}  // namespace
}  // namespace omni::gateway
