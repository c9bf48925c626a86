# shellcheck shell=bash
# Helpers shared by scripts/scale-out.sh and bench/nginx.sh to run a fleet of
# everything-server replicas, Redis and nginx (the recipe in deploy/nginx/)
# on loopback. Source it; it defines functions only.
#
#   fleet_tools              install redis-server, redis-cli, nginx, wrk if missing
#   fleet_bin                sets BIN: a release everything-server with the redis
#                            feature ($SCALE_OUT_BIN if set, else built here)
#   free_port                prints a free loopback port
#   wait_port PORT [S [PID [LOG]]]
#                            waits until something listens on PORT (at most S
#                            seconds, default 60); fails at once when process
#                            PID has exited, and prints the end of LOG on
#                            any failure
#   fleet_nginx DIR PORT UPSTREAM_PORT...
#                            starts nginx with deploy/nginx/ as committed (only
#                            the ports filled in); FLEET_ACCESS_LOG=0 turns the
#                            access log off (benchmarks)
#                            FLEET_IDEMPOTENT="a b" marks these tool names
#                            idempotent too, as an operator would (a line
#                            next to the recipe's `echo` one)
#   fleet_target_dir         prints cargo's target directory

fleet_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

fleet_tools() {
  local need=()
  command -v redis-server >/dev/null || need+=(redis-server)
  command -v redis-cli >/dev/null || need+=(redis-tools)
  command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
  command -v wrk >/dev/null || need+=(wrk)
  command -v taskset >/dev/null || need+=(util-linux)
  if ((${#need[@]})); then
    echo "fleet: installing ${need[*]}" >&2
    local sudo=
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
  fi
  NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
}

fleet_bin() {
  if [ -n "${SCALE_OUT_BIN:-}" ]; then
    BIN="$SCALE_OUT_BIN" # built elsewhere (must have the redis feature)
    return
  fi
  echo "fleet: building everything-server --features redis (release)" >&2
  (cd "$fleet_root" && cargo build --release --quiet --bin everything-server --features ferromcp-everything/redis)
  BIN="$(fleet_target_dir)/release/everything-server"
}

fleet_target_dir() {
  (cd "$fleet_root" && cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

fleet_show_log() { # log
  [ -n "$1" ] && [ -f "$1" ] || return 0
  echo "fleet: last lines of $1:" >&2
  tail -n 40 "$1" | sed 's/^/  | /' >&2
}

# A start-up is slow on a loaded machine (a fresh binary, a build or a load
# test next to it): the bound is generous, and a process that died is
# reported at once, with its log, instead of after the whole bound.
wait_port() { # port [seconds [pid [log]]]
  local port="$1" limit="${2:-60}" pid="${3:-}" log="${4:-}"
  local deadline=$((SECONDS + limit))
  until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
      echo "fleet: process $pid exited before it listened on $port" >&2
      fleet_show_log "$log"
      return 1
    fi
    if ((SECONDS >= deadline)); then
      echo "fleet: nothing listens on $port after ${limit}s${pid:+ (process $pid still running)}" >&2
      fleet_show_log "$log"
      return 1
    fi
    sleep 0.05
  done
}

fleet_nginx() { # dir listen-port upstream-port...
  local dir="$1" lport="$2" p t
  shift 2
  mkdir -p "$dir/tmp"
  cp "$fleet_root"/deploy/nginx/mcp.conf "$fleet_root"/deploy/nginx/mcp_proxy.conf "$dir/"
  sed -i "s/listen 127.0.0.1:8080;/listen 127.0.0.1:$lport;/" "$dir/mcp.conf"
  for t in ${FLEET_IDEMPOTENT:-}; do
    sed -i "/^    \"POST:tools\/call:echo\" /a\\    \"POST:tools/call:$t\"  retry;" "$dir/mcp.conf"
  done
  {
    echo "worker_processes 1; pid $dir/nginx.pid; error_log $dir/error.log warn;"
    echo "events { worker_connections 4096; }"
    echo "http {"
    if [ "${FLEET_ACCESS_LOG:-1}" = 1 ]; then
      echo "  log_format mcp '\$msec \$status \$upstream_addr \$upstream_status \$http_mcp_method';"
      echo "  access_log $dir/access.log mcp;"
    else
      echo "  access_log off;"
    fi
    for t in client_body proxy fastcgi uwsgi scgi; do echo "  ${t}_temp_path $dir/tmp/$t;"; done
    echo "  upstream mcp_fleet {"
    for p in "$@"; do echo "    server 127.0.0.1:$p max_fails=1 fail_timeout=2s;"; done
    echo "    keepalive 64;"
    echo "  }"
    echo "  include $dir/mcp.conf;"
    echo "}"
  } >"$dir/nginx.conf"
  ${FLEET_PIN:-} "$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log"
  # nginx daemonizes: no process of ours to watch, its error log is enough.
  wait_port "$lport" 60 "" "$dir/error.log"
}
