// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Objects of the sroce provider as libibverbs sees them, and the entry
// points of the verbs it implements. Every entry point is noexcept: nothing
// may unwind into libibverbs' C frames.
#pragma once

#include "mapping.h"
#include "ring.h"
#include "spin_lock.h"
#include "udata.h"
#include "verbs_private_abi.h"
#include "wqe.h"

#include <rdma/sroce-abi.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <mutex>
#include <type_traits>

namespace sroce {

inline constexpr const char* kProviderName = "sroce";

// The kernel registers sroce devices with this driver id; every ioctl the
// provider issues carries it, and the kernel refuses any other.
inline constexpr std::uint32_t kDriverId = RDMA_DRIVER_UNKNOWN;

struct Device {
    verbs_device vdev; // first: libibverbs owns a pointer to it
};

// Allocated (zeroed) by libibverbs' _verbs_init_and_alloc_context, freed with
// free() in free_context: it must stay an implicit-lifetime aggregate.
struct Context {
    verbs_context vctx;
};
static_assert(std::is_trivially_copyable_v<Context> && std::is_standard_layout_v<Context>);
static_assert(offsetof(Context, vctx) == 0);

// A thread domain: the application's promise that one thread at a time uses
// what it is attached to. sroce's post and poll paths stay correct without
// it; the count keeps a thread domain from going while parent domains name it.
struct Td {
    ibv_td td{};
    std::atomic<std::uint32_t> parents{0};
};

// A protection domain, or a parent domain: an ibv_pd that stands for its
// protection domain (same kernel handle) and carries the application's
// context and thread domain. Verbs given a parent domain act on its
// protection domain. Its memory allocators are accepted and not called:
// every ring sroce uses is kernel memory mapped into the process.
struct Pd {
    ibv_pd pd{};
    std::uint32_t pdn = 0;
    Pd* protection = nullptr; // a parent domain's protection domain
    Td* td = nullptr;         // a parent domain's thread domain, if any
    // parent domains naming this protection domain: it goes after them
    std::atomic<std::uint32_t> parents{0};
};

// Objects below embed the libibverbs struct first and are standard-layout,
// so a pointer to that struct converts back with reinterpret_cast.

struct Mr {
    verbs_mr vmr;
};

struct Mw {
    ibv_mw mw{};
};

struct Ah {
    ibv_ah ah{};
    std::uint32_t ah_num = 0; // the kernel's handle, put in UD send WQEs
};

struct Cq {
    verbs_cq vcq{};
    SpinLock lock;
    ConsumerRing ring; // guarded by lock
    Mapping mapping;   // guarded by lock (replaced by resize)
    // While resize_cq is in the kernel, which copies the unconsumed CQEs
    // from the consumer index it reads: nothing may consume or rewrite the
    // ring then, so polls find it empty (guarded by lock). The lock is not
    // held across the system call: pollers would spin behind it.
    bool resizing = false;
    // Held (sleeping) by resize_cq throughout and by whatever rewrites the
    // ring other than a poll, so these wait for a resize rather than see
    // an empty CQ; taken before lock.
    std::mutex resize_mutex;
    // The extended poll API (start_poll ... end_poll, lock held): CQEs
    // returned so far, and the decoded current one.
    std::uint32_t polled = 0;
    ibv_wc current{};
    // Created with completion timestamps: the current CQE's two clocks.
    bool timestamps = false;
    std::uint64_t timestamp = 0;
    std::uint64_t wallclock_ns = 0;
};

struct SendQueue {
    SpinLock lock;
    ProducerRing ring; // guarded by lock
    SendQueueLimits limits;
    Mapping mapping;
};

struct RecvQueue {
    SpinLock lock;
    ProducerRing ring; // guarded by lock
    RecvQueueLimits limits;
    Mapping mapping;
};

// The send WR being built through the ibv_wr_* API, between wr_start and
// wr_complete (guarded by the SQ lock, which wr_start takes).
struct WrBatch {
    std::uint32_t count = 0;  // WQEs written after the ring's head
    int err = 0;              // first error; wr_complete reports it
    bool pending = false;     // an opcode was given, its data not yet
    std::uint32_t ah_num = 0; // of the pending UD WR
    ibv_send_wr staged{};     // the pending WR, minus its data
};

struct Qp {
    verbs_qp vqp{};
    SendQueue sq;
    RecvQueue rq;
    WrBatch batch;
    // The state as last set through modify_qp or seen by query_qp, for the
    // checks posting does; the kernel may since have moved it to an error
    // state, where posting is allowed anyway.
    std::atomic<int> state{IBV_QPS_RESET};
    // The errno of a doorbell the kernel refused after WQEs were published
    // (ring_doorbell()); 0: none. Those WQEs stay posted, so the refusal is
    // the next post's answer, one that publishes nothing.
    std::atomic<int> doorbell_error{0};
    // The doorbell: a uverbs POST_SEND write with no work requests. Built
    // once; the kernel writes doorbell_resp. (Last: the command struct ends
    // in a flexible array.)
    ib_uverbs_post_send_resp doorbell_resp{};
    verbs_cmd_post_send doorbell{};
};

struct Srq {
    verbs_srq vsrq{};
    RecvQueue rq;
};

static_assert(std::is_standard_layout_v<Mr> && std::is_standard_layout_v<Mw> &&
              std::is_standard_layout_v<Ah> && std::is_standard_layout_v<Cq> &&
              std::is_standard_layout_v<Qp> && std::is_standard_layout_v<Srq>);

inline Context* to_context(ibv_context* ctx) noexcept {
    // ibv_context is the last member of verbs_context (public verbs.h), and
    // verbs_context is the first member of Context.
    return reinterpret_cast<Context*>(reinterpret_cast<char*>(ctx) -
                                      offsetof(verbs_context, context));
}

inline Pd* to_pd(ibv_pd* pd) noexcept {
    return reinterpret_cast<Pd*>(pd);
}
static_assert(std::is_standard_layout_v<Pd> && std::is_standard_layout_v<Td>);
inline Td* to_td(ibv_td* td) noexcept {
    return reinterpret_cast<Td*>(td);
}
inline Mr* to_mr(verbs_mr* mr) noexcept {
    return reinterpret_cast<Mr*>(mr);
}
inline Mw* to_mw(ibv_mw* mw) noexcept {
    return reinterpret_cast<Mw*>(mw);
}
inline Ah* to_ah(ibv_ah* ah) noexcept {
    return reinterpret_cast<Ah*>(ah);
}
inline Cq* to_cq(ibv_cq* cq) noexcept {
    return reinterpret_cast<Cq*>(cq);
}
inline Qp* to_qp(ibv_qp* qp) noexcept {
    return reinterpret_cast<Qp*>(qp);
}
inline Srq* to_srq(ibv_srq* srq) noexcept {
    return reinterpret_cast<Srq*>(srq);
}

// ibv_cmd_* return a positive errno value; pointer-returning verbs report
// through errno.
inline int set_errno(int err) noexcept {
    errno = err;
    return err;
}

// What the provider registers with libibverbs (provider.cpp).
const verbs_device_ops& device_ops() noexcept;

// --- verbs (context.cpp) ---------------------------------------------------
verbs_context* alloc_context(ibv_device* device, int cmd_fd, void* private_data) noexcept;
void free_context(ibv_context* ctx) noexcept;
verbs_context* import_context(ibv_device* device, int cmd_fd) noexcept;
int query_rt_values(ibv_context* ctx, ibv_values_ex* values) noexcept;
int query_device_ex(ibv_context* ctx, const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, std::size_t attr_size) noexcept;
int query_port(ibv_context* ctx, std::uint8_t port_num, ibv_port_attr* attr) noexcept;
ibv_pd* alloc_pd(ibv_context* ctx) noexcept;
int dealloc_pd(ibv_pd* pd) noexcept;
ibv_pd* import_pd(ibv_context* ctx, std::uint32_t pd_handle) noexcept;
void unimport_pd(ibv_pd* pd) noexcept;
ibv_pd* alloc_parent_domain(ibv_context* ctx, ibv_parent_domain_init_attr* attr) noexcept;
ibv_td* alloc_td(ibv_context* ctx, ibv_td_init_attr* attr) noexcept;
int dealloc_td(ibv_td* td) noexcept;
// The parent domain a PD argument names, or null for a protection domain.
Pd* parent_domain(ibv_pd* pd) noexcept;
// XRC domains: the kernel shares them by file; nothing of ours to keep.
ibv_xrcd* open_xrcd(ibv_context* ctx, ibv_xrcd_init_attr* attr) noexcept;
int close_xrcd(ibv_xrcd* xrcd) noexcept;

// --- memory regions and address handles (mr.cpp) --------------------------
ibv_mr* reg_mr(ibv_pd* pd, void* addr, std::size_t length, std::uint64_t hca_va,
               int access) noexcept;
int rereg_mr(verbs_mr* mr, int flags, ibv_pd* pd, void* addr, std::size_t length,
             int access) noexcept;
int dereg_mr(verbs_mr* mr) noexcept;
ibv_mr* import_mr(ibv_pd* pd, std::uint32_t mr_handle) noexcept;
void unimport_mr(ibv_mr* mr) noexcept;
int advise_mr(ibv_pd* pd, ib_uverbs_advise_mr_advice advice, std::uint32_t flags, ibv_sge* sg_list,
              std::uint32_t num_sge) noexcept;
ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type) noexcept;
int dealloc_mw(ibv_mw* mw) noexcept;
ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr) noexcept;
int destroy_ah(ibv_ah* ah) noexcept;
// UD multicast: the kernel keeps the groups (generic uverbs commands).
int attach_mcast(ibv_qp* qp, const ibv_gid* gid, std::uint16_t lid) noexcept;
int detach_mcast(ibv_qp* qp, const ibv_gid* gid, std::uint16_t lid) noexcept;

