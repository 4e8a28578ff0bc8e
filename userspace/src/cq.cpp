// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Completion queues. The kernel writes CQEs into a ring the provider maps;
// polling reads them there without a system call. Arming (req_notify_cq)
// and resizing go through the kernel.
#include "provider.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>

namespace sroce {
namespace {

// Maps the ring a create or resize response describes.
int map_cq_ring(int cmd_fd, const sroce_queue_info& info, Mapping& mapping,
                ConsumerRing& ring) noexcept {
    const auto geometry = validate_ring(info, sizeof(sroce_cqe));
    if (!geometry)
        return EPROTO;
    Mapping mapped = Mapping::map_shared(cmd_fd, info.mmap_len, info.mmap_key);
    if (!mapped)
        return errno;
    ring = ConsumerRing{static_cast<std::byte*>(mapped.data()), *geometry};
    mapping = std::move(mapped);
    return 0;
}

} // namespace

ibv_cq* create_cq(ibv_context* ctx, int cqe, ibv_comp_channel* channel, int comp_vector) noexcept {
    auto* cq = new (std::nothrow) Cq{};
    if (cq == nullptr) {
        set_errno(ENOMEM);
        return nullptr;
    }
    verbs_cmd_create_cq cmd{};
    WithDriverData<ib_uverbs_create_cq_resp, sroce_create_cq_resp> resp;
    int err = ibv_cmd_create_cq(ctx, cqe, channel, comp_vector, &cq->vcq.cq, &cmd, sizeof(cmd),
                                resp.core(), resp.size());
    if (err != 0) {
        delete cq;
        set_errno(err);
        return nullptr;
    }
    err = map_cq_ring(ctx->cmd_fd, resp.driver().cq, cq->mapping, cq->ring);
    if (err != 0) {
        (void)ibv_cmd_destroy_cq(&cq->vcq.cq);
        delete cq;
        set_errno(err);
        return nullptr;
    }
    return &cq->vcq.cq;
}

// --- the extended poll API ----------------------------------------------------

namespace {

constexpr std::uint64_t kTimestampWcFlags =
        IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
constexpr std::uint64_t kSupportedWcFlags = IBV_WC_STANDARD_FLAGS | kTimestampWcFlags;

Cq& cq_of(ibv_cq_ex* cqx) noexcept {
    return *reinterpret_cast<Cq*>(cqx);
}

void load_current(Cq& cq) noexcept {
    const std::byte* slot = cq.ring.peek(cq.polled);
    decode_cqe(slot, cq.current);
    if (cq.timestamps) {
        std::memcpy(&cq.timestamp, slot + offsetof(sroce_cqe, timestamp), sizeof(cq.timestamp));
        std::memcpy(&cq.wallclock_ns, slot + offsetof(sroce_cqe, wallclock_ns),
                    sizeof(cq.wallclock_ns));
    }
    cq.vcq.cq_ex.wr_id = cq.current.wr_id;
    cq.vcq.cq_ex.status = cq.current.status;
}

int start_poll(ibv_cq_ex* cqx, ibv_poll_cq_attr* attr) noexcept {
    if (attr != nullptr && attr->comp_mask != 0)
        return EINVAL;
    Cq& cq = cq_of(cqx);
    cq.lock.lock();
    if (cq.resizing || cq.ring.available() == 0) {
        cq.lock.unlock(); // the caller does not end_poll after ENOENT
        return ENOENT;
    }
    cq.polled = 0;
    load_current(cq);
    return 0;
}

int next_poll(ibv_cq_ex* cqx) noexcept {
    Cq& cq = cq_of(cqx);
    if (cq.ring.available() <= cq.polled + 1)
        return ENOENT;
    ++cq.polled;
    load_current(cq);
    return 0;
}

void end_poll(ibv_cq_ex* cqx) noexcept {
    Cq& cq = cq_of(cqx);
    cq.ring.consume(cq.polled + 1);
    cq.polled = 0;
    cq.lock.unlock();
}

ibv_wc_opcode read_opcode(ibv_cq_ex* cqx) noexcept {
    return cq_of(cqx).current.opcode;
}
std::uint32_t read_vendor_err(ibv_cq_ex* cqx) noexcept {
    return cq_of(cqx).current.vendor_err;
}
std::uint32_t read_byte_len(ibv_cq_ex* cqx) noexcept {
    return cq_of(cqx).current.byte_len;
}
__be32 read_imm_data(ibv_cq_ex* cqx) noexcept {
    return cq_of(cqx).current.imm_data;
}
std::uint32_t read_qp_num(ibv_cq_ex* cqx) noexcept {
    return cq_of(cqx).current.qp_num;
}
std::uint32_t read_src_qp(ibv_cq_ex* cqx) noexcept {
    return cq_of(cqx).current.src_qp;
}
unsigned int read_wc_flags(ibv_cq_ex* cqx) noexcept {
    return cq_of(cqx).current.wc_flags;
}
std::uint32_t read_slid(ibv_cq_ex* cqx) noexcept {
    return cq_of(cqx).current.slid;
}
std::uint8_t read_sl(ibv_cq_ex* cqx) noexcept {
    return cq_of(cqx).current.sl;
}
std::uint8_t read_dlid_path_bits(ibv_cq_ex* cqx) noexcept {
    return cq_of(cqx).current.dlid_path_bits;
}
std::uint64_t read_completion_ts(ibv_cq_ex* cqx) noexcept {
    return cq_of(cqx).timestamp;
}
std::uint64_t read_completion_wallclock_ns(ibv_cq_ex* cqx) noexcept {
    return cq_of(cqx).wallclock_ns;
}

} // namespace

void setup_cq_ex(Cq& cq) noexcept {
    ibv_cq_ex& cqx = cq.vcq.cq_ex;
    cqx.start_poll = start_poll;
    cqx.next_poll = next_poll;
    cqx.end_poll = end_poll;
    cqx.read_opcode = read_opcode;
    cqx.read_vendor_err = read_vendor_err;
    cqx.read_byte_len = read_byte_len;
    cqx.read_imm_data = read_imm_data;
    cqx.read_qp_num = read_qp_num;
    cqx.read_src_qp = read_src_qp;
    cqx.read_wc_flags = read_wc_flags;
    cqx.read_slid = read_slid;
    cqx.read_sl = read_sl;
    cqx.read_dlid_path_bits = read_dlid_path_bits;
    if (cq.timestamps) { // the kernel writes both clocks
        cqx.read_completion_ts = read_completion_ts;
        cqx.read_completion_wallclock_ns = read_completion_wallclock_ns;
    }
}

// VLAN, flow tags and the like are not produced; a CQ that asks for them
// is refused rather than handed zeros. Completion timestamps are: the
// kernel writes them into the CQEs of CQs created with its flag.
// A CQ may name a parent domain (of this context), which only says which
// allocators and thread domain to use: nothing to pass to the kernel.
ibv_cq_ex* create_cq_ex(ibv_context* ctx, ibv_cq_init_attr_ex* attr) noexcept {
    constexpr std::uint32_t known = IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD;
    const bool flags_ok = (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) == 0 || attr->flags == 0;
    if ((attr->wc_flags & ~kSupportedWcFlags) != 0 || (attr->comp_mask & ~known) != 0 ||
        !flags_ok) {
        set_errno(EOPNOTSUPP);
        return nullptr;
    }
    if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) != 0 &&
        (attr->parent_domain == nullptr || attr->parent_domain->context != ctx ||
         parent_domain(attr->parent_domain) == nullptr)) {
        set_errno(EINVAL);
        return nullptr;
    }
    ibv_cq_init_attr_ex request = *attr;
    request.comp_mask &= ~static_cast<std::uint32_t>(IBV_CQ_INIT_ATTR_MASK_PD);
    auto* cq = new (std::nothrow) Cq{};
    if (cq == nullptr) {
        set_errno(ENOMEM);
        return nullptr;
    }
    verbs_cmd_create_cq_ex cmd{};
    WithDriverData<ib_uverbs_ex_create_cq_resp, sroce_create_cq_resp> resp;
    // libibverbs asks the kernel for timestamps when wc_flags name one.
    cq->timestamps = (attr->wc_flags & kTimestampWcFlags) != 0;
    int err = sroce_cmd_create_cq_ex(ctx, &request, &cq->vcq, &cmd, sizeof(cmd), resp.core(),
                                     resp.size(), 0);
    if (err != 0) {
        delete cq;
        set_errno(err);
        return nullptr;
    }
    err = map_cq_ring(ctx->cmd_fd, resp.driver().cq, cq->mapping, cq->ring);
    if (err != 0) {
        (void)ibv_cmd_destroy_cq(&cq->vcq.cq);
        delete cq;
        set_errno(err);
        return nullptr;
    }
    setup_cq_ex(*cq);
    return &cq->vcq.cq_ex;
}

