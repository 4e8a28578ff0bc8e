// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Every function src/verbs_private_abi.h declares, as an X-macro list:
// X(name) for each. abi_test.cpp resolves them in the installed
// libibverbs.so.1; abi_refs.cpp makes a loadable object that references them
// all, so that check_provider_elf.sh can bind each to a real libibverbs.so.1
// of the ABI generation it was built for, including one that cannot run here.
#pragma once

#include "verbs_private_abi.h"

#if SROCE_PABI_VERSION == 34
#define SROCE_PRIVATE_REGISTER_DRIVER(X) X(verbs_register_driver_34)
#else
#define SROCE_PRIVATE_REGISTER_DRIVER(X) X(verbs_register_driver_65)
#endif

#define SROCE_PRIVATE_FUNCTIONS(X)                                                                 \
    SROCE_PRIVATE_REGISTER_DRIVER(X)                                                               \
    X(_verbs_init_and_alloc_context)                                                               \
    X(verbs_uninit_context)                                                                        \
    X(verbs_set_ops)                                                                               \
    X(verbs_init_cq)                                                                               \
    X(ibv_read_ibdev_sysfs_file)                                                                   \
    X(ibv_cmd_get_context)                                                                         \
    X(ibv_cmd_query_context)                                                                       \
    X(ibv_cmd_query_device_any)                                                                    \
    X(ibv_cmd_query_port)                                                                          \
    X(ibv_cmd_alloc_pd)                                                                            \
    X(ibv_cmd_dealloc_pd)                                                                          \
    X(ibv_cmd_reg_mr)                                                                              \
    X(ibv_cmd_rereg_mr)                                                                            \
    X(ibv_cmd_dereg_mr)                                                                            \
    X(ibv_cmd_query_mr)                                                                            \
    X(ibv_cmd_advise_mr)                                                                           \
    X(ibv_cmd_alloc_mw)                                                                            \
    X(ibv_cmd_dealloc_mw)                                                                          \
    X(ibv_cmd_create_cq)                                                                           \
    X(ibv_cmd_create_cq_ex)                                                                        \
    X(ibv_cmd_resize_cq)                                                                           \
    X(ibv_cmd_req_notify_cq)                                                                       \
    X(ibv_cmd_destroy_cq)                                                                          \
    X(ibv_cmd_create_qp_ex)                                                                        \
    X(ibv_cmd_modify_qp)                                                                           \
    X(ibv_cmd_query_qp)                                                                            \
    X(ibv_cmd_destroy_qp)                                                                          \
    X(ibv_cmd_open_qp)                                                                             \
    X(ibv_cmd_open_xrcd)                                                                           \
    X(ibv_cmd_close_xrcd)                                                                          \
    X(ibv_cmd_attach_mcast)                                                                        \
    X(ibv_cmd_detach_mcast)                                                                        \
    X(ibv_cmd_create_srq_ex)                                                                       \
    X(ibv_cmd_modify_srq)                                                                          \
    X(ibv_cmd_query_srq)                                                                           \
    X(ibv_cmd_destroy_srq)                                                                         \
    X(ibv_cmd_create_ah)                                                                           \
    X(ibv_cmd_destroy_ah)
