// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The verbs_device_ops the provider registers, exercised the way
// libibverbs' device discovery uses them (init.c of rdma-core 44).
#include "provider.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace sroce {
namespace {

namespace fs = std::filesystem;

TEST(DeviceOps, Identity) {
    const verbs_device_ops& ops = device_ops();
    EXPECT_STREQ(ops.name, "sroce");
    EXPECT_EQ(ops.match_min_abi_version, static_cast<std::uint32_t>(SROCE_ABI_VERSION));
    EXPECT_EQ(ops.match_max_abi_version, static_cast<std::uint32_t>(SROCE_ABI_VERSION));
    EXPECT_NE(ops.match_device, nullptr);
    EXPECT_NE(ops.alloc_context, nullptr);
    EXPECT_NE(ops.alloc_device, nullptr);
    EXPECT_NE(ops.uninit_device, nullptr);
}

// libibverbs' match_driver_id() walks match_table for every device with a
// known driver id and does not check it for NULL: a provider without a
// table crashes every program on a machine with, say, an rxe device.
TEST(DeviceOps, MatchTableExistsAndEndsWithASentinel) {
    const verbs_match_ent* table = device_ops().match_table;
    ASSERT_NE(table, nullptr);
    int entries = 0;
    while (table[entries].kind != VERBS_MATCH_SENTINEL) {
        ASSERT_LT(entries, 16) << "unterminated match table";
        ++entries;
    }
    // Nothing is matched by driver id: ours is RDMA_DRIVER_UNKNOWN.
    for (int i = 0; i < entries; ++i)
        EXPECT_NE(table[i].kind, VERBS_MATCH_DRIVER_ID);
}

// A verbs_sysfs_dev as libibverbs fills it before matching, over a fake
// /sys/class/infiniband/<name> directory.
class MatchDevice : public ::testing::Test {
protected:
    void SetUp() override {
        std::string templ = (fs::temp_directory_path() / "sroce-match-XXXXXX").string();
        ASSERT_NE(::mkdtemp(templ.data()), nullptr);
        root_ = templ;
    }
    void TearDown() override { fs::remove_all(root_); }

    bool match(const std::string& name, std::uint32_t driver_id, const char* attr) {
        const fs::path dir = root_ / name;
        fs::create_directories(dir);
        if (attr != nullptr)
            std::ofstream{dir / SROCE_SYSFS_ABI_ATTR} << attr;
        verbs_sysfs_dev dev{};
        EXPECT_LT(std::snprintf(dev.ibdev_name, sizeof(dev.ibdev_name), "%s", name.c_str()),
                  static_cast<int>(sizeof(dev.ibdev_name)));
        EXPECT_LT(std::snprintf(dev.ibdev_path, sizeof(dev.ibdev_path), "%s", dir.c_str()),
                  static_cast<int>(sizeof(dev.ibdev_path)));
        dev.driver_id = driver_id;
        dev.abi_ver = SROCE_ABI_VERSION;
        return device_ops().match_device(&dev);
    }

    fs::path root_;
};

TEST_F(MatchDevice, SroceDevicesWhateverTheirName) {
    EXPECT_TRUE(match("sroce0", RDMA_DRIVER_UNKNOWN, "1\n"));
    EXPECT_TRUE(match("nvme_fabric", RDMA_DRIVER_UNKNOWN, "1\n"));
    EXPECT_TRUE(match("sroce1", RDMA_DRIVER_UNKNOWN, nullptr)) << "name fallback";
}

TEST_F(MatchDevice, OtherDriversDevicesAreLeftAlone) {
    EXPECT_FALSE(match("rxe0", RDMA_DRIVER_RXE, nullptr));
    EXPECT_FALSE(match("sroce2", RDMA_DRIVER_RXE, nullptr)) << "rxe device named sroce2";
    EXPECT_FALSE(match("siw0", RDMA_DRIVER_SIW, nullptr));
    EXPECT_FALSE(match("mlx5_0", RDMA_DRIVER_MLX5, nullptr));
    EXPECT_FALSE(match("weird0", RDMA_DRIVER_UNKNOWN, nullptr));
}

TEST_F(MatchDevice, AnotherAbiVersionIsRefusedWithAMessage) {
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(match("sroce3", RDMA_DRIVER_UNKNOWN, "99\n"));
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("sroce3"), std::string::npos) << err;
    EXPECT_NE(err.find("\"99\""), std::string::npos) << err;
}

TEST(DeviceOps, AllocAndUninitDevice) {
    verbs_sysfs_dev sysfs{};
    verbs_device* vdev = device_ops().alloc_device(&sysfs);
    ASSERT_NE(vdev, nullptr);
    EXPECT_EQ(vdev->ops, nullptr) << "libibverbs fills the rest";
    device_ops().uninit_device(vdev);
}

} // namespace
} // namespace sroce
