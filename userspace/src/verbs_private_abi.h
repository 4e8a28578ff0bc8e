// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The part of libibverbs' private provider ABI that sroce uses, for two ABI
// generations, chosen at build time by SROCE_PABI_VERSION (CMake):
//
//   34  symbol version node IBVERBS_PRIVATE_34: rdma-core 34 to 56 (Debian 12
//       bookworm's 44, Debian 13 trixie's 56)
//   65  IBVERBS_PRIVATE_65: rdma-core 65 (Debian unstable's 65.0)
//
// A build is exact only for the rdma-core release whose public headers it
// was compiled with (SROCE_RDMA_CORE; see the pins at the end).
//
// rdma-core installs only the public <infiniband/verbs.h>; the structures a
// provider shares with libibverbs live in headers no distribution packages.
// These declarations were written from the layouts of rdma-core v44.0 and
// 65.0 (libibverbs/driver.h, kern-abi.h); everything that differs between
// the two is in the section "ABI generations" below. The public structures
// come from the <infiniband/verbs.h> of the same release: the ABI 65 build
// compiles against Debian unstable's libibverbs-dev headers, because
// verbs_context, ibv_qp_ex and ibv_port_attr grew there. Every layout that
// libibverbs reads or writes is pinned below with static_asserts;
// tests/abi_test.cpp checks the ABI 34 layouts against the behaviour of the
// installed libibverbs.so.1 and tests/check_provider_elf.sh binds each
// provider's symbols to a real libibverbs.so.1 of its generation.
//
// Names follow rdma-core's so that readers can find the counterpart there.
// Function pointers that sroce never installs are typed as UnusedOp: only
// their position matters.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <ctime>

// --- ABI generations ---------------------------------------------------------
//
// SROCE_PABI_VERSION is the ABI generation libibverbs was built with: the
// suffix of the provider file name, of verbs_register_driver_<N> and of the
// symbol version node IBVERBS_PRIVATE_<N>. From 34 to 65 rdma-core
//  - added 17 operations to verbs_context_ops (marked SROCE_PABI65_OP below),
//  - gave ibv_cmd_get_context() an fd array (struct ibv_fd_arr *, after
//    cmd_size) and ibv_cmd_create_cq_ex() provider CQ buffer attributes
//    (struct verbs_create_cq_prov_attr *, after cq_attr); sroce passes
//    neither, so it calls both through sroce_cmd_get_context() and
//    sroce_cmd_create_cq_ex(), defined here,
//  - grew the public verbs_context (6 operations before the ibv_context),
//    ibv_qp_ex (wr_flush, which moves verbs_qp::comp_mask) and ibv_port_attr
//    (active_speed_ex, which ibv_cmd_query_port() writes): pinned at the end.
// verbs_device_ops, verbs_device, verbs_sysfs_dev, verbs_match_ent, the CQ,
// SRQ, MR and XRCD wrappers, the uverbs write() commands and every other
// ibv_cmd_* function sroce calls are the same in both.
#if !defined(SROCE_PABI_VERSION) || !defined(SROCE_RDMA_CORE)
#error "SROCE_PABI_VERSION (34 or 65) and SROCE_RDMA_CORE must be defined by the build"
#endif
#if SROCE_PABI_VERSION != 34 && SROCE_PABI_VERSION != 65
#error "sroce knows the private libibverbs ABI 34 and 65 only"
#endif
#define SROCE_STRINGIFY_(x) #x
#define SROCE_STRINGIFY(x) SROCE_STRINGIFY_(x)
#define SROCE_IBVERBS_PRIVATE_NODE "IBVERBS_PRIVATE_" SROCE_STRINGIFY(SROCE_PABI_VERSION)

// An operation slot that exists from ABI 65 on (sroce installs none of them).
#if SROCE_PABI_VERSION >= 65
#define SROCE_PABI65_OP(name) UnusedOp name
#else
#define SROCE_PABI65_OP(name) static_assert(true)
#endif

