// The upstream's functions and their `no-writes` flag, from FUNCTION LIST, for FCALL under a
// CLIENT PAUSE WRITE. Process-wide: any io thread's pause asks, every thread reads.
#include "proxy/local/function_flags.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "resp/reply.hpp"
#include "upstream/reply_target.hpp"
#include "upstream/upstream.hpp"

namespace corral::proxy {

namespace {
constexpr std::string_view kFunctionList = "*2\r\n$8\r\nFUNCTION\r\n$4\r\nLIST\r\n";

struct KnownFunctions {
  std::mutex mutex;
  std::unordered_map<std::string, DeclaredWrites> by_name;
};

KnownFunctions& known() {
  static KnownFunctions* const functions = new KnownFunctions();  // io threads may outlive
  return *functions;                                              // static teardown
}

// A RESP2 map: name, value, name, value ... as an array.
const resp::Reply* field(const resp::Reply& map, std::string_view name) {
  if (map.type != resp::Reply::Type::array) return nullptr;
  for (std::size_t i = 0; i + 1 < map.elements.size(); i += 2) {
    if (map.elements[i].text == name) return &map.elements[i + 1];
  }
  return nullptr;
}

bool declares_no_writes(const resp::Reply& flags) {
  for (const auto& flag : flags.elements) {
    if (flag.text == "no-writes") return true;
  }
  return false;
}
}  // namespace

bool store_function_list(std::string_view reply) {
  const auto decoded = resp::decode_reply(reply);
  if (!decoded || decoded->type != resp::Reply::Type::array) return false;
  std::unordered_map<std::string, DeclaredWrites> by_name;
  for (const auto& library : decoded->elements) {
    const resp::Reply* functions = field(library, "functions");
    if (functions == nullptr || functions->type != resp::Reply::Type::array) return false;
    for (const auto& function : functions->elements) {
      const resp::Reply* name = field(function, "name");
      const resp::Reply* flags = field(function, "flags");
      if (name == nullptr || flags == nullptr) return false;
      by_name[name->text] =
          declares_no_writes(*flags) ? DeclaredWrites::no_writes : DeclaredWrites::writes;
    }
  }
  auto& functions = known();
  std::lock_guard lock(functions.mutex);
  functions.by_name = std::move(by_name);
  return true;
}

void learn_function_flags(upstream::Upstream& upstream) {
  {
    auto& functions = known();
    std::lock_guard lock(functions.mutex);
    functions.by_name.clear();
  }
  auto answer = upstream::CallbackTarget::make([](std::string_view reply, bool failed) {
    if (!failed) store_function_list(reply);
  });
  upstream.ask_server(kFunctionList, 0, answer);
}

DeclaredWrites function_writes(std::string_view name) {
  auto& functions = known();
  std::lock_guard lock(functions.mutex);
  const auto it = functions.by_name.find(std::string(name));
  return it == functions.by_name.end() ? DeclaredWrites::undeclared : it->second;
}

}  // namespace corral::proxy
