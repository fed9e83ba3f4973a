# Sourced by ci/lib/registry.sh and ci/sqlx-prepare: a throwaway PostgreSQL cluster
# in a directory of its own, reachable only over a unix socket there.
#
#   postgres_start DIR   initdb, start, CREATE DATABASE ebpkg; sets POSTGRES_URL
#   postgres_stop DIR    stops it (immediately) and removes DIR

PG_BIN=/usr/lib/postgresql/15/bin

# As the postgres user, from a directory it may enter.
as_postgres() { (cd / && runuser -u postgres -- "$@"); }

postgres_start() {
    local dir=$1
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
    POSTGRES_URL="postgres://postgres@localhost/ebpkg?host=$dir/pg"
}

postgres_stop() {
    local dir=$1
    [ -d "$dir" ] || return 0
    if [ -d "$dir/pg/data" ]; then
        as_postgres "$PG_BIN/pg_ctl" -D "$dir/pg/data" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
}
