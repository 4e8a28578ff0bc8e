// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Checks src/verbs_private_abi.h against the libibverbs.so.1 installed on
// this machine: every function resolves under IBVERBS_PRIVATE_34, and the
// structures are where libibverbs reads and writes them. The static_asserts
// in the header pin the layouts of rdma-core v44; these tests catch a
// libibverbs that disagrees with them.
#include "abi_symbols.h"
#include "udata.h"
#include "verbs_private_abi.h"

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

namespace {

// --- symbols ---------------------------------------------------------------

struct PrivateSymbol {
    const char* name;
    void* linked; // what our declaration bound to at link time
};

#define SROCE_SYMBOL(fn) PrivateSymbol{#fn, reinterpret_cast<void*>(&(fn))},

std::vector<PrivateSymbol> declared_symbols() {
    return {SROCE_PRIVATE_FUNCTIONS(SROCE_SYMBOL)};
}

class Libibverbs {
public:
    Libibverbs() : handle_{::dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD)} {}
    Libibverbs(const Libibverbs&) = delete;
    Libibverbs& operator=(const Libibverbs&) = delete;
    Libibverbs(Libibverbs&&) = delete;
    Libibverbs& operator=(Libibverbs&&) = delete;
    ~Libibverbs() {
        if (handle_ != nullptr)
            ::dlclose(handle_);
    }
    [[nodiscard]] void* get() const { return handle_; }

private:
    void* handle_;
};

TEST(PrivateAbiSymbols, EveryDeclaredFunctionIsExportedUnderPrivate34) {
    const Libibverbs lib;
    ASSERT_NE(lib.get(), nullptr) << "libibverbs.so.1 is not loaded";
    for (const auto& sym : declared_symbols()) {
        void* const versioned = ::dlvsym(lib.get(), sym.name, SROCE_IBVERBS_PRIVATE_NODE);
        EXPECT_NE(versioned, nullptr) << sym.name << "@" SROCE_IBVERBS_PRIVATE_NODE;
        EXPECT_EQ(versioned, sym.linked)
                << sym.name << " bound to something other than its private version";
    }
}

TEST(PrivateAbiSymbols, VersionLookupIsReallyChecked) {
    // Guards the test above: a wrong version node must not resolve.
    const Libibverbs lib;
    ASSERT_NE(lib.get(), nullptr);
    EXPECT_EQ(::dlvsym(lib.get(), "ibv_cmd_alloc_pd", "IBVERBS_1.1"), nullptr);
    EXPECT_EQ(::dlvsym(lib.get(), "ibv_cmd_alloc_pd", "IBVERBS_PRIVATE_33"), nullptr);
    EXPECT_EQ(::dlvsym(lib.get(), "verbs_register_driver_33", SROCE_IBVERBS_PRIVATE_NODE), nullptr);
}

// --- a context on a pipe ---------------------------------------------------
//
// libibverbs builds a context around any fd. On a pipe the verbs ioctl fails
// with ENOTTY, so the ibv_cmd_* helpers fall back to write(): the test reads
// the exact command bytes from the other end.

struct Pipe {
    Pipe() {
        std::array<int, 2> fds{-1, -1};
        if (::pipe2(fds.data(), O_CLOEXEC | O_NONBLOCK) == 0) {
            read_end = fds[0];
            write_end = fds[1];
        }
    }
    Pipe(const Pipe&) = delete;
    Pipe& operator=(const Pipe&) = delete;
    Pipe(Pipe&&) = delete;
    Pipe& operator=(Pipe&&) = delete;
    ~Pipe() {
        if (read_end >= 0)
            ::close(read_end);
    }
    [[nodiscard]] std::vector<std::byte> drain() const {
        std::vector<std::byte> bytes(4096);
        const ssize_t n = ::read(read_end, bytes.data(), bytes.size());
        bytes.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
        return bytes;
    }
    int read_end = -1;
    int write_end = -1; // handed to the context, which closes it
};

// A driver context with something before its verbs_context, to check that
// _verbs_init_and_alloc_context takes the member's offset.
struct PaddedContext {
    std::array<std::uint64_t, 5> before;
    verbs_context vctx;
    std::uint64_t after;
};

