// Entry point: parse flags, load the config, hand it to the wiring (app.hpp), run.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <variant>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "app.hpp"
#include "config/loader.hpp"
#include "config/settings_dump.hpp"
#include "config/weakened_settings.hpp"
#include "metrics/metrics.hpp"
#include "metrics/weakened_settings_metrics.hpp"
#include "proxy/dispatcher.hpp"
#include "tls/context.hpp"

namespace {

constexpr const char* kUsage =
    "Usage: corral [-c FILE | --config FILE]\n"
    "       corral --check-config FILE\n"
    "       corral --version | --help\n"
    "\n"
    "Corral is a Redis-protocol caching proxy. Without -c it runs with config/corral.yaml.\n"
    "  -c, --config FILE     run with this YAML config\n"
    "      --check-config F  validate F, print the effective settings, exit 0 (valid) or 1\n"
    "  -v, --version         print the version\n"
    "  -h, --help            print this help\n";

struct Options {
  std::string config = "config/corral.yaml";
  bool check_only = false;
};

// Returns the exit code to stop with, or -1 to go on.
int parse_flags(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool takes_file = flag == "-c" || flag == "--config" || flag == "--check-config";
    if (flag == "-h" || flag == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (flag == "-v" || flag == "--version") {
      std::cout << "corral " << CORRAL_VERSION << "\n";
      return 0;
    }
    if (!takes_file) {
      std::cerr << "corral: unknown option '" << flag << "'\n" << kUsage;
      return 2;
    }
    if (i + 1 >= argc) {
      std::cerr << "corral: " << flag << " needs a file name\n";
      return 2;
    }
    options.config = argv[++i];
    options.check_only = options.check_only || flag == "--check-config";
  }
  return -1;
}

// The certificate and key files load and match (the YAML check only sees that they are readable).
std::vector<std::string> tls_problems(const corral::config::Settings& settings) {
  std::vector<std::string> problems;
  if (settings.tls.listen) {
    if (auto built = corral::tls::make_server_context(settings.tls); !built.context) {
      problems.push_back("tls: " + built.error);
    }
  }
  if (settings.upstream.tls.enabled) {
    if (auto built = corral::tls::make_client_context(settings.upstream.tls); !built.context) {
      problems.push_back("upstream.tls: " + built.error);
    }
  }
  return problems;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (const int code = parse_flags(argc, argv, options); code >= 0) return code;

  auto loaded = corral::config::load_settings_file(options.config);
  if (auto* errors = std::get_if<corral::config::ConfigErrors>(&loaded)) {
    std::cerr << "corral: " << options.config << ": " << errors->messages.size()
              << " error(s) in the configuration:\n";
    for (const auto& message : errors->messages) std::cerr << "  " << message << "\n";
    return 1;
  }
  const auto& settings = std::get<corral::config::Settings>(loaded);
  if (const auto problems = tls_problems(settings); !problems.empty()) {
    std::cerr << "corral: " << options.config << ": " << problems.size()
              << " error(s) in the configuration:\n";
    for (const auto& problem : problems)
      std::cerr << "  " << options.config << ": " << problem << "\n";
    return 1;
  }
  const auto weakened = corral::config::weakened_settings(settings);
  if (options.check_only) {
    std::cout << corral::config::describe(settings) << options.config << ": OK\n";
    for (const auto& w : weakened)
      std::cerr << "corral: warning: " << w.setting << ": " << w.risk << "\n";
    return 0;
  }

  auto logger = spdlog::stderr_color_mt("corral");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(settings.log_level));
  for (const auto& w : weakened) spdlog::warn("{}: {}", w.setting, w.risk);

  corral::metrics::Metrics metrics(static_cast<std::size_t>(settings.threads),
                                   corral::proxy::Dispatcher::metric_id_count(),
                                   corral::proxy::Dispatcher::metric_name);
  const auto weakened_metrics = corral::metrics::make_weakened_settings_metrics(weakened);
  metrics.add_collectable(weakened_metrics);
  try {
    corral::App app(settings, metrics);
    app.run();
  } catch (const std::exception& error) {
    spdlog::critical("cannot start: {}", error.what());
    return 1;
  }
  return 0;
}