extern "C" {

using UnusedOp = void (*)();

// ccan's struct list_node: libibverbs links devices through it.
struct verbs_list_node {
    verbs_list_node* next;
    verbs_list_node* prev;
};

enum verbs_match_kind : std::uint8_t {
    VERBS_MATCH_SENTINEL = 0,
    VERBS_MATCH_PCI = 1,
    VERBS_MATCH_MODALIAS = 2,
    VERBS_MATCH_DRIVER_ID = 3,
};

struct verbs_match_ent {
    void* driver_data;
    union {
        const char* modalias;
        std::uint64_t driver_id;
    } u;
    std::uint16_t vendor;
    std::uint16_t device;
    std::uint8_t kind; // enum verbs_match_kind
};

// One RDMA device found in sysfs, filled in by libibverbs before matching.
struct verbs_sysfs_dev {
    verbs_list_node entry;
    void* provider_data;
    const verbs_match_ent* match;
    unsigned int flags;
    char sysfs_name[IBV_SYSFS_NAME_MAX];
    dev_t sysfs_cdev;
    char ibdev_name[IBV_SYSFS_NAME_MAX];
    char ibdev_path[IBV_SYSFS_PATH_MAX];
    char modalias[512];
    std::uint64_t node_guid;
    std::uint32_t driver_id;
    ibv_node_type node_type;
    int ibdev_idx;
    std::uint32_t num_ports;
    std::uint32_t abi_ver;
    timespec time_created;
};

struct verbs_device;

struct verbs_device_ops {
    const char* name;
    std::uint32_t match_min_abi_version;
    std::uint32_t match_max_abi_version;
    const verbs_match_ent* match_table;
    const verbs_device_ops** static_providers;
    bool (*match_device)(verbs_sysfs_dev* sysfs_dev);
    verbs_context* (*alloc_context)(ibv_device* device, int cmd_fd, void* private_data);
    verbs_context* (*import_context)(ibv_device* device, int cmd_fd);
    verbs_device* (*alloc_device)(verbs_sysfs_dev* sysfs_dev);
    void (*uninit_device)(verbs_device* device);
};

struct verbs_device {
    ibv_device device; // must be first: libibverbs converts between the two
    const verbs_device_ops* ops;
    int refcount; // a C11 atomic_int; only libibverbs touches it
    verbs_list_node entry;
    verbs_sysfs_dev* sysfs;
    std::uint64_t core_support;
};

// verbs_xrcd::comp_mask: VERBS_XRCD_HANDLE says handle is valid.
enum verbs_xrcd_mask : std::uint32_t {
    VERBS_XRCD_HANDLE = 1U << 0,
};

struct verbs_xrcd {
    ibv_xrcd xrcd;
    std::uint32_t comp_mask;
    std::uint32_t handle;
};

struct verbs_cq {
    union {
        ibv_cq cq;
        ibv_cq_ex cq_ex;
    };
};

// verbs_qp::comp_mask bits: VERBS_QP_EX makes ibv_qp_to_qp_ex() return
// &qp_ex (the provider then fills its wr_* operations).
enum verbs_qp_mask : std::uint32_t {
    VERBS_QP_XRCD = 1U << 0,
    VERBS_QP_EX = 1U << 1,
};

struct verbs_qp {
    union {
        ibv_qp qp;
        ibv_qp_ex qp_ex;
    };
    std::uint32_t comp_mask;
    verbs_xrcd* xrcd;
};

struct verbs_srq {
    ibv_srq srq;
    ibv_srq_type srq_type;
    verbs_xrcd* xrcd;
    ibv_cq* cq;
    std::uint32_t srq_num;
};

enum ibv_mr_type : int {
    IBV_MR_TYPE_MR,
    IBV_MR_TYPE_NULL_MR,
    IBV_MR_TYPE_IMPORTED_MR,
    IBV_MR_TYPE_DMABUF_MR,
};

struct verbs_mr {
    ibv_mr mr; // rdma-core calls it ibv_mr, which C++ cannot
    ibv_mr_type mr_type;
    int access;
};

// Every operation a provider can install; libibverbs copies the non-null
// ones (verbs_set_ops) and answers the rest with EOPNOTSUPP. Sorted by name,
// as in rdma-core.
struct verbs_context_ops {
    int (*advise_mr)(ibv_pd* pd, ib_uverbs_advise_mr_advice advice, std::uint32_t flags,
                     ibv_sge* sg_list, std::uint32_t num_sges);
    SROCE_PABI65_OP(alloc_buf);
    UnusedOp alloc_dm;
    SROCE_PABI65_OP(alloc_dmah);
    ibv_mw* (*alloc_mw)(ibv_pd* pd, ibv_mw_type type);
    UnusedOp alloc_null_mr;
    ibv_pd* (*alloc_parent_domain)(ibv_context* context, ibv_parent_domain_init_attr* attr);
    ibv_pd* (*alloc_pd)(ibv_context* context);
    ibv_td* (*alloc_td)(ibv_context* context, ibv_td_init_attr* init_attr);
    void (*async_event)(ibv_context* context, ibv_async_event* event);
    UnusedOp attach_counters_point_flow;
    int (*attach_mcast)(ibv_qp* qp, const ibv_gid* gid, std::uint16_t lid);
    int (*bind_mw)(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* mw_bind);
    int (*close_xrcd)(ibv_xrcd* xrcd);
    void (*cq_event)(ibv_cq* cq);
    ibv_ah* (*create_ah)(ibv_pd* pd, ibv_ah_attr* attr);
    SROCE_PABI65_OP(create_comp_cntr);
    UnusedOp create_counters;
    ibv_cq* (*create_cq)(ibv_context* context, int cqe, ibv_comp_channel* channel, int comp_vector);
    ibv_cq_ex* (*create_cq_ex)(ibv_context* context, ibv_cq_init_attr_ex* init_attr);
    UnusedOp create_flow;
    UnusedOp create_flow_action_esp;
    ibv_qp* (*create_qp)(ibv_pd* pd, ibv_qp_init_attr* attr);
    ibv_qp* (*create_qp_ex)(ibv_context* context, ibv_qp_init_attr_ex* attr);
    UnusedOp create_rwq_ind_table;
    ibv_srq* (*create_srq)(ibv_pd* pd, ibv_srq_init_attr* attr);
    ibv_srq* (*create_srq_ex)(ibv_context* context, ibv_srq_init_attr_ex* attr);
    UnusedOp create_wq;
    SROCE_PABI65_OP(dealloc_dmah);
    int (*dealloc_mw)(ibv_mw* mw);
    int (*dealloc_pd)(ibv_pd* pd);
    int (*dealloc_td)(ibv_td* td);
    int (*dereg_mr)(verbs_mr* mr);
    int (*destroy_ah)(ibv_ah* ah);
    SROCE_PABI65_OP(destroy_comp_cntr);
    UnusedOp destroy_counters;
    int (*destroy_cq)(ibv_cq* cq);
    UnusedOp destroy_flow;
    UnusedOp destroy_flow_action;
    int (*destroy_qp)(ibv_qp* qp);
    UnusedOp destroy_rwq_ind_table;
    int (*destroy_srq)(ibv_srq* srq);
    UnusedOp destroy_wq;
    int (*detach_mcast)(ibv_qp* qp, const ibv_gid* gid, std::uint16_t lid);
    SROCE_PABI65_OP(dm_export_dmabuf_fd);
    SROCE_PABI65_OP(free_buf);
    void (*free_context)(ibv_context* context);
    UnusedOp free_dm;
    int (*get_srq_num)(ibv_srq* srq, std::uint32_t* srq_num);
    UnusedOp import_dm;
    ibv_mr* (*import_mr)(ibv_pd* pd, std::uint32_t mr_handle);
    ibv_pd* (*import_pd)(ibv_context* context, std::uint32_t pd_handle);
    SROCE_PABI65_OP(inc_comp_cntr);
    SROCE_PABI65_OP(inc_err_comp_cntr);
    UnusedOp modify_cq;
    UnusedOp modify_flow_action_esp;
    int (*modify_qp)(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask);
    UnusedOp modify_qp_rate_limit;
    int (*modify_srq)(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask);
    UnusedOp modify_wq;
    ibv_qp* (*open_qp)(ibv_context* context, ibv_qp_open_attr* attr);
    ibv_xrcd* (*open_xrcd)(ibv_context* context, ibv_xrcd_init_attr* xrcd_init_attr);
    int (*poll_cq)(ibv_cq* cq, int num_entries, ibv_wc* wc);
    int (*post_recv)(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
    int (*post_send)(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
    UnusedOp post_srq_ops;
    int (*post_srq_recv)(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
    SROCE_PABI65_OP(qp_attach_comp_cntr);
    SROCE_PABI65_OP(query_comp_cntr_caps);
    int (*query_device_ex)(ibv_context* context, const ibv_query_device_ex_input* input,
                           ibv_device_attr_ex* attr, std::size_t attr_size);
    UnusedOp query_ece;
    int (*query_port)(ibv_context* context, std::uint8_t port_num, ibv_port_attr* attr);
    SROCE_PABI65_OP(query_port_speed);
    int (*query_qp)(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr);
    UnusedOp query_qp_data_in_order;
    int (*query_rt_values)(ibv_context* context, ibv_values_ex* values);
    int (*query_srq)(ibv_srq* srq, ibv_srq_attr* attr);
    SROCE_PABI65_OP(read_comp_cntr);
    UnusedOp read_counters;
    SROCE_PABI65_OP(read_err_comp_cntr);
    UnusedOp reg_dm_mr;
    UnusedOp reg_dmabuf_mr;
    ibv_mr* (*reg_mr)(ibv_pd* pd, void* addr, std::size_t length, std::uint64_t hca_va, int access);
    SROCE_PABI65_OP(reg_mr_ex);
    int (*req_notify_cq)(ibv_cq* cq, int solicited_only);
    int (*rereg_mr)(verbs_mr* vmr, int flags, ibv_pd* pd, void* addr, std::size_t length,
                    int access);
    int (*resize_cq)(ibv_cq* cq, int cqe);
    SROCE_PABI65_OP(set_comp_cntr);
    UnusedOp set_ece;
    SROCE_PABI65_OP(set_err_comp_cntr);
    UnusedOp unimport_dm;
    void (*unimport_mr)(ibv_mr* mr);
    void (*unimport_pd)(ibv_pd* pd);
};

} // extern "C"

// --- uverbs write() command layouts (rdma-core kern-abi.h) ----------------
//
// A command is the 8-byte uverbs header followed by the kernel's request
// struct; a provider appends its driver payload after that, and its driver
// response after the kernel's response struct. The ibv_cmd_* helpers find
// the driver parts by those sizes.
template <typename Core>
struct verbs_write_cmd {
    ib_uverbs_cmd_hdr hdr;
    Core core;
};

// Extended commands start with a second header (rdma-core's struct ex_hdr).
template <typename Core>
struct verbs_write_cmd_ex {
    ib_uverbs_cmd_hdr hdr;
    ib_uverbs_ex_cmd_hdr ex_hdr;
    Core core;
};

using verbs_cmd_get_context = verbs_write_cmd<ib_uverbs_get_context>;
using verbs_cmd_query_port = verbs_write_cmd<ib_uverbs_query_port>;
using verbs_cmd_alloc_pd = verbs_write_cmd<ib_uverbs_alloc_pd>;
using verbs_cmd_reg_mr = verbs_write_cmd<ib_uverbs_reg_mr>;
using verbs_cmd_rereg_mr = verbs_write_cmd<ib_uverbs_rereg_mr>;
using verbs_cmd_alloc_mw = verbs_write_cmd<ib_uverbs_alloc_mw>;
using verbs_cmd_create_cq = verbs_write_cmd<ib_uverbs_create_cq>;
using verbs_cmd_resize_cq = verbs_write_cmd<ib_uverbs_resize_cq>;
using verbs_cmd_create_qp = verbs_write_cmd<ib_uverbs_create_qp>;
using verbs_cmd_modify_qp = verbs_write_cmd<ib_uverbs_modify_qp>;
using verbs_cmd_query_qp = verbs_write_cmd<ib_uverbs_query_qp>;
using verbs_cmd_post_send = verbs_write_cmd<ib_uverbs_post_send>;
using verbs_cmd_create_srq = verbs_write_cmd<ib_uverbs_create_srq>;
using verbs_cmd_create_xsrq = verbs_write_cmd<ib_uverbs_create_xsrq>;
using verbs_cmd_modify_srq = verbs_write_cmd<ib_uverbs_modify_srq>;
using verbs_cmd_query_srq = verbs_write_cmd<ib_uverbs_query_srq>;
using verbs_cmd_create_cq_ex = verbs_write_cmd_ex<ib_uverbs_ex_create_cq>;
using verbs_cmd_open_xrcd = verbs_write_cmd<ib_uverbs_open_xrcd>;
using verbs_cmd_open_qp = verbs_write_cmd<ib_uverbs_open_qp>;

// --- functions exported under IBVERBS_PRIVATE_<SROCE_PABI_VERSION> ----------

extern "C" {

void* _verbs_init_and_alloc_context(ibv_device* device, int cmd_fd, std::size_t alloc_size,
                                    verbs_context* context_offset, std::uint32_t driver_id);
void verbs_uninit_context(verbs_context* context);
void verbs_set_ops(verbs_context* context, const verbs_context_ops* ops);
void verbs_init_cq(ibv_cq* cq, ibv_context* context, ibv_comp_channel* channel, void* cq_context);
int ibv_read_ibdev_sysfs_file(char* buf, std::size_t size, verbs_sysfs_dev* sysfs_dev,
                              const char* fnfmt, ...) __attribute__((format(printf, 4, 5)));

// An ioctl command buffer (rdma-core's cmd_ioctl.h); sroce passes none.
struct ibv_command_buffer;

int ibv_cmd_query_context(ibv_context* ctx, ibv_command_buffer* driver);
int ibv_cmd_query_device_any(ibv_context* context, const ibv_query_device_ex_input* input,
                             ibv_device_attr_ex* attr, std::size_t attr_size,
                             ib_uverbs_ex_query_device_resp* resp, std::size_t* resp_size);
int ibv_cmd_query_port(ibv_context* context, std::uint8_t port_num, ibv_port_attr* port_attr,
                       verbs_cmd_query_port* cmd, std::size_t cmd_size);
int ibv_cmd_alloc_pd(ibv_context* context, ibv_pd* pd, verbs_cmd_alloc_pd* cmd,
                     std::size_t cmd_size, ib_uverbs_alloc_pd_resp* resp, std::size_t resp_size);
int ibv_cmd_dealloc_pd(ibv_pd* pd);

int ibv_cmd_reg_mr(ibv_pd* pd, void* addr, std::size_t length, std::uint64_t hca_va, int access,
                   verbs_mr* mr, verbs_cmd_reg_mr* cmd, std::size_t cmd_size,
                   ib_uverbs_reg_mr_resp* resp, std::size_t resp_size);
int ibv_cmd_rereg_mr(verbs_mr* mr, std::uint32_t flags, void* addr, std::size_t length,
                     std::uint64_t hca_va, int access, ibv_pd* pd, verbs_cmd_rereg_mr* cmd,
                     std::size_t cmd_size, ib_uverbs_rereg_mr_resp* resp, std::size_t resp_size);
int ibv_cmd_dereg_mr(verbs_mr* mr);
int ibv_cmd_query_mr(ibv_pd* pd, verbs_mr* vmr, std::uint32_t mr_handle);
int ibv_cmd_advise_mr(ibv_pd* pd, ib_uverbs_advise_mr_advice advice, std::uint32_t flags,
                      ibv_sge* sg_list, std::uint32_t num_sge);
int ibv_cmd_alloc_mw(ibv_pd* pd, ibv_mw_type type, ibv_mw* mw, verbs_cmd_alloc_mw* cmd,
                     std::size_t cmd_size, ib_uverbs_alloc_mw_resp* resp, std::size_t resp_size);
int ibv_cmd_dealloc_mw(ibv_mw* mw);

int ibv_cmd_create_cq(ibv_context* context, int cqe, ibv_comp_channel* channel, int comp_vector,
                      ibv_cq* cq, verbs_cmd_create_cq* cmd, std::size_t cmd_size,
                      ib_uverbs_create_cq_resp* resp, std::size_t resp_size);
int ibv_cmd_resize_cq(ibv_cq* cq, int cqe, verbs_cmd_resize_cq* cmd, std::size_t cmd_size,
                      ib_uverbs_resize_cq_resp* resp, std::size_t resp_size);
int ibv_cmd_req_notify_cq(ibv_cq* cq, int solicited_only);
int ibv_cmd_destroy_cq(ibv_cq* cq);

int ibv_cmd_create_qp_ex(ibv_context* context, verbs_qp* qp, ibv_qp_init_attr_ex* attr,
                         verbs_cmd_create_qp* cmd, std::size_t cmd_size,
                         ib_uverbs_create_qp_resp* resp, std::size_t resp_size);
int ibv_cmd_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, verbs_cmd_modify_qp* cmd,
                      std::size_t cmd_size);
int ibv_cmd_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr,
                     verbs_cmd_query_qp* cmd, std::size_t cmd_size);
int ibv_cmd_destroy_qp(ibv_qp* qp);
// XRC: vqp_sz / vxrcd_size tell libibverbs which trailing fields exist.
int ibv_cmd_open_qp(ibv_context* context, verbs_qp* qp, int vqp_sz, ibv_qp_open_attr* attr,
                    verbs_cmd_open_qp* cmd, std::size_t cmd_size, ib_uverbs_create_qp_resp* resp,
                    std::size_t resp_size);
int ibv_cmd_open_xrcd(ibv_context* context, verbs_xrcd* xrcd, int vxrcd_size,
                      ibv_xrcd_init_attr* attr, verbs_cmd_open_xrcd* cmd, std::size_t cmd_size,
                      ib_uverbs_open_xrcd_resp* resp, std::size_t resp_size);
int ibv_cmd_close_xrcd(verbs_xrcd* xrcd);
int ibv_cmd_attach_mcast(ibv_qp* qp, const ibv_gid* gid, std::uint16_t lid);
int ibv_cmd_detach_mcast(ibv_qp* qp, const ibv_gid* gid, std::uint16_t lid);

int ibv_cmd_create_srq_ex(ibv_context* context, verbs_srq* srq, ibv_srq_init_attr_ex* attr,
                          verbs_cmd_create_xsrq* cmd, std::size_t cmd_size,
                          ib_uverbs_create_srq_resp* resp, std::size_t resp_size);
int ibv_cmd_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask, verbs_cmd_modify_srq* cmd,
                       std::size_t cmd_size);
int ibv_cmd_query_srq(ibv_srq* srq, ibv_srq_attr* attr, verbs_cmd_query_srq* cmd,
                      std::size_t cmd_size);
int ibv_cmd_destroy_srq(ibv_srq* srq);

int ibv_cmd_create_ah(ibv_pd* pd, ibv_ah* ah, ibv_ah_attr* attr, ib_uverbs_create_ah_resp* resp,
                      std::size_t resp_size);
int ibv_cmd_destroy_ah(ibv_ah* ah);

// The functions whose signature differs between the ABI generations (see
// "ABI generations" at the top).
#if SROCE_PABI_VERSION == 34
void verbs_register_driver_34(const verbs_device_ops* ops);
int ibv_cmd_get_context(verbs_context* context, verbs_cmd_get_context* cmd, std::size_t cmd_size,
                        ib_uverbs_get_context_resp* resp, std::size_t resp_size);
int ibv_cmd_create_cq_ex(ibv_context* context, const ibv_cq_init_attr_ex* cq_attr, verbs_cq* cq,
                         verbs_cmd_create_cq_ex* cmd, std::size_t cmd_size,
                         ib_uverbs_ex_create_cq_resp* resp, std::size_t resp_size,
                         std::uint32_t cmd_flags);
#else
// Provider CQ buffer attributes; sroce passes none, so it stays opaque.
struct verbs_create_cq_prov_attr;

void verbs_register_driver_65(const verbs_device_ops* ops);
int ibv_cmd_get_context(verbs_context* context, verbs_cmd_get_context* cmd, std::size_t cmd_size,
                        ibv_fd_arr* fd_arr, ib_uverbs_get_context_resp* resp,
                        std::size_t resp_size);
int ibv_cmd_create_cq_ex(ibv_context* context, const ibv_cq_init_attr_ex* cq_attr,
                         verbs_create_cq_prov_attr* prov_attr, verbs_cq* cq,
                         verbs_cmd_create_cq_ex* cmd, std::size_t cmd_size,
                         ib_uverbs_ex_create_cq_resp* resp, std::size_t resp_size,
                         std::uint32_t cmd_flags);
#endif

} // extern "C"

