// MGET replies assembled from their parts; a failed or error part answers the whole MGET.
#include "stampede/read/mget_assembly.hpp"

#include <utility>

#include "resp/encoder.hpp"

namespace corral::stampede {

MgetAssembly::MgetAssembly(std::shared_ptr<upstream::ReplyTarget> client, std::uint64_t tag,
                           std::size_t parts)
    : client_(std::move(client)), tag_(tag), parts_(parts), pending_(parts) {}

void MgetAssembly::set_part(std::size_t part, std::string_view reply) { on_reply(part, reply); }

void MgetAssembly::on_reply(std::uint64_t part, std::string_view reply) {
  if (pending_ == 0 || part >= parts_.size()) return;
  // Redis answers an MGET as a whole; an error for one key (none is expected) answers it all.
  if (!reply.empty() && reply.front() == '-' && !error_reply_) error_reply_.emplace(reply);
  parts_[part].assign(reply);
  part_done();
}

void MgetAssembly::on_failure(std::uint64_t part, std::string_view error) {
  if (pending_ == 0 || part >= parts_.size()) return;
  if (!failure_) failure_.emplace(error);
  part_done();
}

void MgetAssembly::part_done() {
  if (--pending_ != 0) return;
  const auto client = std::move(client_);
  if (failure_) {
    client->on_failure(tag_, *failure_);
  } else if (error_reply_) {
    client->on_reply(tag_, *error_reply_);
  } else {
    std::string reply;
    resp::append_array_header(reply, parts_.size());
    for (const auto& part : parts_) reply.append(part);
    client->on_reply(tag_, reply);
  }
  parts_.clear();
}

}  // namespace corral::stampede