// --- completion queues (cq.cpp) ---------------------------------------------
ibv_cq* create_cq(ibv_context* ctx, int cqe, ibv_comp_channel* channel, int comp_vector) noexcept;
ibv_cq_ex* create_cq_ex(ibv_context* ctx, ibv_cq_init_attr_ex* attr) noexcept;
// Installs the extended poll API on a CQ (create_cq_ex does this; tests too).
void setup_cq_ex(Cq& cq) noexcept;
int destroy_cq(ibv_cq* cq) noexcept;
int resize_cq(ibv_cq* cq, int cqe) noexcept;
int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc) noexcept;
int req_notify_cq(ibv_cq* cq, int solicited_only) noexcept;
// Drops the completions of QP qp_num not yet polled from cq: a QP moved to
// RESET or destroyed leaves nothing of its past behind (as hardware
// providers do), so an application that resets a QP in error polls no stale
// flush completions afterwards.
void discard_qp_cqes(ibv_cq* cq, std::uint32_t qp_num) noexcept;

// --- queue pairs (qp.cpp) -----------------------------------------------------
ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) noexcept;
ibv_qp* create_qp_ex(ibv_context* ctx, ibv_qp_init_attr_ex* attr) noexcept;
int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) noexcept;
int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr) noexcept;
int destroy_qp(ibv_qp* qp) noexcept;
ibv_qp* open_qp(ibv_context* ctx, ibv_qp_open_attr* attr) noexcept;
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) noexcept;
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;
// Binds a type 1 window: a bind WQE through the send queue, like a send WR.
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* mw_bind) noexcept;

