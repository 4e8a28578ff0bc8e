// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Which RDMA devices the sroce provider claims.
//
// The kernel registers sroce devices with driver_id RDMA_DRIVER_UNKNOWN, so
// libibverbs cannot match them by driver id. Users name devices freely
// (`rdma link add <name> type sroce ...`, `rdma dev set ... name ...`), so the
// name is only a hint: every sroce device carries the sysfs attribute
// SROCE_SYSFS_ABI_ATTR with the ABI version, and that is what identifies it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sroce {

enum class MatchVerdict {
    kMatch,       // an sroce device this provider speaks the ABI of
    kNotSroce,    // some other driver's device
    kAbiMismatch, // an sroce device of an ABI version this provider lacks
};

struct DeviceIdentity {
    std::string_view ibdev_name;
    std::uint32_t driver_id = 0;
    // Contents of <ibdev_path>/SROCE_SYSFS_ABI_ATTR, nullopt if absent.
    std::optional<std::string_view> abi_attr;
};

// Pure decision, no I/O:
//  - a device with a known driver id belongs to that driver (our ioctls
//    carry RDMA_DRIVER_UNKNOWN and the kernel would reject them anyway);
//  - with the ABI attribute present, it decides, whatever the name;
//  - without it, only a device whose name starts with the sroce prefix is
//    taken (a kernel too old to have the attribute).
MatchVerdict classify_device(const DeviceIdentity& device) noexcept;

// Parses the attribute's text ("1\n"): a decimal number and nothing else but
// trailing whitespace.
std::optional<std::uint32_t> parse_abi_version(std::string_view text) noexcept;

// Reads <ibdev_path>/<SROCE_SYSFS_ABI_ATTR>; nullopt if it cannot be read.
// A sysfs attribute is small: anything over max_len bytes is rejected.
std::optional<std::string> read_abi_attr(const std::string& ibdev_path,
                                         std::size_t max_len = 64) noexcept;

} // namespace sroce
