// CONFIG SET slowlog-log-slower-than / slowlog-max-len sent through Corral: SLOWLOG through Corral
// answers from Corral's log, so once the upstream accepts the settings Corral's log takes them too.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "upstream/reply_target.hpp"

namespace corral::slowlog {
class SlowLog;
}

namespace corral::proxy {

// `target`, or a target that applies the CONFIG SET's slowlog settings to `log` when the upstream
// answers +OK (a refused CONFIG SET changes nothing, in Redis as here). `argv` is the whole
// command (CONFIG SET name value ...); `log` outlives the io threads.
std::shared_ptr<upstream::ReplyTarget> follow_slowlog_config(
    std::span<const std::string_view> argv, slowlog::SlowLog& log,
    std::shared_ptr<upstream::ReplyTarget> target);

}  // namespace corral::proxy