// The same calls for every ABI generation, with what only ABI 65 takes
// (no fd array, no provider CQ buffer) left out.
inline void sroce_register_driver(const verbs_device_ops* ops) {
#if SROCE_PABI_VERSION == 34
    verbs_register_driver_34(ops);
#else
    verbs_register_driver_65(ops);
#endif
}

inline int sroce_cmd_get_context(verbs_context* context, verbs_cmd_get_context* cmd,
                                 std::size_t cmd_size, ib_uverbs_get_context_resp* resp,
                                 std::size_t resp_size) {
#if SROCE_PABI_VERSION == 34
    return ibv_cmd_get_context(context, cmd, cmd_size, resp, resp_size);
#else
    return ibv_cmd_get_context(context, cmd, cmd_size, nullptr, resp, resp_size);
#endif
}

inline int sroce_cmd_create_cq_ex(ibv_context* context, const ibv_cq_init_attr_ex* cq_attr,
                                  verbs_cq* cq, verbs_cmd_create_cq_ex* cmd, std::size_t cmd_size,
                                  ib_uverbs_ex_create_cq_resp* resp, std::size_t resp_size,
                                  std::uint32_t cmd_flags) {
#if SROCE_PABI_VERSION == 34
    return ibv_cmd_create_cq_ex(context, cq_attr, cq, cmd, cmd_size, resp, resp_size, cmd_flags);
#else
    return ibv_cmd_create_cq_ex(context, cq_attr, nullptr, cq, cmd, cmd_size, resp, resp_size,
                                cmd_flags);
#endif
}

