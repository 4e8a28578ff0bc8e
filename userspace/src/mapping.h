// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace sroce {

// Owns one mmap()ed range; unmaps it once.
class Mapping {
public:
    Mapping() noexcept = default;
    Mapping(void* addr, std::size_t length) noexcept : addr_{addr}, length_{length} {}
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    Mapping(Mapping&& other) noexcept
        : addr_{std::exchange(other.addr_, nullptr)}, length_{std::exchange(other.length_, 0)} {}
    Mapping& operator=(Mapping&& other) noexcept {
        if (this != &other) {
            reset();
            addr_ = std::exchange(other.addr_, nullptr);
            length_ = std::exchange(other.length_, 0);
        }
        return *this;
    }
    ~Mapping() { reset(); }

    // Maps length bytes of fd at offset, shared and read-write, as the
    // uverbs mmap of a ring requires. Returns an empty Mapping (errno set)
    // on failure.
    static Mapping map_shared(int fd, std::size_t length, std::uint64_t offset) noexcept {
        void* addr = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                            static_cast<off_t>(offset));
        if (addr == MAP_FAILED)
            return {};
        return {addr, length};
    }

    [[nodiscard]] void* data() const noexcept { return addr_; }
    [[nodiscard]] std::size_t size() const noexcept { return length_; }
    explicit operator bool() const noexcept { return addr_ != nullptr; }

    void reset() noexcept {
        if (addr_ != nullptr)
            ::munmap(addr_, length_);
        addr_ = nullptr;
        length_ = 0;
    }

private:
    void* addr_ = nullptr;
    std::size_t length_ = 0;
};

} // namespace sroce
