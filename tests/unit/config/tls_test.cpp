// The tls and upstream.tls sections: what they accept, what they refuse, and the listener choice.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "test_support.hpp"

using namespace corral::config;
using namespace corral::config::test;

namespace {
// A readable file for the PEM keys (its contents are checked later, by tls/context).
std::string existing_file() {
  const auto path = std::filesystem::temp_directory_path() /
                    ("corral-tls-test-" + std::to_string(::getpid()) + ".pem");
  std::ofstream(path) << "not checked here\n";
  return path.string();
}
}  // namespace

TEST_CASE("tls.listen with cert and key adds a TLS listener beside the plain one", "[config]") {
  const auto file = existing_file();
  auto s = must_load("listen: 127.0.0.1:7000\ntls: {listen: 127.0.0.1:7001, cert: " + file +
                     ", key: " + file + ", ca: " + file + ", min_version: \"1.3\"}\n");
  REQUIRE(s.tls.listen);
  CHECK(s.tls.listen->port == 7001);
  CHECK(s.tls.files.ca == file);
  CHECK(s.tls.min_version == "1.3");
  CHECK(s.listen_plain);
  CHECK(s.tls.handshake_timeout == std::chrono::seconds(5));

  // Without `listen`, the TLS listener is the only one.
  s = must_load("tls: {listen: 127.0.0.1:7001, cert: " + file + ", key: " + file + "}\n");
  CHECK_FALSE(s.listen_plain);
  CHECK(must_load("threads: 1\n").listen_plain);
}

TEST_CASE("tls errors name the field", "[config][errors]") {
  const auto file = existing_file();
  CHECK(errors_of("tls: {cert: " + file + ", key: " + file + "}\n") ==
        std::vector<std::string>{"t.yaml:1: tls.listen: required: the TLS listener's address"});
  CHECK(errors_of("tls: {listen: 127.0.0.1:1, key: " + file + "}\n") ==
        std::vector<std::string>{"t.yaml:1: tls.cert: required with tls.listen"});
  CHECK(errors_of("tls: {listen: 127.0.0.1:1, cert: /nonexistent/c.pem, key: " + file + "}\n") ==
        std::vector<std::string>{
            "t.yaml:1: tls.cert: /nonexistent/c.pem: cannot read: No such file or directory"});
  CHECK(errors_of("tls: {listen: 127.0.0.1:1, cert: " + file + ", key: " + file +
                  ", min_version: \"1.1\"}\n") ==
        std::vector<std::string>{"t.yaml:1: tls.min_version: expected one of: 1.2, 1.3"});
}

TEST_CASE("rediss:// turns upstream TLS on; upstream.tls refines it", "[config]") {
  const auto file = existing_file();
  auto s = must_load("upstream: {address: rediss://cache.internal:6380, tls: {ca: " + file +
                     ", server_name: redis.internal, verify: false}}\n");
  CHECK(s.upstream.tls.enabled);
  CHECK(s.upstream.tls.files.ca == file);
  CHECK(s.upstream.tls.server_name == "redis.internal");
  CHECK_FALSE(s.upstream.tls.verify);
  CHECK_FALSE(must_load("upstream: {address: redis://h:1}\n").upstream.tls.enabled);
  CHECK(errors_of("upstream: {cluster: [rediss://a:1, redis://b:2]}\n") ==
        std::vector<std::string>{
            "t.yaml:1: upstream.cluster[1]: seed nodes mix redis:// and rediss://"});
}
