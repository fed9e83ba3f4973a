# Sourced by ci/demo: a PostgreSQL cluster and an ebpkg-registry on loopback,
# in a directory of their own, for the demo to publish to and install from.
#
#   registry_start DIR REGISTRY_BINARY   sets REGISTRY_URL, REGISTRY_DB, REGISTRY_PID and
#                                        REGISTRY_ARGS (the flags every ebpkg-registry command needs)
#   registry_stop DIR                    stops both and removes DIR

PG_BIN=/usr/lib/postgresql/15/bin

# As the postgres user, from a directory it may enter.
as_postgres() { (cd / && runuser -u postgres -- "$@"); }

# A free TCP port on 127.0.0.1 (the kernel picks it).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

registry_start() {
    local dir=$1 binary=$2
    mkdir -p "$dir/pg"
    # initdb refuses root: the cluster belongs to the postgres user, its socket
    # lives in the cluster's directory (no TCP port).
    chown postgres: "$dir/pg"
    chmod 755 "$dir"
    as_postgres "$PG_BIN/initdb" -A trust -U postgres --no-sync -E UTF8 --locale C -D "$dir/pg/data" \
        >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log"; return 1; }
    as_postgres "$PG_BIN/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/postgres.log" -w \
        -o "-k $dir/pg -c listen_addresses= -c fsync=off" start >/dev/null \
        || { cat "$dir/pg/postgres.log"; return 1; }
    as_postgres psql -h "$dir/pg" -U postgres -XAtq -c "CREATE DATABASE ebpkg" >/dev/null
    REGISTRY_DB="postgres://postgres@localhost/ebpkg?host=$dir/pg"
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
    if [ -d "$dir/pg/data" ]; then
        as_postgres "$PG_BIN/pg_ctl" -D "$dir/pg/data" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
}
