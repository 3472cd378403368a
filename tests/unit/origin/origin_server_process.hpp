// Test support: tests/origin_server.py run as a child process on a free loopback port, with
// blocking helpers for its control and stats endpoints (plain POSIX sockets, two-second
// receive timeouts, so a stuck server fails a check instead of hanging the test).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>

#include <cstdlib>
#include <string>
#include "../loopback_client.hpp"

namespace corral::test {

class OriginServerProcess {
 public:
  OriginServerProcess() {
    const char* source = std::getenv("CORRAL_SOURCE_DIR");
    const std::string script =
        std::string(source ? source : CORRAL_SOURCE_DIR) + "/tests/origin_server.py";
    int out[2];
    REQUIRE(pipe(out) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      execl("/usr/bin/python3", "python3", script.c_str(), "0", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    // The first line is the port; then stdout stays open (and unread) until the server exits.
    std::string line;
    char c = 0;
    while (read(out[0], &c, 1) == 1 && c != '\n') line.push_back(c);
    close(out[0]);
    port_ = static_cast<unsigned short>(std::atoi(line.c_str()));
    REQUIRE(port_ != 0);
  }
  ~OriginServerProcess() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  OriginServerProcess(const OriginServerProcess&) = delete;
  OriginServerProcess& operator=(const OriginServerProcess&) = delete;

  unsigned short port() const { return port_; }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // POST /_control with a JSON document (see tests/origin_server.py).
  void control(const std::string& json) {
    const std::string reply = exchange(
        "POST /_control HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(json.size()) +
        "\r\nConnection: close\r\n\r\n" + json);
    REQUIRE(reply.starts_with("HTTP/1.1 200"));
  }
  void reset() { control(R"({"reset": true})"); }
  std::string stats() {
    return exchange("GET /_stats HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  }
  int connections() { return number_after(stats(), "\"connections\": "); }
  int requests(const std::string& path) {
    const std::string text = stats();
    const auto section = text.find("\"requests\": {");
    const auto end = text.find('}', section);
    const auto at = text.find("\"" + path + "\": ", section);
    if (section == std::string::npos || at == std::string::npos || at > end) return 0;
    return number_after(text.substr(at), "\"" + path + "\": ");
  }

 private:
  static int number_after(const std::string& text, const std::string& label) {
    const auto at = text.find(label);
    return at == std::string::npos ? -1 : std::atoi(text.c_str() + at + label.size());
  }

  std::string exchange(const std::string& request) {
    const int fd = connect_loopback(port_);
    std::string reply;
    if (fd < 0) return reply;
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      for (ssize_t n; (n = recv(fd, buffer, sizeof buffer, 0)) > 0;) reply.append(buffer, n);
    }
    close(fd);
    return reply;
  }

  pid_t pid_ = -1;
  unsigned short port_ = 0;
};

}  // namespace corral::test
