// INFO: the upstream's INFO with Corral's values for the fields that describe the proxy (process,
// port, uptime, clients) and Corral's own sections (# Proxy, # Cache) added; Corral's sections
// alone when the upstream cannot answer. On a Redis Cluster: Corral's sections and a per-node
// summary (cluster_admin.hpp), no node's own INFO.
#pragma once

#include <string>
#include <string_view>

#include "proxy/local/local_commands.hpp"

namespace corral::proxy {

// Forwards INFO when the call carries links (answering later), else answers Corral's sections.
Action info(LocalCall& call);

// The upstream's INFO text with every field named in `overrides` ("name:value\r\n" lines)
// replaced by Corral's value, in place; fields the upstream lacks are left out. Exposed for tests.
std::string merge_info_text(std::string_view upstream, std::string_view overrides);

}  // namespace corral::proxy