class FakeContext : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_GE(pipe_.write_end, 0);
        device_.ops = &device_ops_;
        device_.refcount = 1;
        std::strcpy(device_.device.name, "fake0");
        ctx_ = static_cast<PaddedContext*>(_verbs_init_and_alloc_context(
                &device_.device, pipe_.write_end, sizeof(PaddedContext),
                // The API takes the member offset disguised as a pointer.
                // NOLINTNEXTLINE(performance-no-int-to-ptr)
                reinterpret_cast<verbs_context*>(offsetof(PaddedContext, vctx)), 0));
        ASSERT_NE(ctx_, nullptr);
    }
    void TearDown() override {
        if (ctx_ != nullptr) {
            ctx_->vctx.context.async_fd = -1; // a faked response may have set it to 0
            verbs_uninit_context(&ctx_->vctx);
            std::free(ctx_);
        }
    }
    ibv_context* ibctx() { return &ctx_->vctx.context; }

    Pipe pipe_;
    verbs_device_ops device_ops_{};
    verbs_device device_{};
    PaddedContext* ctx_ = nullptr;
};

TEST_F(FakeContext, InitPlacesTheContextAtTheGivenOffsetAndHoldsTheDevice) {
    EXPECT_EQ(ctx_->vctx.context.device, &device_.device);
    EXPECT_EQ(ctx_->vctx.context.cmd_fd, pipe_.write_end);
    EXPECT_EQ(ctx_->vctx.context.async_fd, -1);
    EXPECT_EQ(ctx_->vctx.sz, sizeof(verbs_context));
    EXPECT_NE(ctx_->vctx.priv, nullptr);
    EXPECT_EQ(ctx_->before, (std::array<std::uint64_t, 5>{}));
    EXPECT_EQ(ctx_->after, 0U);
    // ibverbs_device_hold() incremented verbs_device::refcount.
    EXPECT_EQ(device_.refcount, 2);
}

TEST_F(FakeContext, UninitReleasesTheDevice) {
    verbs_uninit_context(&ctx_->vctx);
    std::free(ctx_);
    ctx_ = nullptr;
    EXPECT_EQ(device_.refcount, 1);
}

// Every op, set to a distinct non-callable value; libibverbs copies each to
// the public field it keeps for it. A field we placed wrongly shows up as
// another op's value.
constexpr std::uintptr_t sentinel(std::size_t offset) {
    return 0x5ce0000 + offset;
}

template <typename Field>
std::uintptr_t raw(Field field) {
    return std::bit_cast<std::uintptr_t>(field);
}

#define SROCE_OFF(op) offsetof(verbs_context_ops, op)

