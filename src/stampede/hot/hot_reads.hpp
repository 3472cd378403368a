// The hot-key cache as one io thread sees it (hot_keys.cache): GETs of hot keys outside every
// policy served from the hot store, misses read on a connection of their own whose CLIENT
// TRACKING (default mode) reports to the invalidation link, and writes that pass through.
//
//   hit    serve -> hot set has the key, link up, no write of it pending here -> store -> reply
//   miss   serve -> fill (joined by later misses of the key on this thread) -> GET + PTTL on
//          the fill connection to the key's server -> reply; stored if no invalidation, link
//          change or write superseded it since it was sent (the fill ticket and the generation)
//   moved  the server turned the fill away (MOVED, ASK: a cluster slot that moved) or the fill
//          connection failed -> GET again on the routed path -> reply; not stored
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cache/clock.hpp"
#include "cache/entry.hpp"
#include "stampede/core/hot_set.hpp"
#include "stampede/hot/hot_fill_routes.hpp"
#include "upstream/reply_target.hpp"

namespace corral::upstream {
class Link;
}

namespace corral::stampede {

class HotCache;

class HotReads : public std::enable_shared_from_this<HotReads> {
 public:
  HotReads(HotCache& hot, HotFillRoutes routes, const cache::Clock& clock);
  ~HotReads();

  // A GET of `key`, which no policy covers. True: the reply will reach target->on_*(tag) on
  // this thread. False: not a hot key now (or its fill cannot be sent): forward it as usual.
  bool serve(std::string_view key, std::uint64_t tag,
             const std::shared_ptr<upstream::ReplyTarget>& target);
  // A write to `key` leaves through this thread / was answered: reads of it here go to Redis
  // behind the write until then, as for policy keys (the fill connection could overtake it).
  void write_sent(std::string_view key);
  void write_done(std::string_view key);

 private:
  class Fill;
  class TrackingConfirm;
  friend class Fill;

  // The fill connection to one server, and the tracking redirect it runs.
  struct FillLink {
    std::shared_ptr<upstream::Link> connection;
    std::string redirect;  // the client id its tracking reports to ("" : not set)
    std::shared_ptr<TrackingConfirm> tracking;
  };

  bool write_pending(std::string_view key) const;
  // Sends GET and PTTL of `key` on the fill connection to its server (and the tracking redirect
  // first when the server's link changed); null when it cannot.
  std::shared_ptr<Fill> start_fill(std::string_view key);
  // The fill connection to `server`, opened (and named) when there is none; null when it cannot.
  FillLink* fill_link(const std::string& server);
  void close_fill_links();
  void fill_ended(const std::string& key, const Fill* fill);
  // A fill the server turned away: its readers are answered by the routed path.
  void reroute(std::string_view key, std::shared_ptr<upstream::ReplyTarget> fill);
  // Drops the hot entries of `key`'s partition (its cluster slot moved).
  void drop_partition_of(std::string_view key);

  HotCache& hot_;
  HotFillRoutes routes_;
  const cache::Clock& clock_;
  std::shared_ptr<const HotSet> keys_;
  std::uint64_t keys_version_ = ~std::uint64_t{0};
  // By server; a few (one per cluster primary), each closed when it fails and opened again.
  std::unordered_map<std::string, FillLink> fill_links_;
  std::uint64_t fill_links_epoch_ = 0;  // routes_.upstream_epoch() when they were opened
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
      return std::hash<std::string_view>{}(key);
    }
  };
  // In flight, by key.
  std::unordered_map<std::string, std::shared_ptr<Fill>, KeyHash, std::equal_to<>> fills_;
  // Hashes of keys written through this thread and not yet answered (a collision only sends
  // a read to Redis).
  std::unordered_map<std::size_t, std::uint32_t> pending_writes_;
  std::string command_;
  cache::Entry entry_;
};

}  // namespace corral::stampede
