// Which origin serves each policy on an io thread: the upstream Redis, an HTTP service, and the
// fleet and versioned layers over them.
#pragma once

#include <memory>

#include <boost/asio/any_io_executor.hpp>

#include "stampede/read/read_through.hpp"

namespace corral::upstream {
class KeyedCaller;
}

namespace corral::stampede {

class CacheRuntime;

// The production OriginFactory of one io thread; `fleet_caller` carries the fleet layer's
// conversations with Redis (by the key's slot on a cluster).
OriginFactory policy_origins(const boost::asio::any_io_executor& executor,
                             std::shared_ptr<upstream::KeyedCaller> fleet_caller,
                             CacheRuntime& runtime);

}  // namespace corral::stampede
