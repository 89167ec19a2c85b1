#!/usr/bin/env bash
# Builds the Debian package from an already built binary, installs it with
# dpkg, checks the unit with systemd-analyze, runs the installed binary as
# the `plaza` user against a fresh data directory until it answers
# /api/health, and removes the package again.
# Usage: packaging/check-deb.sh [cargo profile, default release]
# CI packages the tests' debug build (`dev`), which the pinned cargo-deb
# accepts with a warning, rather than spend a release build on the check.
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE="${1:-release}"
target_dir="${CARGO_TARGET_DIR:-target}"
out="$target_dir/debian"
rm -rf "$out"
cargo deb -p plaza-server --no-build --fast --profile "$PROFILE" --output "$out/" >/dev/null
package=$(ls "$out"/plaza_*.deb)
echo "package: $package ($(stat -c %s "$package") bytes)"
work=$(mktemp -d)
chmod 755 "$work"
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  dpkg --purge plaza >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

dpkg -i "$package"
test -x /usr/bin/plaza
test -f /etc/plaza/plaza.toml
getent passwd plaza >/dev/null
# One source of settings: plaza.env names the data directory and is read by
# the binary (service and commands), not by systemd alone.
grep -qx 'PLAZA_DATA_DIR=/var/lib/plaza' /etc/plaza/plaza.env
test "$(stat -c '%a %U:%G' /etc/plaza/plaza.env)" = "640 root:plaza"
! grep -q '^EnvironmentFile=\|^Environment=PLAZA_' /lib/systemd/system/plaza.service
systemd-analyze verify /lib/systemd/system/plaza.service
# The settings are the service user's to read, nobody else's.
test "$(stat -c '%a %U:%G' /etc/plaza/plaza.toml)" = "640 root:plaza"
# pg_dump for `plaza backup` on PostgreSQL.
dpkg-query -W -f '${Depends}' plaza | grep -q 'postgresql-client'
unit=/lib/systemd/system/plaza.service
for line in ProcSubset=pid PrivateUsers=yes 'SystemCallFilter=~@resources'; do
  grep -qx "$line" "$unit" || { echo "the unit lacks $line"; exit 1; }
done

install -d -o plaza -g plaza -m 0700 "$work/data"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
runuser -u plaza -- env PLAZA_DATA_DIR="$work/data" PLAZA_BIND="127.0.0.1:$port" \
  /usr/bin/plaza --config /etc/plaza/plaza.toml serve 2>"$work/log" &
pid=$!
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$port/api/health" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/log"; exit 1; }
  sleep 0.2
done
curl -fsS "http://127.0.0.1:$port/api/health"
echo
test -f "$work/data/plaza.db"
kill "$pid"
wait "$pid" || true
pid=
install -d -o plaza -g plaza -m 0700 /var/lib/plaza
touch /var/lib/plaza/kept
dpkg --purge plaza
! test -e /usr/bin/plaza
# Purge removes the settings and the user, keeps the data, owned by root.
! test -e /etc/plaza
! getent passwd plaza >/dev/null
test "$(stat -c '%U:%G' /var/lib/plaza /var/lib/plaza/kept | sort -u)" = "root:root"
rm -rf /var/lib/plaza
echo "the package installs, serves and purges cleanly"
