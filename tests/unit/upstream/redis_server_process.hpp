// Test support: a redis-server child process on a free loopback port, without persistence,
// killed when the object goes (a failed REQUIRE included) and when the test process dies.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "../loopback_client.hpp"

namespace corral::test {

class RedisServerProcess {
 public:
  // `extra`: more redis-server options ("--cluster-enabled", "yes" ...).
  explicit RedisServerProcess(std::vector<std::string> extra = {}) {
    // A cluster node also listens on port + 10000 (its bus): keep that a valid, free port.
    const bool cluster = std::find(extra.begin(), extra.end(), "--cluster-enabled") != extra.end();
    for (int attempt = 0; attempt < 100; ++attempt) {
      port_ = free_port();
      if (!cluster || (port_ != 0 && port_ < 55536 && port_free(port_ + 10000))) break;
    }
    REQUIRE(port_ != 0);
    const std::string port = std::to_string(port_);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int quiet = open("/dev/null", O_WRONLY);
      dup2(quiet, STDOUT_FILENO);
      dup2(quiet, STDERR_FILENO);
      // A dump.rdb in the working directory would be loaded (a cluster node crashed loading
      // one with keys of another database): this server reads a file of its own, never there.
      const std::string dump = "corral-unit-" + port + "-never-written.rdb";
      std::vector<std::string> args{
          "redis-server", "--port", port,         "--bind",  "127.0.0.1",    "--save", "",
          "--appendonly", "no",     "--loglevel", "warning", "--dbfilename", dump};
      args.insert(args.end(), extra.begin(), extra.end());
      std::vector<char*> argv;
      for (auto& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execvp("redis-server", argv.data());
      _exit(127);
    }
    for (int attempt = 0; attempt < 100; ++attempt) {
      if (const int fd = connect_loopback(port_); fd >= 0) {
        close(fd);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    stop();
    FAIL("redis-server did not start on port " << port_);
  }
  ~RedisServerProcess() { stop(); }
  RedisServerProcess(const RedisServerProcess&) = delete;
  RedisServerProcess& operator=(const RedisServerProcess&) = delete;

  unsigned short port() const { return port_; }
  // SIGKILL: connections die without a goodbye, as when a host goes away.
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  static bool port_free(int port) {
    const int fd = connect_loopback(static_cast<unsigned short>(port));
    if (fd < 0) return true;
    close(fd);
    return false;
  }

  static unsigned short free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    unsigned short port = 0;
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0) {
      port = ntohs(address.sin_port);
    }
    close(fd);
    return port;
  }

  pid_t pid_ = -1;
  unsigned short port_ = 0;
};

}  // namespace corral::test