TEST_F(FakeContext, SetOpsFindsEachOpWhereWeDeclaredIt) {
    constexpr std::size_t kOps = sizeof(verbs_context_ops) / sizeof(void*);
    std::array<std::uintptr_t, kOps> values{};
    for (std::size_t i = 0; i < kOps; ++i)
        values[i] = sentinel(i * sizeof(void*));
    verbs_context_ops ops{};
    static_assert(sizeof(values) == sizeof(ops));
    std::memcpy(&ops, values.data(), sizeof(ops));
    verbs_set_ops(&ctx_->vctx, &ops);

    const verbs_context& v = ctx_->vctx;
    const ibv_context_ops& c = ctx_->vctx.context.ops;

    // Ops libibverbs mirrors into struct verbs_context.
    EXPECT_EQ(raw(v.advise_mr), sentinel(SROCE_OFF(advise_mr)));
    EXPECT_EQ(raw(v.alloc_dm), sentinel(SROCE_OFF(alloc_dm)));
    EXPECT_EQ(raw(v.alloc_null_mr), sentinel(SROCE_OFF(alloc_null_mr)));
    EXPECT_EQ(raw(v.alloc_parent_domain), sentinel(SROCE_OFF(alloc_parent_domain)));
    EXPECT_EQ(raw(v.alloc_td), sentinel(SROCE_OFF(alloc_td)));
    EXPECT_EQ(raw(v.attach_counters_point_flow), sentinel(SROCE_OFF(attach_counters_point_flow)));
    EXPECT_EQ(raw(v.close_xrcd), sentinel(SROCE_OFF(close_xrcd)));
    EXPECT_EQ(raw(v.create_counters), sentinel(SROCE_OFF(create_counters)));
    EXPECT_EQ(raw(v.ibv_create_flow), sentinel(SROCE_OFF(create_flow)));
    EXPECT_EQ(raw(v.create_flow_action_esp), sentinel(SROCE_OFF(create_flow_action_esp)));
    EXPECT_EQ(raw(v.create_qp_ex), sentinel(SROCE_OFF(create_qp_ex)));
    EXPECT_EQ(raw(v.create_rwq_ind_table), sentinel(SROCE_OFF(create_rwq_ind_table)));
    EXPECT_EQ(raw(v.create_srq_ex), sentinel(SROCE_OFF(create_srq_ex)));
    EXPECT_EQ(raw(v.create_wq), sentinel(SROCE_OFF(create_wq)));
    EXPECT_EQ(raw(v.dealloc_td), sentinel(SROCE_OFF(dealloc_td)));
    EXPECT_EQ(raw(v.destroy_counters), sentinel(SROCE_OFF(destroy_counters)));
    EXPECT_EQ(raw(v.ibv_destroy_flow), sentinel(SROCE_OFF(destroy_flow)));
    EXPECT_EQ(raw(v.destroy_flow_action), sentinel(SROCE_OFF(destroy_flow_action)));
    EXPECT_EQ(raw(v.destroy_rwq_ind_table), sentinel(SROCE_OFF(destroy_rwq_ind_table)));
    EXPECT_EQ(raw(v.destroy_wq), sentinel(SROCE_OFF(destroy_wq)));
    EXPECT_EQ(raw(v.free_dm), sentinel(SROCE_OFF(free_dm)));
    EXPECT_EQ(raw(v.get_srq_num), sentinel(SROCE_OFF(get_srq_num)));
    EXPECT_EQ(raw(v.modify_cq), sentinel(SROCE_OFF(modify_cq)));
    EXPECT_EQ(raw(v.modify_flow_action_esp), sentinel(SROCE_OFF(modify_flow_action_esp)));
    EXPECT_EQ(raw(v.modify_qp_rate_limit), sentinel(SROCE_OFF(modify_qp_rate_limit)));
    EXPECT_EQ(raw(v.modify_wq), sentinel(SROCE_OFF(modify_wq)));
    EXPECT_EQ(raw(v.open_qp), sentinel(SROCE_OFF(open_qp)));
    EXPECT_EQ(raw(v.open_xrcd), sentinel(SROCE_OFF(open_xrcd)));
    EXPECT_EQ(raw(v.post_srq_ops), sentinel(SROCE_OFF(post_srq_ops)));
    EXPECT_EQ(raw(v.query_device_ex), sentinel(SROCE_OFF(query_device_ex)));
    EXPECT_EQ(raw(v.query_rt_values), sentinel(SROCE_OFF(query_rt_values)));
    EXPECT_EQ(raw(v.read_counters), sentinel(SROCE_OFF(read_counters)));
    EXPECT_EQ(raw(v.reg_dm_mr), sentinel(SROCE_OFF(reg_dm_mr)));

    // Ops mirrored into the legacy struct ibv_context_ops.
    EXPECT_EQ(raw(c.alloc_mw), sentinel(SROCE_OFF(alloc_mw)));
    EXPECT_EQ(raw(c.bind_mw), sentinel(SROCE_OFF(bind_mw)));
    EXPECT_EQ(raw(c.dealloc_mw), sentinel(SROCE_OFF(dealloc_mw)));
    EXPECT_EQ(raw(c.poll_cq), sentinel(SROCE_OFF(poll_cq)));
    EXPECT_EQ(raw(c.post_recv), sentinel(SROCE_OFF(post_recv)));
    EXPECT_EQ(raw(c.post_send), sentinel(SROCE_OFF(post_send)));
    EXPECT_EQ(raw(c.post_srq_recv), sentinel(SROCE_OFF(post_srq_recv)));
    EXPECT_EQ(raw(c.req_notify_cq), sentinel(SROCE_OFF(req_notify_cq)));
    EXPECT_EQ(raw(c._compat_alloc_pd), sentinel(SROCE_OFF(alloc_pd)));
    EXPECT_EQ(raw(c._compat_async_event), sentinel(SROCE_OFF(async_event)));
    EXPECT_EQ(raw(c._compat_attach_mcast), sentinel(SROCE_OFF(attach_mcast)));
    EXPECT_EQ(raw(c._compat_cq_event), sentinel(SROCE_OFF(cq_event)));
    EXPECT_EQ(raw(c._compat_create_ah), sentinel(SROCE_OFF(create_ah)));
    EXPECT_EQ(raw(c._compat_create_cq), sentinel(SROCE_OFF(create_cq)));
    EXPECT_EQ(raw(c._compat_create_qp), sentinel(SROCE_OFF(create_qp)));
    EXPECT_EQ(raw(c._compat_create_srq), sentinel(SROCE_OFF(create_srq)));
    EXPECT_EQ(raw(c._compat_dealloc_pd), sentinel(SROCE_OFF(dealloc_pd)));
    EXPECT_EQ(raw(c._compat_dereg_mr), sentinel(SROCE_OFF(dereg_mr)));
    EXPECT_EQ(raw(c._compat_destroy_ah), sentinel(SROCE_OFF(destroy_ah)));
    EXPECT_EQ(raw(c._compat_destroy_cq), sentinel(SROCE_OFF(destroy_cq)));
    EXPECT_EQ(raw(c._compat_destroy_qp), sentinel(SROCE_OFF(destroy_qp)));
    EXPECT_EQ(raw(c._compat_destroy_srq), sentinel(SROCE_OFF(destroy_srq)));
    EXPECT_EQ(raw(c._compat_detach_mcast), sentinel(SROCE_OFF(detach_mcast)));
    EXPECT_EQ(raw(c._compat_modify_qp), sentinel(SROCE_OFF(modify_qp)));
    EXPECT_EQ(raw(c._compat_modify_srq), sentinel(SROCE_OFF(modify_srq)));
    EXPECT_EQ(raw(c._compat_query_qp), sentinel(SROCE_OFF(query_qp)));
    EXPECT_EQ(raw(c._compat_query_srq), sentinel(SROCE_OFF(query_srq)));
    EXPECT_EQ(raw(c._compat_reg_mr), sentinel(SROCE_OFF(reg_mr)));
    EXPECT_EQ(raw(c._compat_rereg_mr), sentinel(SROCE_OFF(rereg_mr)));
    EXPECT_EQ(raw(c._compat_resize_cq), sentinel(SROCE_OFF(resize_cq)));
}

