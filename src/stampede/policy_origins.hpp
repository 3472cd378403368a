// Which origin serves each policy on an io thread: the upstream Redis, an HTTP service, and the
// fleet and versioned layers over them.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include "stampede/read_through.hpp"

namespace corral::upstream {
class Pool;
}

namespace corral::stampede {

class CacheRuntime;

// The production OriginFactory of one io thread; `pool` must outlive it.
OriginFactory policy_origins(const boost::asio::any_io_executor& executor, upstream::Pool& pool,
                             CacheRuntime& runtime);

}  // namespace corral::stampede
