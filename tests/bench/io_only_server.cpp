// The "I/O only" benchmark target: Corral's session layer (listener, sessions, io threads) with the
// trivial MemoryHandler of the unit tests instead of the proxy, so scripts/bench.sh can show what
// the I/O layer alone costs next to the full proxy.
// Usage: io_only_server PORT [THREADS [TLS_PORT CERT KEY]]  (with TLS_PORT: also a TLS listener)
#include <utility>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <vector>

#include <spdlog/spdlog.h>

#include "../unit/session/memory_handler.hpp"
#include "config/settings.hpp"
#include "metrics/metrics.hpp"
#include "metrics/process_info.hpp"
#include "session/server.hpp"

int main(int argc, char** argv) {
  if (argc < 2 || (argc > 3 && argc != 6)) {
    std::cerr << "usage: io_only_server PORT [THREADS [TLS_PORT CERT KEY]]\n";
    return 2;
  }
  corral::config::Settings settings;
  settings.listen = {"127.0.0.1", static_cast<std::uint16_t>(std::atoi(argv[1]))};
  settings.threads = argc > 2 ? std::atoi(argv[2]) : 1;
  if (argc == 6) {
    settings.tls.listen =
        corral::config::Endpoint{"127.0.0.1", static_cast<std::uint16_t>(std::atoi(argv[3]))};
    settings.tls.files.cert = argv[4];
    settings.tls.files.key = argv[5];
  }
  spdlog::set_level(spdlog::level::warn);
  corral::metrics::Metrics metrics(static_cast<std::size_t>(settings.threads), 1,
                                   [](std::size_t) { return std::string("all"); });
  corral::metrics::ProcessInfo info;
  corral::session::Server server(settings, metrics, info);
  std::vector<std::unique_ptr<corral::test::MemoryHandler>> handlers;
  for (int i = 0; i < server.threads(); ++i) {
    handlers.push_back(std::make_unique<corral::test::MemoryHandler>(server.io(i).get_executor()));
    server.set_handler(i, *handlers.back());
  }
  try {
    server.run();
  } catch (const std::exception& error) {
    std::cerr << "io_only_server: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
