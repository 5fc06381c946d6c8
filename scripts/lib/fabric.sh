# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Shell functions for a simulated InfiniBand fabric: ibsim + a real OpenSM (doc/testbed.md §4).
# Sourced by scripts/demo. Needs SCRATCH (an empty directory). Processes started here are
# stopped by stop_fabric in the right order: clients first, then OpenSM, then ibsim.
UMAD2SIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
export IBSIM_SOCKNAME="mcastd-demo-$$-$RANDOM"

gen_net() { # gen_net N: switch S1 + hosts H1..HN, each cabled on its port 1
    local n=$1 i ports=$(($1 + 2 > 8 ? $1 + 2 : 8))
    printf 'Switch\t%d "S1"\n' "$ports"
    for i in $(seq "$n"); do printf '[%d]\t"H%d"[1]\n' "$i" "$i"; done
    for i in $(seq "$n"); do printf '\nHca\t1 "H%d"\n[1]\t"S1"[%d]\n' "$i" "$i"; done
}

on_node() { # on_node H2 cmd args...: run cmd attached to node H2
    local node=$1
    shift
    (cd "$SCRATCH/cli" && SIM_HOST=$node LD_PRELOAD=$UMAD2SIM "$@")
}

wait_sa() { # wait_sa NODE SECONDS: until the SA answers from NODE
    local end=$((SECONDS + $2))
    until on_node "$1" saquery -s >/dev/null 2>&1; do
        [ "$SECONDS" -ge "$end" ] && return 1
        sleep 0.05
    done
}

start_ibsim() {
    mkdir -p "$SCRATCH/cli" "$SCRATCH/osm"
    mkfifo "$SCRATCH/console"
    ibsim -s "$SCRATCH/net" <"$SCRATCH/console" >"$SCRATCH/ibsim.out" 2>&1 &
    IBSIM_PID=$!
    sleep 1000000 >"$SCRATCH/console" & # a writer kept open: EOF makes ibsim spin
    HOLDER_PID=$!
    local i
    for i in $(seq 100); do
        grep -q 'Network simulator ready' "$SCRATCH/ibsim.out" && return 0
        sleep 0.05
    done
    return 1
}

start_opensm() { # start_opensm NODE
    (cd "$SCRATCH/osm" && SIM_HOST=$1 LD_PRELOAD=$UMAD2SIM OSM_TMP_DIR="$SCRATCH/osm" \
        OSM_CACHE_DIR="$SCRATCH/osm" exec opensm -f "$SCRATCH/osm/osm.log") >"$SCRATCH/osm/stdout" 2>&1 &
    OSM_PID=$!
}

stop_pid() { # TERM, wait up to 5 s, then KILL; reap
    [ -n "${1:-}" ] || return 0
    kill "$1" 2>/dev/null || return 0
    local i
    for i in $(seq 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}

stop_fabric() { # best effort: a process that already exited is not an error
    set +e
    local pid
    for pid in "${CLIENT_PIDS[@]}"; do stop_pid "$pid"; done
    stop_pid "${DAEMON_PID:-}"
    stop_pid "${OSM_PID:-}"
    stop_pid "${IBSIM_PID:-}"
    stop_pid "${HOLDER_PID:-}"
}
CLIENT_PIDS=()