// Ops libibverbs keeps only privately: install a recorder in each and call
// the public function that dispatches to it.
const char* g_called = nullptr; // test-only: which recorder ran last

TEST_F(FakeContext, PrivateOnlyOpsDispatchToWhereWeDeclaredThem) {
    verbs_context_ops ops{};
    ops.free_context = [](ibv_context*) { g_called = "free_context"; };
    ops.query_port = [](ibv_context*, std::uint8_t, ibv_port_attr*) {
        g_called = "query_port";
        return 0;
    };
    // Ops sroce leaves unset are declared as UnusedOp; to call them, the
    // recorder is converted to that type and back by libibverbs' dispatch.
    ops.query_ece = reinterpret_cast<UnusedOp>(+[](ibv_qp*, ibv_ece*) {
        g_called = "query_ece";
        return 0;
    });
    ops.set_ece = reinterpret_cast<UnusedOp>(+[](ibv_qp*, ibv_ece*) {
        g_called = "set_ece";
        return 0;
    });
    ops.query_qp_data_in_order =
            reinterpret_cast<UnusedOp>(+[](ibv_qp*, ibv_wr_opcode, std::uint32_t) {
                g_called = "query_qp_data_in_order";
                return 0;
            });
    ops.import_pd = [](ibv_context*, std::uint32_t) -> ibv_pd* {
        g_called = "import_pd";
        return nullptr;
    };
    ops.unimport_pd = [](ibv_pd*) { g_called = "unimport_pd"; };
    ops.import_mr = [](ibv_pd*, std::uint32_t) -> ibv_mr* {
        g_called = "import_mr";
        return nullptr;
    };
    ops.unimport_mr = [](ibv_mr*) { g_called = "unimport_mr"; };
    ops.import_dm = reinterpret_cast<UnusedOp>(+[](ibv_context*, std::uint32_t) -> ibv_dm* {
        g_called = "import_dm";
        return nullptr;
    });
    ops.unimport_dm = reinterpret_cast<UnusedOp>(+[](ibv_dm*) { g_called = "unimport_dm"; });
    ops.reg_dmabuf_mr = reinterpret_cast<UnusedOp>(
            +[](ibv_pd*, std::uint64_t, std::size_t, std::uint64_t, int, int) -> ibv_mr* {
                g_called = "reg_dmabuf_mr";
                return nullptr;
            });
    verbs_set_ops(&ctx_->vctx, &ops);

    ibv_qp qp{};
    qp.context = ibctx();
    ibv_pd pd{};
    pd.context = ibctx();
    ibv_mr mr{};
    mr.context = ibctx();
    ibv_dm dm{};
    dm.context = ibctx();
    ibv_ece ece{};
    ece.vendor_id = 1;
    ibv_port_attr port{};

    auto expect_call = [](const char* name, auto&& call) {
        g_called = nullptr;
        call();
        ASSERT_NE(g_called, nullptr) << name << " reached no recorder";
        EXPECT_STREQ(g_called, name);
    };
    expect_call("query_port", [&] { ibv_query_port(ibctx(), 1, &port); });
    expect_call("query_ece", [&] { ibv_query_ece(&qp, &ece); });
    expect_call("set_ece", [&] { ibv_set_ece(&qp, &ece); });
    expect_call("query_qp_data_in_order", [&] { ibv_query_qp_data_in_order(&qp, IBV_WR_SEND, 0); });
    expect_call("import_pd", [&] { ibv_import_pd(ibctx(), 7); });
    expect_call("unimport_pd", [&] { ibv_unimport_pd(&pd); });
    expect_call("import_mr", [&] { ibv_import_mr(&pd, 7); });
    expect_call("unimport_mr", [&] { ibv_unimport_mr(&mr); });
    expect_call("import_dm", [&] { ibv_import_dm(ibctx(), 7); });
    expect_call("unimport_dm", [&] { ibv_unimport_dm(&dm); });
    expect_call("reg_dmabuf_mr", [&] { ibv_reg_dmabuf_mr(&pd, 0, 4096, 0, -1, 0); });
    expect_call("free_context", [&] { ibv_close_device(ibctx()); });
}