int destroy_cq(ibv_cq* ibcq) noexcept {
    const int err = ibv_cmd_destroy_cq(ibcq);
    if (err != 0)
        return err;
    delete to_cq(ibcq); // unmaps the ring
    return 0;
}

namespace {

// Marks the CQ resizing (pollers find it empty) until the new ring, if
// any, replaces the old one; the old mapping goes after the lock is dropped.
class ResizeState {
public:
    explicit ResizeState(Cq& cq) noexcept : cq_{cq} {
        const std::lock_guard guard{cq_.lock};
        cq_.resizing = true;
    }
    ResizeState(const ResizeState&) = delete;
    ResizeState& operator=(const ResizeState&) = delete;
    ResizeState(ResizeState&&) = delete;
    ResizeState& operator=(ResizeState&&) = delete;
    ~ResizeState() {
        Mapping old;
        const std::lock_guard guard{cq_.lock};
        if (new_mapping_) {
            cq_.ring = new_ring_;
            old = std::exchange(cq_.mapping, std::move(new_mapping_));
        }
        cq_.resizing = false;
    }
    void replace(Mapping mapping, const ConsumerRing& ring) noexcept {
        new_mapping_ = std::move(mapping);
        new_ring_ = ring;
    }

private:
    Cq& cq_;
    Mapping new_mapping_;
    ConsumerRing new_ring_;
};

} // namespace

