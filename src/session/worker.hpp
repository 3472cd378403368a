// One io thread: its io_context, upstream connections and dispatcher. Sessions accepted for it
// live on it from start to end, so nothing here needs a lock.
#pragma once

#include <utility>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <thread>

#include "config/settings.hpp"
#include "metrics/metrics.hpp"
#include "proxy/dispatcher.hpp"
#include "proxy/process_info.hpp"
#include "stampede/read_through.hpp"
#include "upstream/pool.hpp"

namespace corral::session {

struct Worker {
  Worker(const config::Settings& config, metrics::ThreadStats& thread_stats,
         proxy::ProcessInfo& process_info, stampede::CacheRuntime& cache)
      : settings(config),
        stats(thread_stats),
        info(process_info),
        work(io.get_executor()),
        pool(io.get_executor(), config.upstream, &thread_stats,
             &process_info.ready_upstream_connections),
        read_through(io.get_executor(), cache, pool),
        dispatcher(config, pool, process_info, &read_through, &cache) {}

  const config::Settings& settings;
  metrics::ThreadStats& stats;
  proxy::ProcessInfo& info;
  boost::asio::io_context io{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work;
  upstream::Pool pool;
  stampede::ReadThrough read_through;
  proxy::Dispatcher dispatcher;
  std::thread thread;
};

}  // namespace corral::session
