// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Buffers for uverbs commands that carry sroce's driver data ("udata").
//
// The ibv_cmd_* helpers take the kernel's request (response) struct and the
// total size; the driver part starts right after the kernel's struct. Those
// structs end in a flexible array, so C++ cannot declare a member after
// them: the buffers are raw bytes with typed accessors.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <type_traits>

namespace sroce {

template <typename Core, typename Driver>
class WithDriverData {
    static_assert(std::is_trivially_copyable_v<Core> && std::is_trivially_copyable_v<Driver>);
    static_assert(sizeof(Core) % alignof(Driver) == 0, "driver data would be misaligned");

public:
    // The pointer to pass to ibv_cmd_*; libibverbs (C) writes through it.
    Core* core() noexcept { return reinterpret_cast<Core*>(bytes_.data()); }

    [[nodiscard]] Core core_copy() const noexcept {
        Core value{};
        std::memcpy(&value, bytes_.data(), sizeof(Core));
        return value;
    }
    [[nodiscard]] Driver driver() const noexcept {
        Driver value{};
        std::memcpy(&value, bytes_.data() + sizeof(Core), sizeof(Driver));
        return value;
    }
    void set_driver(const Driver& value) noexcept {
        std::memcpy(bytes_.data() + sizeof(Core), &value, sizeof(Driver));
    }

    static constexpr std::size_t kSize = sizeof(Core) + sizeof(Driver);

    // Total size, for the ibv_cmd_* size argument.
    [[nodiscard]] constexpr std::size_t size() const noexcept { return kSize; }

private:
    alignas(std::max(alignof(Core), alignof(Driver))) std::array<std::byte, kSize> bytes_{};
};

} // namespace sroce