// The kernel copies the unconsumed CQEs into a new ring and from then on
// writes only there. Pollers are kept off the old ring by the resizing
// state, not by the lock: they return at once instead of spinning through
// the kernel's allocation and mapping (a SCHED_FIFO poller on the
// resizer's CPU would never let it finish).
int resize_cq(ibv_cq* ibcq, int cqe) noexcept {
    Cq* cq = to_cq(ibcq);
    const std::lock_guard serial{cq->resize_mutex};
    ResizeState state{*cq};
    verbs_cmd_resize_cq cmd{};
    WithDriverData<ib_uverbs_resize_cq_resp, sroce_resize_cq_resp> resp;
    const int err = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), resp.core(), resp.size());
    if (err != 0)
        return err;
    // Should mapping fail now, the old ring stays mapped but is no longer
    // written: the CQ reports no more completions. Only ENOMEM gets here.
    Mapping mapping;
    ConsumerRing ring;
    const int map_err = map_cq_ring(ibcq->context->cmd_fd, resp.driver().cq, mapping, ring);
    if (map_err == 0)
        state.replace(std::move(mapping), ring);
    return map_err;
}

int poll_cq(ibv_cq* ibcq, int num_entries, ibv_wc* wc) noexcept {
    if (num_entries <= 0)
        return num_entries == 0 ? 0 : -EINVAL;
    Cq* cq = to_cq(ibcq);
    const std::lock_guard guard{cq->lock};
    if (cq->resizing)
        return 0;
    const std::uint32_t n = std::min(cq->ring.available(), static_cast<std::uint32_t>(num_entries));
    for (std::uint32_t i = 0; i < n; ++i)
        decode_cqe(cq->ring.peek(i), wc[i]);
    if (n != 0)
        cq->ring.consume(n);
    return static_cast<int>(n);
}

void discard_qp_cqes(ibv_cq* ibcq, std::uint32_t qp_num) noexcept {
    Cq* cq = to_cq(ibcq);
    const std::lock_guard serial{cq->resize_mutex};
    const std::lock_guard guard{cq->lock};
    (void)cq->ring.discard_if([qp_num](const std::byte* slot) {
        sroce_cqe cqe{};
        std::memcpy(&cqe, slot, sizeof(cqe));
        return cqe.qp_num == qp_num;
    });
}

int req_notify_cq(ibv_cq* ibcq, int solicited_only) noexcept {
    return ibv_cmd_req_notify_cq(ibcq, solicited_only);
}

} // namespace sroce