// VERBS_QP_EX and verbs_qp::comp_mask as ibv_qp_to_qp_ex() reads them.
TEST(VerbsQp, ExtendedFlagMakesQpToQpExWork) {
    verbs_qp vqp{};
    EXPECT_EQ(ibv_qp_to_qp_ex(&vqp.qp), nullptr);
    vqp.comp_mask = VERBS_QP_EX;
    EXPECT_EQ(ibv_qp_to_qp_ex(&vqp.qp), &vqp.qp_ex);
    vqp.comp_mask = VERBS_QP_XRCD;
    EXPECT_EQ(ibv_qp_to_qp_ex(&vqp.qp), nullptr);
}

// --- command layouts ---------------------------------------------------------

template <typename T>
T read_as(const std::vector<std::byte>& bytes, std::size_t offset = 0) {
    T value{};
    if (bytes.size() >= offset + sizeof(T))
        std::memcpy(&value, bytes.data() + offset, sizeof(T));
    return value;
}

TEST_F(FakeContext, AllocPdWritesOurCommandWithTheDriverResponseAfterTheCore) {
    verbs_cmd_alloc_pd cmd{};
    sroce::WithDriverData<ib_uverbs_alloc_pd_resp, std::array<std::uint32_t, 2>> resp;
    ibv_pd pd{};
    ASSERT_EQ(ibv_cmd_alloc_pd(ibctx(), &pd, &cmd, sizeof(cmd), resp.core(), resp.size()), 0);

    const auto bytes = pipe_.drain();
    ASSERT_EQ(bytes.size(), sizeof(cmd));
    const auto hdr = read_as<ib_uverbs_cmd_hdr>(bytes);
    EXPECT_EQ(hdr.command, static_cast<std::uint32_t>(IB_USER_VERBS_CMD_ALLOC_PD));
    EXPECT_EQ(hdr.in_words * 4U, sizeof(cmd));
    EXPECT_EQ(hdr.out_words * 4U, resp.size());
    const auto core = read_as<ib_uverbs_alloc_pd>(bytes, sizeof(hdr));
    EXPECT_EQ(core.response, reinterpret_cast<std::uintptr_t>(resp.core()));
    EXPECT_EQ(pd.context, ibctx());
}

