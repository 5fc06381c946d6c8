// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SlotMap<T>: where a port keeps its groups. Objects live in fixed chunks, so an object's
// address never changes while it lives (an SA answer in flight holds on to its group), and a
// port's groups sit next to each other in memory, in roughly the order they were made: a
// re-join that walks 100,000 of them reads memory in order instead of chasing hash nodes.
//
// A handle (T::id, never 0) names a slot and the slot's generation, so a handle kept past
// erase() finds nothing, even after the slot was reused. Lookup, create and erase are O(1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mcastd::core {

template <class T> class SlotMap {
public:
    using Handle = std::uint64_t;

    // A new default object, its `id` set to its handle.
    T &create() {
        std::uint32_t slot;
        if (!free_.empty()) {
            slot = free_.back();
            free_.pop_back();
        } else {
            slot = static_cast<std::uint32_t>(generation_.size());
            if (slot % kChunk == 0)
                chunks_.push_back(std::make_unique<T[]>(kChunk));
            generation_.push_back(1);
        }
        T &t = at_slot(slot);
        t.id = (Handle{generation_[slot]} << 32) | slot;
        ++size_;
        return t;
    }

    T *find(Handle h) {
        const auto slot = static_cast<std::uint32_t>(h);
        if (slot >= generation_.size())
            return nullptr;
        T &t = at_slot(slot);
        return t.id == h ? &t : nullptr;
    }
    const T *find(Handle h) const { return const_cast<SlotMap *>(this)->find(h); }
    T &at(Handle h) {
        T *t = find(h);
        if (!t)
            throw std::out_of_range("SlotMap: no object " + std::to_string(h));
        return *t;
    }

    // Destroys the object's state (it becomes a default T again) and frees its slot.
    void erase(Handle h) {
        T *t = find(h);
        if (!t)
            return;
        const auto slot = static_cast<std::uint32_t>(h);
        *t = T{};
        ++generation_[slot];
        free_.push_back(slot);
        --size_;
    }

    std::size_t size() const { return size_; }

    // Calls fn(T&) for every live object, in slot order.
    template <class F> void for_each(F &&fn) {
        for (std::uint32_t slot = 0; slot < generation_.size(); ++slot)
            if (T &t = at_slot(slot); t.id)
                fn(t);
    }
    template <class F> void for_each(F &&fn) const {
        const_cast<SlotMap *>(this)->for_each([&fn](const T &t) { fn(t); });
    }

private:
    static constexpr std::uint32_t kChunk = 64;

    T &at_slot(std::uint32_t slot) { return chunks_[slot / kChunk][slot % kChunk]; }

    std::vector<std::unique_ptr<T[]>> chunks_;
    std::vector<std::uint32_t> generation_; // per slot; bumped by every erase
    std::vector<std::uint32_t> free_;
    std::size_t size_ = 0;
};

} // namespace mcastd::core
