# Sourced by the scripts/*-peer.sh scripts of pinned npm peers.
#
#   npm_peer NAME SRC DIR NPM_CI_FLAGS ENTRY...
#
# Installs SRC's package.json and package-lock.json (interop/…) into DIR
# with `npm ci --ignore-scripts NPM_CI_FLAGS`, unless DIR's stamp (the
# sha256 of the lockfile and node's version) is current and every ENTRY
# file is there; fails when an ENTRY is missing after the install. NAME
# prefixes the messages. Needs node and npm (exit 2 without npm).
npm_peer() {
  local name="$1" src="$2" dir="$3" flags="$4"
  shift 4
  command -v npm >/dev/null 2>&1 || { echo "$name: npm is not on PATH" >&2; exit 2; }
  local stamp="$dir/.ferromcp-stamp" want f missing=
  want="$( { cat "$src/package-lock.json"; node --version; } | sha256sum | cut -d' ' -f1)"
  for f in "$@"; do [ -f "$f" ] || missing="$f"; done
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -z "$missing" ]; then
    return 0
  fi
  echo "$name: installing ${src#"$root"/} into $dir" >&2
  mkdir -p "$dir"
  cp "$src/package.json" "$src/package-lock.json" "$dir/"
  # shellcheck disable=SC2086 # flags are words
  (cd "$dir" && npm ci --ignore-scripts $flags --no-audit --no-fund --loglevel=error >&2)
  for f in "$@"; do
    [ -f "$f" ] || { echo "$name: $f is missing after the install" >&2; exit 1; }
  done
  printf '%s\n' "$want" >"$stamp"
}
