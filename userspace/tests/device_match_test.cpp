// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "device_match.h"

#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/sroce-abi.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace sroce {
namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t kUnknown = RDMA_DRIVER_UNKNOWN;
constexpr std::uint32_t kRxe = RDMA_DRIVER_RXE;

TEST(ParseAbiVersion, AcceptsDecimalWithTrailingNewline) {
    EXPECT_EQ(parse_abi_version("1\n"), 1U);
    EXPECT_EQ(parse_abi_version("1"), 1U);
    EXPECT_EQ(parse_abi_version("42 \n"), 42U);
}

TEST(ParseAbiVersion, RejectsAnythingElse) {
    EXPECT_EQ(parse_abi_version(""), std::nullopt);
    EXPECT_EQ(parse_abi_version("\n"), std::nullopt);
    EXPECT_EQ(parse_abi_version("x1"), std::nullopt);
    EXPECT_EQ(parse_abi_version("1x\n"), std::nullopt);
    EXPECT_EQ(parse_abi_version("-1"), std::nullopt);
    EXPECT_EQ(parse_abi_version(" 1"), std::nullopt);
    EXPECT_EQ(parse_abi_version("1\n2\n"), std::nullopt);
    EXPECT_EQ(parse_abi_version("99999999999999999999"), std::nullopt);
}

TEST(ClassifyDevice, AttributeDecidesWhateverTheName) {
    const std::string good = std::to_string(SROCE_ABI_VERSION) + "\n";
    EXPECT_EQ(classify_device({"sroce0", kUnknown, good}), MatchVerdict::kMatch);
    EXPECT_EQ(classify_device({"renamed_dev", kUnknown, good}), MatchVerdict::kMatch);
    EXPECT_EQ(classify_device({"mlx5_0", kUnknown, good}), MatchVerdict::kMatch);
}

TEST(ClassifyDevice, OtherAbiVersionIsAMismatchNotAMatch) {
    const std::string other = std::to_string(SROCE_ABI_VERSION + 1) + "\n";
    EXPECT_EQ(classify_device({"sroce0", kUnknown, other}), MatchVerdict::kAbiMismatch);
    EXPECT_EQ(classify_device({"renamed", kUnknown, other}), MatchVerdict::kAbiMismatch);
    EXPECT_EQ(classify_device({"sroce0", kUnknown, "garbage"}), MatchVerdict::kAbiMismatch);
    EXPECT_EQ(classify_device({"sroce0", kUnknown, ""}), MatchVerdict::kAbiMismatch);
}

TEST(ClassifyDevice, WithoutAttributeOnlyTheSroceNamePrefixMatches) {
    EXPECT_EQ(classify_device({"sroce0", kUnknown, std::nullopt}), MatchVerdict::kMatch);
    EXPECT_EQ(classify_device({"sroce_eth1", kUnknown, std::nullopt}), MatchVerdict::kMatch);
    EXPECT_EQ(classify_device({"rxe0", kUnknown, std::nullopt}), MatchVerdict::kNotSroce);
    EXPECT_EQ(classify_device({"my_sroce0", kUnknown, std::nullopt}), MatchVerdict::kNotSroce);
    EXPECT_EQ(classify_device({"SROCE0", kUnknown, std::nullopt}), MatchVerdict::kNotSroce);
    EXPECT_EQ(classify_device({"", kUnknown, std::nullopt}), MatchVerdict::kNotSroce);
}

TEST(ClassifyDevice, KnownDriverIdBelongsToThatDriver) {
    // e.g. `rdma link add sroce0 type rxe ...`: rxe's device, even if named
    // like ours; our ioctls would carry the wrong driver id.
    const std::string good = std::to_string(SROCE_ABI_VERSION);
    EXPECT_EQ(classify_device({"sroce0", kRxe, std::nullopt}), MatchVerdict::kNotSroce);
    EXPECT_EQ(classify_device({"sroce0", kRxe, good}), MatchVerdict::kNotSroce);
}

// A scratch directory standing in for /sys/class/infiniband.
class FakeSysfs : public ::testing::Test {
protected:
    void SetUp() override {
        std::string templ = (fs::temp_directory_path() / "sroce-sysfs-XXXXXX").string();
        ASSERT_NE(::mkdtemp(templ.data()), nullptr);
        root_ = templ;
    }
    void TearDown() override { fs::remove_all(root_); }

    fs::path add_device(const std::string& name) {
        fs::path dir = root_ / "class" / "infiniband" / name;
        fs::create_directories(dir);
        std::ofstream{dir / "node_type"} << "1: CA\n";
        return dir;
    }
    static void write_attr(const fs::path& dir, const std::string& text) {
        std::ofstream{dir / SROCE_SYSFS_ABI_ATTR} << text;
    }

    // What the provider's match_device hook does with a sysfs device.
    static MatchVerdict classify_at(const fs::path& dir, std::uint32_t driver_id) {
        const auto attr = read_abi_attr(dir.string());
        const std::string name = dir.filename().string();
        return classify_device(
                {name, driver_id, attr ? std::optional<std::string_view>{*attr} : std::nullopt});
    }

    fs::path root_;
};

TEST_F(FakeSysfs, ReadsTheAttribute) {
    const auto dev = add_device("sroce0");
    write_attr(dev, "1\n");
    EXPECT_EQ(read_abi_attr(dev.string()), "1\n");
}

TEST_F(FakeSysfs, MissingAttributeOrDirectoryIsNullopt) {
    const auto dev = add_device("rxe0");
    EXPECT_EQ(read_abi_attr(dev.string()), std::nullopt);
    EXPECT_EQ(read_abi_attr((root_ / "no" / "such" / "dev").string()), std::nullopt);
}

TEST_F(FakeSysfs, OversizedAttributeIsRejected) {
    const auto dev = add_device("sroce0");
    write_attr(dev, std::string(4096, '1'));
    EXPECT_EQ(read_abi_attr(dev.string()), std::nullopt);
}

TEST_F(FakeSysfs, RenamedSroceDeviceStillMatches) {
    const auto dev = add_device("storage_rdma");
    write_attr(dev, std::to_string(SROCE_ABI_VERSION) + "\n");
    EXPECT_EQ(classify_at(dev, kUnknown), MatchVerdict::kMatch);
}

TEST_F(FakeSysfs, MixedTree) {
    const auto sroce = add_device("sroce0");
    write_attr(sroce, std::to_string(SROCE_ABI_VERSION) + "\n");
    const auto rxe = add_device("rxe0");
    const auto old = add_device("sroce1");
    write_attr(old, std::to_string(SROCE_ABI_VERSION + 7) + "\n");
    const auto siw = add_device("siw_eth0");

    EXPECT_EQ(classify_at(sroce, kUnknown), MatchVerdict::kMatch);
    EXPECT_EQ(classify_at(rxe, kRxe), MatchVerdict::kNotSroce);
    EXPECT_EQ(classify_at(old, kUnknown), MatchVerdict::kAbiMismatch);
    EXPECT_EQ(classify_at(siw, RDMA_DRIVER_SIW), MatchVerdict::kNotSroce);
}

TEST_F(FakeSysfs, UnreadableAttributeFallsBackToTheName) {
    // A read error (here EISDIR) counts as "no attribute".
    const auto dev = add_device("other0");
    fs::create_directory(dev / SROCE_SYSFS_ABI_ATTR);
    EXPECT_EQ(read_abi_attr(dev.string()), std::nullopt);
    EXPECT_EQ(classify_at(dev, kUnknown), MatchVerdict::kNotSroce);
}

} // namespace
} // namespace sroce
