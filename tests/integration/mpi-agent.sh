#!/bin/bash
# sroce-library: run by mpi.sh (through mpirun), not a test itself
# SPDX-License-Identifier: GPL-2.0
#
# mpi-agent.sh HOST COMMAND...: Open MPI's remote launcher (plm_rsh_agent)
# for tests/integration/mpi.sh, standing in for ssh, which the guests do
# not have. It hands COMMAND (a shell command line, as ssh would get it) to
# the other guest through the pair directory, where mpi.sh runs it, and
# exits with its status once it ended. HOST is the other guest.
set -euo pipefail
dir=${SROCE_PAIR_DIR:?}/mpi
shift
id=$$
printf '%s\n' "$*" >"$dir/cmd.$id.tmp"
mv "$dir/cmd.$id.tmp" "$dir/cmd.$id"
until [[ -e $dir/status.$id ]]; do
	[[ -e $dir/stop ]] && exit 1
	sleep 0.2
done
exit "$(cat "$dir/status.$id")"