// verbs_xrcd as libibverbs fills it: the handle it reads back from the
// response lands where close_xrcd (and XRC QP/SRQ creation) read it.
TEST_F(FakeContext, OpenXrcdFillsOurVerbsXrcdAndCloseSendsItsHandle) {
    verbs_cmd_open_xrcd cmd{};
    ib_uverbs_open_xrcd_resp resp{};
    resp.xrcd_handle = 0x5eed;
    verbs_xrcd xrcd{};
    ibv_xrcd_init_attr attr{};
    attr.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
    attr.fd = 42;
    attr.oflags = O_CREAT;
    ASSERT_EQ(ibv_cmd_open_xrcd(ibctx(), &xrcd, sizeof(xrcd), &attr, &cmd, sizeof(cmd), &resp,
                                sizeof(resp)),
              0);
    auto bytes = pipe_.drain();
    ASSERT_EQ(bytes.size(), sizeof(cmd));
    const auto hdr = read_as<ib_uverbs_cmd_hdr>(bytes);
    EXPECT_EQ(hdr.command, static_cast<std::uint32_t>(IB_USER_VERBS_CMD_OPEN_XRCD));
    const auto core = read_as<ib_uverbs_open_xrcd>(bytes, sizeof(hdr));
    EXPECT_EQ(core.fd, 42U);
    EXPECT_EQ(core.oflags, static_cast<std::uint32_t>(O_CREAT));
    EXPECT_EQ(xrcd.xrcd.context, ibctx());
    EXPECT_EQ(xrcd.comp_mask, static_cast<std::uint32_t>(VERBS_XRCD_HANDLE));
    EXPECT_EQ(xrcd.handle, 0x5eedU);

    // The pipe accepts the command; only the handle sent matters here.
    (void)ibv_cmd_close_xrcd(&xrcd);
    bytes = pipe_.drain();
    const auto close = read_as<ib_uverbs_close_xrcd>(bytes, sizeof(hdr));
    EXPECT_EQ(read_as<ib_uverbs_cmd_hdr>(bytes).command,
              static_cast<std::uint32_t>(IB_USER_VERBS_CMD_CLOSE_XRCD));
    EXPECT_EQ(close.xrcd_handle, 0x5eedU);
}