// Fills qp.doorbell for the QP's handle (create does this; tests too).
void init_doorbell(Qp& qp) noexcept;

// Makes the QP an extended one (ibv_qp_to_qp_ex) serving these
// IBV_QP_EX_WITH_* operations; false if one of them is not supported.
bool setup_qp_ex(Qp& qp, std::uint64_t send_ops_flags) noexcept;
bool send_ops_supported(ibv_qp_type qp_type, std::uint64_t send_ops_flags) noexcept;
// Rings the send doorbell (write on the command fd); a refusal is kept in
// qp.doorbell_error, which refused_doorbell() reads for the next post.
void ring_doorbell(Qp& qp) noexcept;
int refused_doorbell(const Qp& qp) noexcept;
// After publishing send WQEs: rings the doorbell unless the kernel is
// draining the SQ (SROCE_RING_FLAG_SQ_DRAINING, sroce-abi.h).
void wake_send_queue(Qp& qp) noexcept;

// Writes a chain of receive WRs into a receive ring (RQ or SRQ) and
// publishes them; no system call.
int post_to_recv_queue(RecvQueue& rq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;

// --- shared receive queues (srq.cpp) ---------------------------------------
ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) noexcept;
// Basic and XRC SRQs (an XRC SRQ completes into its own CQ).
ibv_srq* create_srq_ex(ibv_context* ctx, ibv_srq_init_attr_ex* ex) noexcept;
int get_srq_num(ibv_srq* srq, std::uint32_t* srq_num) noexcept;
int modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask) noexcept;
int query_srq(ibv_srq* srq, ibv_srq_attr* attr) noexcept;
int destroy_srq(ibv_srq* srq) noexcept;
int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;

} // namespace sroce
