// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Memory regions, memory windows, address handles and multicast
// attach/detach: plain uverbs commands; the kernel pins memory (or maps it
// on demand: ODP, with ibv_advise_mr prefetch), keeps the
// keys, resolves addresses and keeps the groups. Windows are bound through
// the send queue (qp.cpp, wqe.cpp).
#include "provider.h"

#include <new>

namespace sroce {

ibv_mr* reg_mr(ibv_pd* pd, void* addr, std::size_t length, std::uint64_t hca_va,
               int access) noexcept {
    auto* mr = new (std::nothrow) Mr{};
    if (mr == nullptr) {
        set_errno(ENOMEM);
        return nullptr;
    }
    verbs_cmd_reg_mr cmd{};
    ib_uverbs_reg_mr_resp resp{};
    const int err = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, &mr->vmr, &cmd, sizeof(cmd),
                                   &resp, sizeof(resp));
    if (err != 0) {
        delete mr;
        set_errno(err);
        return nullptr;
    }
    return &mr->vmr.mr;
}

// The kernel registers anew and returns new keys, which libibverbs copies
// into the ibv_mr; the old registration is gone once this succeeds.
int rereg_mr(verbs_mr* vmr, int flags, ibv_pd* pd, void* addr, std::size_t length,
             int access) noexcept {
    verbs_cmd_rereg_mr cmd{};
    ib_uverbs_rereg_mr_resp resp{};
    return ibv_cmd_rereg_mr(vmr, static_cast<std::uint32_t>(flags), addr, length,
                            reinterpret_cast<std::uintptr_t>(addr), access, pd, &cmd, sizeof(cmd),
                            &resp, sizeof(resp));
}

// Prefetch of on-demand paging MRs: the kernel faults the pages in.
int advise_mr(ibv_pd* pd, ib_uverbs_advise_mr_advice advice, std::uint32_t flags, ibv_sge* sg_list,
              std::uint32_t num_sge) noexcept {
    return ibv_cmd_advise_mr(pd, advice, flags, sg_list, num_sge);
}

int dereg_mr(verbs_mr* vmr) noexcept {
    const int err = ibv_cmd_dereg_mr(vmr);
    if (err != 0)
        return err;
    delete to_mr(vmr);
    return 0;
}

// ibv_import_mr: the kernel checks the handle and reports the keys and
// length (not the address, which belongs to the owner's address space).
ibv_mr* import_mr(ibv_pd* pd, std::uint32_t mr_handle) noexcept {
    auto* mr = new (std::nothrow) Mr{};
    if (mr == nullptr) {
        set_errno(ENOMEM);
        return nullptr;
    }
    const int err = ibv_cmd_query_mr(pd, &mr->vmr, mr_handle);
    if (err != 0) {
        delete mr;
        set_errno(err);
        return nullptr;
    }
    return &mr->vmr.mr;
}

// The kernel's MR stays: its owner deregisters it.
void unimport_mr(ibv_mr* ibmr) noexcept {
    delete to_mr(reinterpret_cast<verbs_mr*>(ibmr));
}

ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type) noexcept {
    auto* mw = new (std::nothrow) Mw{};
    if (mw == nullptr) {
        set_errno(ENOMEM);
        return nullptr;
    }
    verbs_cmd_alloc_mw cmd{};
    ib_uverbs_alloc_mw_resp resp{};
    const int err = ibv_cmd_alloc_mw(pd, type, &mw->mw, &cmd, sizeof(cmd), &resp, sizeof(resp));
    if (err != 0) {
        delete mw;
        set_errno(err);
        return nullptr;
    }
    return &mw->mw;
}

int dealloc_mw(ibv_mw* mw) noexcept {
    const int err = ibv_cmd_dealloc_mw(mw);
    if (err != 0)
        return err;
    delete to_mw(mw);
    return 0;
}

ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr) noexcept {
    auto* ah = new (std::nothrow) Ah{};
    if (ah == nullptr) {
        set_errno(ENOMEM);
        return nullptr;
    }
    WithDriverData<ib_uverbs_create_ah_resp, sroce_create_ah_resp> resp;
    const int err = ibv_cmd_create_ah(pd, &ah->ah, attr, resp.core(), resp.size());
    if (err != 0) {
        delete ah;
        set_errno(err);
        return nullptr;
    }
    ah->ah_num = resp.driver().ah_num;
    return &ah->ah;
}

int destroy_ah(ibv_ah* ibah) noexcept {
    const int err = ibv_cmd_destroy_ah(ibah);
    if (err != 0)
        return err;
    delete to_ah(ibah);
    return 0;
}

int attach_mcast(ibv_qp* qp, const ibv_gid* gid, std::uint16_t lid) noexcept {
    return ibv_cmd_attach_mcast(qp, gid, lid);
}

int detach_mcast(ibv_qp* qp, const ibv_gid* gid, std::uint16_t lid) noexcept {
    return ibv_cmd_detach_mcast(qp, gid, lid);
}

} // namespace sroce
