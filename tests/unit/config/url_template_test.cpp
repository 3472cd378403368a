// URL templates of the http origin: parsing (host, port, path), refusals, and key escaping.
#include "config/url_template.hpp"

#include <catch2/catch.hpp>
#include <string>

namespace {

using corral::config::redact_query;
using corral::config::redact_template;
using corral::config::url_escape;
using corral::config::UrlTemplate;

TEST_CASE("url_escape keeps only the RFC 3986 unreserved characters") {
  CHECK(url_escape("") == "");
  CHECK(url_escape("AZaz09-._~") == "AZaz09-._~");
  CHECK(url_escape("a b/c?d#e&f=g") == "a%20b%2Fc%3Fd%23e%26f%3Dg");
  CHECK(url_escape("feat:user:42") == "feat%3Auser%3A42");
  CHECK(url_escape("%{}+") == "%25%7B%7D%2B");
  CHECK(url_escape(std::string("\0\xff\x7f", 3)) == "%00%FF%7F");
  CHECK(url_escape("é") == "%C3%A9");  // UTF-8 bytes, upper-case hex
}

TEST_CASE("a template gives host, port, Host header and target") {
  auto t = UrlTemplate::parse("http://features:8080/v1/features/{key}");
  REQUIRE(t.ok());
  CHECK(t.host() == "features");
  CHECK(t.port() == 8080);
  CHECK(t.authority() == "features:8080");
  CHECK(t.target("feat:a", "feat:") == "/v1/features/feat%3Aa");
  CHECK(t.url("feat:a", "feat:") == "http://features:8080/v1/features/feat%3Aa");
}

TEST_CASE("the port defaults to 80 and the scheme is case-insensitive") {
  auto t = UrlTemplate::parse("HTTP://example.com/{suffix}");
  REQUIRE(t.ok());
  CHECK(t.host() == "example.com");
  CHECK(t.port() == 80);
  CHECK(t.authority() == "example.com");
  CHECK(t.target("feat:x", "feat:") == "/x");
}

TEST_CASE("{suffix} drops the prefix, {key} keeps it, both may repeat") {
  auto t = UrlTemplate::parse("http://h/{suffix}/{key}?k={key}&s={suffix}");
  REQUIRE(t.ok());
  CHECK(t.target("feat:a b", "feat:") == "/a%20b/feat%3Aa%20b?k=feat%3Aa%20b&s=a%20b");
  // A key without the prefix (not expected from the engine) keeps the whole key.
  CHECK(t.target("other", "feat:") == "/other/other?k=other&s=other");
  // An empty {suffix} would make an empty path segment: refused (the query may be empty).
  CHECK_FALSE(t.target("feat:", "feat:"));
}

TEST_CASE("a template with only a query gets the root path") {
  auto t = UrlTemplate::parse("http://127.0.0.1:9000?id={suffix}");
  REQUIRE(t.ok());
  CHECK(t.host() == "127.0.0.1");
  CHECK(t.port() == 9000);
  CHECK(t.target("p:1", "p:") == "/?id=1");
}

TEST_CASE("IPv6 literals keep their brackets in the Host header only") {
  auto t = UrlTemplate::parse("http://[::1]:8081/{key}");
  REQUIRE(t.ok());
  CHECK(t.host() == "::1");
  CHECK(t.port() == 8081);
  CHECK(t.authority() == "[::1]:8081");
  auto no_port = UrlTemplate::parse("http://[fe80::1]/{key}");
  REQUIRE(no_port.ok());
  CHECK(no_port.host() == "fe80::1");
  CHECK(no_port.port() == 80);
}

TEST_CASE("bad templates are refused with the reason") {
  struct Row {
    const char* text;
    const char* error;
  };
  const Row rows[] = {
      {"https://h/{key}", "https is not supported; use http://"},
      {"ftp://h/{key}", "must start with http://"},
      {"h/{key}", "must start with http://"},
      {"http:///{key}", "needs a host after http://"},
      {"http://:80/{key}", "needs a host after http://"},
      {"http://{key}.example/x", "placeholders are only allowed in the path, not in the host"},
      {"http://user:pw@h/{key}", "user info is not supported"},
      {"http://h:0/{key}", "port must be a number from 1 to 65535"},
      {"http://h:65536/{key}", "port must be a number from 1 to 65535"},
      {"http://h:8x/{key}", "port must be a number from 1 to 65535"},
      {"http://h:/{key}", "port must be a number from 1 to 65535"},
      {"http://[::1/{key}", "unbalanced [ ] around an IPv6 host"},
      {"http://[::1]x/{key}", "unexpected text after ]"},
      {"http://h/{key}#frag", "a fragment (#) is not allowed"},
      {"http://h/{key", "unbalanced { } in the template"},
      {"http://h/key}", "unbalanced { } in the template"},
      {"http://h/{id}", "unknown placeholder {id}; use {key} or {suffix}"},
      {"http://h/static", "must contain {key} or {suffix}"},
      {"http://h/v1/../{key}", "a \".\" or \"..\" path segment is not allowed"},
      {"http://h/./{key}", "a \".\" or \"..\" path segment is not allowed"},
      {"http://h/{key}/..", "a \".\" or \"..\" path segment is not allowed"},
  };
  for (const Row& row : rows) {
    INFO(row.text);
    auto t = UrlTemplate::parse(row.text);
    CHECK_FALSE(t.ok());
    CHECK(t.error() == row.error);
  }
}

TEST_CASE("a key that would make an empty or dot path segment gets no target") {
  auto t = UrlTemplate::parse("http://h/v1/features/{suffix}/config?id={suffix}");
  REQUIRE(t.ok());
  CHECK(t.target("feat:abc", "feat:") == "/v1/features/abc/config?id=abc");
  CHECK_FALSE(t.target("feat:..", "feat:"));
  CHECK_FALSE(t.target("feat:.", "feat:"));
  CHECK_FALSE(t.target("feat:", "feat:"));
  CHECK_FALSE(t.url("feat:..", "feat:"));
  // Dots inside a longer segment, or escaped separators, stay one harmless segment.
  CHECK(t.target("feat:...", "feat:") == "/v1/features/.../config?id=...");
  CHECK(t.target("feat:../x", "feat:") == "/v1/features/..%2Fx/config?id=..%2Fx");
  auto ext = UrlTemplate::parse("http://h/{suffix}.json");
  REQUIRE(ext.ok());
  CHECK(ext.target("p:..", "p:") == "/...json");
  CHECK(ext.target("p:", "p:") == "/.json");
  // In the query a dot or empty value is only a value.
  auto query = UrlTemplate::parse("http://h/get?id={suffix}");
  REQUIRE(query.ok());
  CHECK(query.target("p:..", "p:") == "/get?id=..");
  CHECK(query.target("p:", "p:") == "/get?id=");
}

TEST_CASE("error URLs show no query values; --check-config masks credential-like ones") {
  CHECK(redact_query("http://h/v1/x?api_key=s3cret&id=42") == "http://h/v1/x?api_key=***&id=***");
  CHECK(redact_query("http://h/v1/x") == "http://h/v1/x");
  CHECK(redact_query("http://h/?flag&e=") == "http://h/?flag&e=");
  auto t = UrlTemplate::parse("http://h/{key}?api_key=s3cret");
  REQUIRE(t.ok());
  CHECK(t.url("k", "") == "http://h/k?api_key=***");
  CHECK(redact_template("http://h/{key}?api_key=s3cret&Auth=x&id={suffix}&v=2&key={key}") ==
        "http://h/{key}?api_key=***&Auth=***&id={suffix}&v=2&key={key}");
}

}  // namespace
