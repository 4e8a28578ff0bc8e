// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "device_match.h"

#include "unique_fd.h"

#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/sroce-abi.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <fcntl.h>
#include <unistd.h>

namespace sroce {

std::optional<std::uint32_t> parse_abi_version(std::string_view text) noexcept {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\t'))
        text.remove_suffix(1);
    if (text.empty())
        return std::nullopt;
    std::uint32_t value = 0;
    const auto* const end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value, 10);
    if (ec != std::errc{} || ptr != end)
        return std::nullopt;
    return value;
}

MatchVerdict classify_device(const DeviceIdentity& device) noexcept {
    if (device.driver_id != RDMA_DRIVER_UNKNOWN)
        return MatchVerdict::kNotSroce;
    if (device.abi_attr) {
        const auto version = parse_abi_version(*device.abi_attr);
        return version == SROCE_ABI_VERSION ? MatchVerdict::kMatch : MatchVerdict::kAbiMismatch;
    }
    if (device.ibdev_name.starts_with(SROCE_DEVICE_NAME_PREFIX))
        return MatchVerdict::kMatch;
    return MatchVerdict::kNotSroce;
}

std::optional<std::string> read_abi_attr(const std::string& ibdev_path,
                                         std::size_t max_len) noexcept {
    try {
        const std::string path = ibdev_path + "/" + SROCE_SYSFS_ABI_ATTR;
        const UniqueFd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
        if (!fd)
            return std::nullopt;
        std::string text;
        std::array<char, 64> chunk{};
        for (;;) {
            const ssize_t n = ::read(fd.get(), chunk.data(), chunk.size());
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                return std::nullopt;
            if (n == 0)
                break;
            text.append(chunk.data(), static_cast<std::size_t>(n));
            if (text.size() > max_len)
                return std::nullopt;
        }
        return text;
    } catch (...) {
        return std::nullopt;
    }
}

} // namespace sroce
