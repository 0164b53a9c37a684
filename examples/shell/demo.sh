#!/usr/bin/env bash
# Two shell jobs contend for one lock through the quorumlock CLI, plus `status` and `ping`.
# `make demo` runs it as: ql-harness exec --nodes 5 -- bash examples/shell/demo.sh
# (ql-harness sets QL_NODES; set QUORUMLOCK_NODES yourself to use your own nodes).
set -u
ql=${QUORUMLOCK:-target/debug/quorumlock}
export QUORUMLOCK_NODES=${QUORUMLOCK_NODES:-$QL_NODES}

"$ql" ping | tail -n 1
job() {
  "$ql" run nightly-report --wait 10s -- sh -c \
    "echo \"job $1: got the lock (token \$QUORUMLOCK_TOKEN, valid for \$QUORUMLOCK_VALIDITY_MS ms, kept alive while I run)\"; sleep 1; echo \"job $1: done\""
}
job A &
job B &
sleep 0.5
"$ql" status nightly-report | head -n 1
"$ql" run nightly-report --no-wait -- true 2>/dev/null
echo "job C with --no-wait: exit $? (110 = busy)"
wait
"$ql" status nightly-report | head -n 1
