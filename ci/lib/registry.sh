# Sourced by ci/demo: a PostgreSQL cluster and an ebpkg-registry on loopback,
# in a directory of their own, for the demo to publish to and install from.
#
#   registry_start DIR REGISTRY_BINARY   sets REGISTRY_URL, REGISTRY_DB, REGISTRY_PID and
#                                        REGISTRY_ARGS (the flags every ebpkg-registry command needs)
#   registry_stop DIR                    stops both and removes DIR

source "$(dirname "${BASH_SOURCE[0]}")/postgres.sh"

# A free TCP port on 127.0.0.1 (the kernel picks it).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

registry_start() {
    local dir=$1 binary=$2
    postgres_start "$dir" || return 1
    REGISTRY_DB=$POSTGRES_URL
    local port
    port=$(free_port)
    REGISTRY_URL="http://127.0.0.1:$port"
    REGISTRY_ARGS=(--database-url "$REGISTRY_DB" --storage "file://$dir/blobs")
    "$binary" "${REGISTRY_ARGS[@]}" migrate >/dev/null
    # Production defaults (unsigned publishes refused; the new-package burst
    # fits the first-party set).
    "$binary" "${REGISTRY_ARGS[@]}" serve --listen "127.0.0.1:$port" --public-url "$REGISTRY_URL/" \
        >"$dir/registry.log" 2>&1 &
    REGISTRY_PID=$!
    echo "$REGISTRY_PID" >"$dir/registry.pid"
    for _ in $(seq 100); do
        curl -fsS "$REGISTRY_URL/readyz" >/dev/null 2>&1 && return 0
        kill -0 "$REGISTRY_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "ebpkg-registry did not get ready; its log:" >&2
    cat "$dir/registry.log" >&2
    return 1
}

registry_stop() {
    local dir=$1
    [ -d "$dir" ] || return 0
    if [ -f "$dir/registry.pid" ]; then
        kill "$(cat "$dir/registry.pid")" 2>/dev/null || true
        wait "$(cat "$dir/registry.pid")" 2>/dev/null || true
    fi
    postgres_stop "$dir"
}
