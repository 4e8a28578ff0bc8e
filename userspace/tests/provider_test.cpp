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

// Parent and thread domains live in the provider alone: no kernel involved.
struct Domains : ::testing::Test {
    ibv_context ctx{};
    ibv_context other{};
    Pd protection{};

    void SetUp() override {
        protection.pd.context = &ctx;
        protection.pd.handle = 7;
        protection.pdn = 3;
    }
    ibv_pd* parent_of(ibv_pd* pd, ibv_td* td = nullptr, std::uint32_t mask = 0) {
        ibv_parent_domain_init_attr attr{};
        attr.pd = pd;
        attr.td = td;
        attr.comp_mask = mask;
        return alloc_parent_domain(&ctx, &attr);
    }
};

TEST_F(Domains, AParentDomainActsOnItsProtectionDomainWhichOutlivesIt) {
    ibv_pd* parent = parent_of(&protection.pd, nullptr,
                               IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
                                       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT);
    ASSERT_NE(parent, nullptr);
    EXPECT_EQ(parent->handle, 7U);
    EXPECT_EQ(parent->context, &ctx);
    EXPECT_EQ(parent_domain(parent), to_pd(parent));
    EXPECT_EQ(parent_domain(&protection.pd), nullptr);
    EXPECT_EQ(dealloc_pd(&protection.pd), EBUSY);
    EXPECT_EQ(dealloc_pd(parent), 0);
    EXPECT_EQ(protection.parents.load(), 0U);
}

TEST_F(Domains, AConfidentialGuestsPermissionIsAcceptedAndUnused) {
    // IBV_PARENT_DOMAIN_INIT_ATTR_ALLOW_CC_UNPROTECTED_ALLOC of rdma-core 65:
    // rdma-core 65's test_buf skips only on EOPNOTSUPP/ENOENT/ENODEV.
    ibv_pd* parent = parent_of(&protection.pd, nullptr, 1U << 2);
    ASSERT_NE(parent, nullptr);
    EXPECT_EQ(parent->handle, 7U);
    EXPECT_EQ(dealloc_pd(parent), 0);
}

TEST_F(Domains, BadParentDomainsAreRefused) {
    errno = 0;
    EXPECT_EQ(parent_of(nullptr), nullptr);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_EQ(parent_of(&protection.pd, nullptr, 1U << 5), nullptr);
    EXPECT_EQ(errno, EINVAL);
    ibv_pd* parent = parent_of(&protection.pd);
    ASSERT_NE(parent, nullptr);
    errno = 0;
    EXPECT_EQ(parent_of(parent), nullptr) << "a parent of a parent";
    EXPECT_EQ(errno, EINVAL);
    protection.pd.context = &other;
    errno = 0;
    EXPECT_EQ(parent_of(&protection.pd), nullptr) << "another context's PD";
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(dealloc_pd(parent), 0);
}

TEST_F(Domains, AThreadDomainStaysWhileAParentDomainNamesIt) {
    ibv_td_init_attr bad{1};
    errno = 0;
    EXPECT_EQ(alloc_td(&ctx, &bad), nullptr);
    EXPECT_EQ(errno, EINVAL);
    ibv_td_init_attr attr{};
    ibv_td* td = alloc_td(&ctx, &attr);
    ASSERT_NE(td, nullptr);
    EXPECT_EQ(td->context, &ctx);
    ibv_pd* parent = parent_of(&protection.pd, td);
    ASSERT_NE(parent, nullptr);
    EXPECT_EQ(dealloc_td(td), EBUSY);
    EXPECT_EQ(dealloc_pd(parent), 0);
    EXPECT_EQ(dealloc_td(td), 0);
}

TEST_F(Domains, ACqNamesAParentDomainOfItsContextOrNothing) {
    ibv_cq_init_attr_ex attr{};
    attr.cqe = 4;
    attr.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
    attr.parent_domain = &protection.pd;
    errno = 0;
    EXPECT_EQ(create_cq_ex(&ctx, &attr), nullptr) << "a protection domain";
    EXPECT_EQ(errno, EINVAL);
    ibv_pd* parent = parent_of(&protection.pd);
    ASSERT_NE(parent, nullptr);
    attr.parent_domain = parent;
    errno = 0;
    EXPECT_EQ(create_cq_ex(&other, &attr), nullptr) << "another context's parent domain";
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(dealloc_pd(parent), 0);
}

} // namespace
} // namespace sroce
