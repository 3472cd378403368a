// A command table row as the upstream sees it (upstream::CommandShape): name, read-only flag and
// key positions, without the rest of the table.
#pragma once

#include "proxy/commands/command_table.hpp"
#include "upstream/upstream.hpp"

namespace corral::proxy {

class TableShape final : public upstream::CommandShape {
 public:
  explicit TableShape(const CommandSpec& row) : row_(row) {}

  std::string_view name() const override { return row_.name; }
  bool read_only() const override { return (row_.flags & kReadOnly) != 0; }
  std::size_t key_step() const override {
    return row_.key_step > 1 ? static_cast<std::size_t>(row_.key_step) : 1;
  }
  void find_keys(std::span<const std::string_view> argv,
                 std::vector<std::size_t>& out) const override {
    key_indices(row_, argv, out);
  }

 private:
  const CommandSpec& row_;
};

}  // namespace corral::proxy
