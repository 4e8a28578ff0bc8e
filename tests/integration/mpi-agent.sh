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
peer=$([[ ${SROCE_ROLE:?} == a ]] && echo b || echo a)
shift
id=$$
# written aside, then renamed: the other guest sees whole commands only
printf '%s\n' "$*" >"$dir/.cmd.$id"
mv "$dir/.cmd.$id" "$dir/cmd.$id"
until [[ -e $dir/status.$id ]]; do
	# the other guest's script ended or its guest died: nobody will answer
	[[ -e $dir/stop || -e $SROCE_PAIR_DIR/exit.$peer ||
		-e ${SROCE_PAIR_ROOT:-$SROCE_PAIR_DIR}/dead.$peer ]] && exit 1
	sleep 0.2
done
exit "$(cat "$dir/status.$id")"
