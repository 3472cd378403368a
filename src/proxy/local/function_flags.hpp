// Which of the upstream's functions declare `no-writes`, learned with one FUNCTION LIST when a
// CLIENT PAUSE WRITE starts: FCALL of such a function runs through the pause, as in Redis, and
// FCALL of any other (or while the list is on its way) is held.
#pragma once

#include <cstdint>
#include <string_view>

namespace corral::upstream {
class Upstream;
}

namespace corral::proxy {

// What a script's shebang or a function's flags declare about writing (Redis's `no-writes`);
// `undeclared`: judged by the command's own flags.
enum class DeclaredWrites : std::uint8_t { undeclared, no_writes, writes };

// Asks `upstream` for its functions (FUNCTION LIST); until the answer comes, every function is
// undeclared. A failed or odd answer leaves them so (held, as Redis holds an unknown one).
void learn_function_flags(upstream::Upstream& upstream);

// What the last answer said of function `name` (case-sensitive, as Redis's FCALL).
DeclaredWrites function_writes(std::string_view name);

// FUNCTION LIST's RESP2 reply to the table above; false when it is not one.
bool store_function_list(std::string_view reply);

}  // namespace corral::proxy