// --- layouts, as computed from rdma-core v44.0 and 65.0 -------------------

static_assert(sizeof(verbs_list_node) == 16);

static_assert(sizeof(verbs_match_ent) == 24);
static_assert(offsetof(verbs_match_ent, u) == 8);
static_assert(offsetof(verbs_match_ent, vendor) == 16);
static_assert(offsetof(verbs_match_ent, device) == 18);
static_assert(offsetof(verbs_match_ent, kind) == 20);

static_assert(offsetof(verbs_sysfs_dev, provider_data) == 16);
static_assert(offsetof(verbs_sysfs_dev, match) == 24);
static_assert(offsetof(verbs_sysfs_dev, flags) == 32);
static_assert(offsetof(verbs_sysfs_dev, sysfs_name) == 36);
static_assert(offsetof(verbs_sysfs_dev, sysfs_cdev) == 104);
static_assert(offsetof(verbs_sysfs_dev, ibdev_name) == 112);
static_assert(offsetof(verbs_sysfs_dev, ibdev_path) == 176);
static_assert(offsetof(verbs_sysfs_dev, modalias) == 432);
static_assert(offsetof(verbs_sysfs_dev, node_guid) == 944);
static_assert(offsetof(verbs_sysfs_dev, driver_id) == 952);
static_assert(offsetof(verbs_sysfs_dev, node_type) == 956);
static_assert(offsetof(verbs_sysfs_dev, ibdev_idx) == 960);
static_assert(offsetof(verbs_sysfs_dev, num_ports) == 964);
static_assert(offsetof(verbs_sysfs_dev, abi_ver) == 968);
static_assert(offsetof(verbs_sysfs_dev, time_created) == 976);
static_assert(sizeof(verbs_sysfs_dev) == 992);

