// The queue of a client's reply slots: a ring whose storage is taken when the first request
// arrives and given back when the last reply leaves, so an idle client holds none (a std::deque
// holds about 600 bytes even when empty) and a request/response client reuses one block.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace corral::session {

template <class T>
class SlotQueue {
 public:
  // Blocks of this many slots are recycled through a per-thread cache; a deeper pipeline grows
  // the ring, which the client keeps (bounded by client.max_pipeline) until it disconnects.
  static constexpr std::size_t kBaseCapacity = 4;

  SlotQueue() = default;
  ~SlotQueue() {
    while (!empty()) pop_back();
    give_back_storage();
  }
  SlotQueue(const SlotQueue&) = delete;
  SlotQueue& operator=(const SlotQueue&) = delete;

  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  T& operator[](std::size_t i) { return data_[(head_ + i) & (capacity_ - 1)]; }
  T& front() { return data_[head_]; }

  T& emplace_back() {
    if (size_ == capacity_) grow();
    T* slot = new (&data_[(head_ + size_) & (capacity_ - 1)]) T();
    ++size_;
    return *slot;
  }
  void pop_back() {
    --size_;
    std::destroy_at(&(*this)[size_]);
    if (size_ == 0) give_back_base();
  }
  void pop_front() {
    std::destroy_at(&data_[head_]);
    head_ = (head_ + 1) & (capacity_ - 1);
    --size_;
    if (size_ == 0) give_back_base();
  }
  std::size_t capacity() const { return capacity_; }

 private:
  // Base blocks of the thread's idle clients, freed with the thread.
  struct BlockCache {
    ~BlockCache() {
      for (T* block : blocks) deallocate(block);
    }
    std::vector<T*> blocks;
  };
  static std::vector<T*>& block_cache() {
    thread_local BlockCache cache;
    return cache.blocks;
  }
  static constexpr std::size_t kCachedBlocks = 256;

  static T* allocate(std::size_t capacity) {
    return static_cast<T*>(::operator new (capacity * sizeof(T), std::align_val_t{alignof(T)}));
  }
  static void deallocate(T* block) { ::operator delete (block, std::align_val_t{alignof(T)}); }

  void grow() {
    const std::size_t larger = capacity_ == 0 ? kBaseCapacity : capacity_ * 2;
    T* block = nullptr;
    auto& cache = block_cache();
    if (larger == kBaseCapacity && !cache.empty()) {
      block = cache.back();
      cache.pop_back();
    } else {
      block = allocate(larger);
    }
    for (std::size_t i = 0; i < size_; ++i) {
      T& old = (*this)[i];
      new (&block[i]) T(std::move(old));
      std::destroy_at(&old);
    }
    give_back_storage();
    data_ = block;
    capacity_ = larger;
    head_ = 0;
  }

  void give_back_base() {
    head_ = 0;
    if (capacity_ == kBaseCapacity) give_back_storage();
  }

  // A base block goes to the thread's cache while it has room, anything else to malloc.
  void give_back_storage() {
    auto& cache = block_cache();
    if (capacity_ == kBaseCapacity && cache.size() < kCachedBlocks) {
      cache.push_back(data_);
      data_ = nullptr;
      capacity_ = 0;
      head_ = 0;
      return;
    }
    free_storage();
  }

  void free_storage() {
    if (data_ != nullptr) deallocate(data_);
    data_ = nullptr;
    capacity_ = 0;
    head_ = 0;
  }

  T* data_ = nullptr;
  std::size_t capacity_ = 0;  // 0 or a power of two
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace corral::session
