// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Registration with libibverbs and device matching.
#include "provider.h"

#include "device_match.h"

#include <array>
#include <cstdio>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <string_view>

namespace sroce {
namespace {

bool match_device(verbs_sysfs_dev* sysfs_dev) noexcept {
    const std::string_view name{sysfs_dev->ibdev_name,
                                ::strnlen(sysfs_dev->ibdev_name, sizeof(sysfs_dev->ibdev_name))};
    const std::string path{sysfs_dev->ibdev_path,
                           ::strnlen(sysfs_dev->ibdev_path, sizeof(sysfs_dev->ibdev_path))};
    const std::optional<std::string> attr = read_abi_attr(path);
    const std::optional<std::string_view> attr_view =
            attr ? std::optional<std::string_view>{*attr} : std::nullopt;

    switch (classify_device({name, sysfs_dev->driver_id, attr_view})) {
    case MatchVerdict::kMatch:
        return true;
    case MatchVerdict::kAbiMismatch: {
        // Our device, but we cannot drive it: say so, as libibverbs does for
        // a uverbs ABI mismatch, rather than leave the user with no device.
        const std::string_view version = attr_view->substr(0, attr_view->find('\n'));
        (void)std::fprintf(stderr,
                           "libsroce: device %.*s has sroce ABI \"%.*s\", this provider speaks %d; "
                           "not using it\n",
                           static_cast<int>(name.size()), name.data(),
                           static_cast<int>(version.size()), version.data(), SROCE_ABI_VERSION);
        return false;
    }
    case MatchVerdict::kNotSroce:
        break;
    }
    return false;
}

verbs_device* alloc_device(verbs_sysfs_dev* /*sysfs_dev*/) noexcept {
    auto* dev = new (std::nothrow) Device{};
    return dev != nullptr ? &dev->vdev : nullptr;
}

void uninit_device(verbs_device* vdev) noexcept {
    delete reinterpret_cast<Device*>(vdev);
}

// libibverbs walks match_table whenever a device has a known driver id
// (e.g. an rxe device), without checking for NULL: it must exist even
// though match_device decides alone.
constexpr std::array<verbs_match_ent, 1> kMatchTable = {
        verbs_match_ent{.driver_data = nullptr,
                        .u = {},
                        .vendor = 0,
                        .device = 0,
                        .kind = VERBS_MATCH_SENTINEL},
};

constexpr verbs_device_ops kDeviceOps = {
        .name = kProviderName,
        .match_min_abi_version = SROCE_ABI_VERSION,
        .match_max_abi_version = SROCE_ABI_VERSION,
        .match_table = kMatchTable.data(),
        .static_providers = nullptr,
        .match_device = match_device,
        .alloc_context = alloc_context,
        .import_context = import_context,
        .alloc_device = alloc_device,
        .uninit_device = uninit_device,
};

// The one piece of global state: libibverbs keeps &kDeviceOps from here on.
[[gnu::constructor]] void register_provider() noexcept {
    sroce_register_driver(&kDeviceOps);
}

} // namespace

const verbs_device_ops& device_ops() noexcept {
    return kDeviceOps;
}

} // namespace sroce