static_assert(offsetof(verbs_device_ops, match_min_abi_version) == 8);
static_assert(offsetof(verbs_device_ops, match_max_abi_version) == 12);
static_assert(offsetof(verbs_device_ops, match_table) == 16);
static_assert(offsetof(verbs_device_ops, static_providers) == 24);
static_assert(offsetof(verbs_device_ops, match_device) == 32);
static_assert(offsetof(verbs_device_ops, alloc_context) == 40);
static_assert(offsetof(verbs_device_ops, import_context) == 48);
static_assert(offsetof(verbs_device_ops, alloc_device) == 56);
static_assert(offsetof(verbs_device_ops, uninit_device) == 64);
static_assert(sizeof(verbs_device_ops) == 72);

static_assert(sizeof(ibv_device) == 664);
static_assert(offsetof(verbs_device, ops) == 664);
static_assert(offsetof(verbs_device, refcount) == 672);
static_assert(offsetof(verbs_device, entry) == 680);
static_assert(offsetof(verbs_device, sysfs) == 696);
static_assert(offsetof(verbs_device, core_support) == 704);
static_assert(sizeof(verbs_device) == 712);

static_assert(offsetof(verbs_qp, comp_mask) == sizeof(ibv_qp_ex));
static_assert(offsetof(ibv_qp_ex, qp_base) == 0);
static_assert(offsetof(verbs_srq, srq_type) == sizeof(ibv_srq));
static_assert(offsetof(verbs_srq, srq_num) == sizeof(ibv_srq) + 24);
static_assert(offsetof(verbs_xrcd, comp_mask) == sizeof(ibv_xrcd));
static_assert(sizeof(verbs_xrcd) == sizeof(ibv_xrcd) + 8);
static_assert(offsetof(verbs_mr, mr_type) == sizeof(ibv_mr));
static_assert(sizeof(verbs_mr) == sizeof(ibv_mr) + 8);