TEST_F(FakeContext, CreateCqPassesDriverPayloadAfterTheCoreCommand) {
    using Payload = std::array<std::uint64_t, 2>;
    sroce::WithDriverData<verbs_cmd_create_cq, Payload> cmd;
    cmd.set_driver({0x1122334455667788ULL, 0x99aabbccddeeff00ULL});
    sroce::WithDriverData<ib_uverbs_create_cq_resp, std::array<std::uint64_t, 3>> resp;
    ibv_cq cq{};
    ASSERT_EQ(ibv_cmd_create_cq(ibctx(), 63, nullptr, 0, &cq, cmd.core(), cmd.size(), resp.core(),
                                resp.size()),
              0);

    const auto bytes = pipe_.drain();
    ASSERT_EQ(bytes.size(), cmd.size());
    const auto hdr = read_as<ib_uverbs_cmd_hdr>(bytes);
    EXPECT_EQ(hdr.command, static_cast<std::uint32_t>(IB_USER_VERBS_CMD_CREATE_CQ));
    EXPECT_EQ(hdr.in_words * 4U, cmd.size());
    EXPECT_EQ(hdr.out_words * 4U, resp.size());
    const auto core = read_as<ib_uverbs_create_cq>(bytes, sizeof(hdr));
    EXPECT_EQ(core.response, reinterpret_cast<std::uintptr_t>(resp.core()));
    EXPECT_EQ(core.user_handle, reinterpret_cast<std::uintptr_t>(&cq));
    EXPECT_EQ(core.cqe, 63U);
    EXPECT_EQ(core.comp_channel, -1);
    EXPECT_EQ(read_as<Payload>(bytes, sizeof(verbs_cmd_create_cq)), cmd.driver());
}

TEST_F(FakeContext, QueryPortAndGetContextUseOurCommandSizes) {
    verbs_cmd_query_port qcmd{};
    ibv_port_attr attr{};
    ASSERT_EQ(ibv_cmd_query_port(ibctx(), 1, &attr, &qcmd, sizeof(qcmd)), 0);
    auto bytes = pipe_.drain();
    ASSERT_EQ(bytes.size(), sizeof(qcmd));
    auto hdr = read_as<ib_uverbs_cmd_hdr>(bytes);
    EXPECT_EQ(hdr.command, static_cast<std::uint32_t>(IB_USER_VERBS_CMD_QUERY_PORT));
    EXPECT_EQ(read_as<ib_uverbs_query_port>(bytes, sizeof(hdr)).port_num, 1);

    verbs_cmd_get_context gcmd{};
    sroce::WithDriverData<ib_uverbs_get_context_resp, std::array<std::uint32_t, 2>> gresp;
    ASSERT_EQ(ibv_cmd_get_context(&ctx_->vctx, &gcmd, sizeof(gcmd), gresp.core(), gresp.size()), 0);
    bytes = pipe_.drain();
    ASSERT_EQ(bytes.size(), sizeof(gcmd));
    hdr = read_as<ib_uverbs_cmd_hdr>(bytes);
    EXPECT_EQ(hdr.command, static_cast<std::uint32_t>(IB_USER_VERBS_CMD_GET_CONTEXT));
    EXPECT_EQ(hdr.out_words * 4U, gresp.size());
    EXPECT_EQ(read_as<ib_uverbs_get_context>(bytes, sizeof(hdr)).response,
              reinterpret_cast<std::uintptr_t>(gresp.core()));
}

// --- verbs_sysfs_dev -------------------------------------------------------

TEST(SysfsDev, LibibverbsReadsAttributesUnderOurIbdevPath) {
    namespace fs = std::filesystem;
    std::string dir = (fs::temp_directory_path() / "sroce-abi-XXXXXX").string();
    ASSERT_NE(::mkdtemp(dir.data()), nullptr);
    std::ofstream{fs::path{dir} / "sroce_abi_version"} << "1\n";

    verbs_sysfs_dev dev{};
    ASSERT_LT(dir.size(), sizeof(dev.ibdev_path));
    std::memcpy(dev.ibdev_path, dir.c_str(), dir.size() + 1);
    std::array<char, 16> buf{};
    EXPECT_EQ(ibv_read_ibdev_sysfs_file(buf.data(), buf.size(), &dev, "%s", "sroce_abi_version"),
              1);
    EXPECT_STREQ(buf.data(), "1");
    fs::remove_all(dir);
}

} // namespace

namespace {

// libibverbs dlopen()s providers with RTLD_NOW: every symbol must resolve.
TEST(ProviderLoad, DlopenResolvesEveryReference) {
    void* handle = ::dlopen(SROCE_PROVIDER_FILE, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << SROCE_PROVIDER_FILE;
    // It exports nothing, not even the rdma-core style static-provider alias.
    EXPECT_EQ(::dlsym(handle, "verbs_provider_sroce"), nullptr);
    ::dlclose(handle);
}

} // namespace