// Every operation sroce installs, at its slot in each ABI generation (76
// operations in ABI 34, 93 in 65), all pointer-sized with no padding.
#if SROCE_PABI_VERSION == 34
#define SROCE_PIN_OP(name, slot34, slot65)                                                         \
    static_assert(offsetof(verbs_context_ops, name) == (slot34) * sizeof(void*),                   \
                  "verbs_context_ops::" #name " is not at its ABI 34 slot")
static_assert(sizeof(verbs_context_ops) == 76 * sizeof(void*));
#else
#define SROCE_PIN_OP(name, slot34, slot65)                                                         \
    static_assert(offsetof(verbs_context_ops, name) == (slot65) * sizeof(void*),                   \
                  "verbs_context_ops::" #name " is not at its ABI 65 slot")
static_assert(sizeof(verbs_context_ops) == 93 * sizeof(void*));
#endif
SROCE_PIN_OP(advise_mr, 0, 0);
SROCE_PIN_OP(alloc_mw, 2, 4);
SROCE_PIN_OP(alloc_parent_domain, 4, 6);
SROCE_PIN_OP(alloc_pd, 5, 7);
SROCE_PIN_OP(alloc_td, 6, 8);
SROCE_PIN_OP(async_event, 7, 9);
SROCE_PIN_OP(attach_mcast, 9, 11);
SROCE_PIN_OP(bind_mw, 10, 12);
SROCE_PIN_OP(close_xrcd, 11, 13);
SROCE_PIN_OP(cq_event, 12, 14);
SROCE_PIN_OP(create_ah, 13, 15);
SROCE_PIN_OP(create_cq, 15, 18);
SROCE_PIN_OP(create_cq_ex, 16, 19);
SROCE_PIN_OP(create_qp, 19, 22);
SROCE_PIN_OP(create_qp_ex, 20, 23);
SROCE_PIN_OP(create_srq, 22, 25);
SROCE_PIN_OP(create_srq_ex, 23, 26);
SROCE_PIN_OP(dealloc_mw, 25, 29);
SROCE_PIN_OP(dealloc_pd, 26, 30);
SROCE_PIN_OP(dealloc_td, 27, 31);
SROCE_PIN_OP(dereg_mr, 28, 32);
SROCE_PIN_OP(destroy_ah, 29, 33);
SROCE_PIN_OP(destroy_cq, 31, 36);
SROCE_PIN_OP(destroy_qp, 34, 39);
SROCE_PIN_OP(destroy_srq, 36, 41);
SROCE_PIN_OP(detach_mcast, 38, 43);
SROCE_PIN_OP(free_context, 39, 46);
SROCE_PIN_OP(get_srq_num, 41, 48);
SROCE_PIN_OP(import_mr, 43, 50);
SROCE_PIN_OP(import_pd, 44, 51);
SROCE_PIN_OP(modify_qp, 47, 56);
SROCE_PIN_OP(modify_srq, 49, 58);
SROCE_PIN_OP(open_qp, 51, 60);
SROCE_PIN_OP(open_xrcd, 52, 61);
SROCE_PIN_OP(poll_cq, 53, 62);
SROCE_PIN_OP(post_recv, 54, 63);
SROCE_PIN_OP(post_send, 55, 64);
SROCE_PIN_OP(post_srq_recv, 57, 66);
SROCE_PIN_OP(query_device_ex, 58, 69);
SROCE_PIN_OP(query_port, 60, 71);
SROCE_PIN_OP(query_qp, 61, 73);
SROCE_PIN_OP(query_rt_values, 63, 75);
SROCE_PIN_OP(query_srq, 64, 76);
SROCE_PIN_OP(reg_mr, 68, 82);
SROCE_PIN_OP(req_notify_cq, 69, 84);
SROCE_PIN_OP(rereg_mr, 70, 85);
SROCE_PIN_OP(resize_cq, 71, 86);
SROCE_PIN_OP(unimport_mr, 74, 91);
SROCE_PIN_OP(unimport_pd, 75, 92);
#undef SROCE_PIN_OP

// The public structures sroce embeds or hands to libibverbs, as the
// <infiniband/verbs.h> of rdma-core SROCE_RDMA_CORE (the release compiled
// against, from its libibverbs.pc) lays them out. They change within one
// private ABI: ibv_qp_ex grew in rdma-core 44 (wr_atomic_write) and 45
// (wr_flush), moving verbs_qp::comp_mask and xrcd, which libibverbs reads
// and writes; ibv_port_attr grew in 49. So a provider is exact only for the
// release whose headers built it, and a build against headers whose layouts
// are not pinned here fails.
static_assert(sizeof(ibv_context) == 328);
static_assert(sizeof(ibv_cq_ex) == 288);
static_assert(sizeof(ibv_device_attr_ex) == 400);
#if SROCE_PABI_VERSION == 34 && SROCE_RDMA_CORE == 44
static_assert(offsetof(verbs_context, context) == 320);
static_assert(sizeof(verbs_context) == 648);
static_assert(sizeof(ibv_qp_ex) == 352);
static_assert(sizeof(ibv_port_attr) == 52);
#elif SROCE_PABI_VERSION == 34 && SROCE_RDMA_CORE == 56
static_assert(offsetof(verbs_context, context) == 320);
static_assert(sizeof(verbs_context) == 648);
static_assert(sizeof(ibv_qp_ex) == 360);
static_assert(sizeof(ibv_port_attr) == 56);
#elif SROCE_PABI_VERSION == 65 && SROCE_RDMA_CORE == 65
static_assert(offsetof(verbs_context, context) == 368);
static_assert(sizeof(verbs_context) == 696);
static_assert(sizeof(ibv_qp_ex) == 360);
static_assert(sizeof(ibv_port_attr) == 56);
#else
#error "the public layouts of this rdma-core release are not pinned (44, 56 and 65 are)"
#endif

static_assert(sizeof(verbs_cmd_get_context) == 16);
static_assert(sizeof(verbs_cmd_query_port) == 24);
static_assert(sizeof(verbs_cmd_alloc_pd) == 16);
static_assert(sizeof(verbs_cmd_reg_mr) == 48);
static_assert(sizeof(verbs_cmd_rereg_mr) == 56);
static_assert(sizeof(verbs_cmd_alloc_mw) == 24);
static_assert(sizeof(verbs_cmd_create_cq) == 40);
static_assert(sizeof(verbs_cmd_resize_cq) == 24);
static_assert(sizeof(verbs_cmd_create_qp) == 64);
static_assert(sizeof(verbs_cmd_modify_qp) == 120);
static_assert(sizeof(verbs_cmd_query_qp) == 24);
static_assert(sizeof(verbs_cmd_post_send) == 32);
static_assert(sizeof(verbs_cmd_create_srq) == 40);
static_assert(sizeof(verbs_cmd_create_xsrq) == 56);
static_assert(sizeof(verbs_cmd_modify_srq) == 24);
static_assert(sizeof(verbs_cmd_query_srq) == 24);
static_assert(sizeof(verbs_cmd_create_cq_ex) == 56);
static_assert(sizeof(verbs_cmd_open_xrcd) == 24);
static_assert(sizeof(verbs_cmd_open_qp) == 40);
static_assert(sizeof(ib_uverbs_ex_create_cq_resp) == 16);
