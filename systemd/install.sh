#!/bin/sh
# Install, upgrade or uninstall dataset-connector as a systemd service.
#
#   sudo systemd/install.sh              install or upgrade (idempotent; run from a built checkout)
#   sudo systemd/install.sh --uninstall  stop and remove the program, the launcher and the unit
#                                        (config, keys, state and unit drop-ins stay;
#                                        --purge removes them too)
#
# Node.js must be installed system-wide (not under /home: ProtectHome=yes);
# NODE=/path/to/node picks it. PREFIX, ETC, UNIT_DIR, BIN_DIR and STATE_DIR move
# the layout (the unit's StateDirectory= stays /var/lib/dataset-connector);
# DC_USER names the service user; NPM_CI=no copies the checkout's node_modules
# (pruned) instead of running npm ci.
#
# Layout:
#   /opt/dataset-connector/           program (dist/, production node_modules, package files)
#   /usr/local/bin/dataset-connector  launcher: run by root, the command runs as the service user
#   /etc/dataset-connector/           connector.yaml, conf.d/, keys/ (root:dataset-connector, 0750)
#   /etc/dataset-connector/keys/*     one key per file (dataset-connector, 0600: the service user only)
#   /var/lib/dataset-connector/       state.db (dataset-connector, 0700; the unit's StateDirectory=)
#   /etc/systemd/system/dataset-connector.service
set -eu

PREFIX=${PREFIX:-/opt/dataset-connector}
ETC=${ETC:-/etc/dataset-connector}
UNIT_DIR=${UNIT_DIR:-/etc/systemd/system}
STATE_DIR=${STATE_DIR:-/var/lib/dataset-connector}
BIN_DIR=${BIN_DIR:-/usr/local/bin}
USER_NAME=${DC_USER:-dataset-connector}
# The systemctl to call (tests pass a no-op); only called where systemd runs.
SYSTEMCTL=${SYSTEMCTL:-systemctl}
SRC=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
LAUNCHER="$BIN_DIR/dataset-connector"
# Second line of a launcher this script wrote: --uninstall removes only such a file.
LAUNCHER_MARK='# dataset-connector launcher, written by systemd/install.sh (run it again to update)'

say() { printf '%s\n' "$*"; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }
have_systemd() { [ -d /run/systemd/system ]; }

uninstall() {
  purge=$1
  if have_systemd; then
    "$SYSTEMCTL" disable --now dataset-connector.service 2>/dev/null || true
  fi
  rm -f "$UNIT_DIR/dataset-connector.service"
  if [ "$purge" = yes ]; then
    # Drop-ins (systemctl edit) hold LoadCredential= and ReadWritePaths=: the shop's settings, kept unless purging.
    rm -rf "$UNIT_DIR/dataset-connector.service.d"
  fi
  if have_systemd; then "$SYSTEMCTL" daemon-reload; fi
  rm -rf "$PREFIX"
  if [ -f "$LAUNCHER" ] && [ "$(sed -n 2p "$LAUNCHER")" = "$LAUNCHER_MARK" ]; then rm -f "$LAUNCHER"; fi
  if [ "$purge" = yes ]; then
    rm -rf "$ETC" "$STATE_DIR" "$(dirname -- "$STATE_DIR")/private/$(basename -- "$STATE_DIR")"
    if id "$USER_NAME" >/dev/null 2>&1; then userdel "$USER_NAME" 2>/dev/null || true; fi
    say "dataset-connector removed, with its configuration, keys, state, unit drop-ins and user."
  else
    say "dataset-connector removed. Kept: $ETC (config, keys), $STATE_DIR (state) and $UNIT_DIR/dataset-connector.service.d (drop-ins)."
    say "Remove those too with: $0 --uninstall --purge"
  fi
}

case "${1:-}" in
  --uninstall)
    [ "$(id -u)" -eq 0 ] || die "run as root (sudo $0 $*)"
    uninstall "$([ "${2:-}" = --purge ] && echo yes || echo no)"
    exit 0
    ;;
  ""|--install) ;;
  *) die "usage: $0 [--uninstall [--purge]]" ;;
esac

# The node the unit will run (NODE=/path/to/node to choose another).
NODE=${NODE:-$(command -v node 2>/dev/null || true)}
[ -n "$NODE" ] || die "Node.js 20 or later is needed (node not found)"
# ProtectHome=yes hides /home, /root and /run/user from the service: a node there
# (nvm, volta, fnm) makes systemd fail with status 203/EXEC.
NODE_REAL=$(readlink -f -- "$NODE" 2>/dev/null || printf '%s' "$NODE")
for p in "$NODE" "$NODE_REAL"; do
  case "$p" in
    /home/*|/root/*|/run/user/*)
      die "node at $p is under a home folder, which the service cannot see (ProtectHome=yes: it would fail with 203/EXEC). Install Node.js 20+ system-wide (your distribution's package or NodeSource, giving /usr/bin/node) or run with NODE=/path/outside/home/node" ;;
  esac
done
"$NODE" -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' || die "Node.js 20 or later is needed ($NODE)"
[ "$(id -u)" -eq 0 ] || die "run as root (sudo $0 $*)"
[ -f "$SRC/dist/cli/main.js" ] || die "build first: npm ci && npm run build (no $SRC/dist/cli/main.js)"
command -v setpriv >/dev/null 2>&1 || die "setpriv (util-linux) is needed for the launcher"

# The service user: a system account with no shell and no home of its own.
if ! id "$USER_NAME" >/dev/null 2>&1; then
  useradd --system --user-group --home-dir "$STATE_DIR" --no-create-home \
    --shell /usr/sbin/nologin --comment "dataset-connector service" "$USER_NAME"
  say "created system user $USER_NAME"
fi
GROUP_NAME=$(id -gn "$USER_NAME")

# Program: a fresh copy each time (upgrade = run again), production dependencies only.
stage="$PREFIX.new"
rm -rf "$stage"
mkdir -p "$stage"
cp -R "$SRC/dist" "$SRC/package.json" "$stage/"
[ -f "$SRC/package-lock.json" ] && cp "$SRC/package-lock.json" "$stage/"
[ -f "$SRC/README.md" ] && cp "$SRC/README.md" "$stage/"
mkdir -p "$stage/config"
cp "$SRC/config/connector.example.yaml" "$SRC/config/connector.schema.json" "$stage/config/"
# npm ci needs the registry; offline (or with NPM_CI=no) the checkout's node_modules is copied and pruned instead.
if [ "${NPM_CI:-yes}" = no ] || ! (cd "$stage" && npm ci --omit=dev --no-audit --no-fund >/dev/null 2>&1); then
  [ "${NPM_CI:-yes}" = no ] || say "npm ci failed (offline?): copying node_modules from $SRC and pruning dev dependencies"
  rm -rf "$stage/node_modules"
  cp -R "$SRC/node_modules" "$stage/"
  (cd "$stage" && npm prune --omit=dev --no-audit --no-fund >/dev/null)
fi
chown -R root:root "$stage"
chmod -R u=rwX,go=rX "$stage"
rm -rf "$PREFIX.old"
[ -d "$PREFIX" ] && mv "$PREFIX" "$PREFIX.old"
mv "$stage" "$PREFIX"
rm -rf "$PREFIX.old"
say "installed program in $PREFIX"

# Configuration: never overwrite what the shop edited. The service user reads it (group) and cannot change it.
install -d -o root -g "$GROUP_NAME" -m 0750 "$ETC" "$ETC/conf.d" "$ETC/keys"
# Keys: the service user's alone. The connector refuses a key file that group or others can read, and the
# commands run through the launcher (doctor, sync, approve) read it as that user, as the service does.
for key in "$ETC/keys"/* "$ETC/keys"/.[!.]*; do
  if [ -f "$key" ] && [ ! -L "$key" ]; then
    chown "$USER_NAME:$GROUP_NAME" "$key"
    chmod 0600 "$key"
  fi
done
# State: made here so that the commands work before the first start (systemd adopts the folder).
install -d -o "$USER_NAME" -g "$GROUP_NAME" -m 0700 "$STATE_DIR"
chown -R "$USER_NAME:$GROUP_NAME" "$STATE_DIR"
if [ ! -f "$ETC/connector.yaml" ]; then
  install -o root -g "$GROUP_NAME" -m 0640 "$SRC/config/connector.example.yaml" "$ETC/connector.yaml"
  sed -i "s#\$schema=./connector.schema.json#\$schema=$PREFIX/config/connector.schema.json#" "$ETC/connector.yaml"
  fresh_config=yes
else
  fresh_config=no
fi

# Unit: the node found here, the paths chosen above.
mkdir -p "$UNIT_DIR"
sed -e "s#/usr/bin/node#$NODE#g" -e "s#/opt/dataset-connector#$PREFIX#g" -e "s#/etc/dataset-connector#$ETC#g" \
  "$SRC/systemd/dataset-connector.service" >"$UNIT_DIR/dataset-connector.service.tmp"
# Type=notify needs the optional unix-dgram addon (AF_UNIX datagrams); without a C++ toolchain npm
# skips it, and the unit starts as Type=exec without the watchdog rather than time out waiting for READY=1.
if [ ! -f "$PREFIX/node_modules/unix-dgram/build/Release/unix_dgram.node" ]; then
  sed -i -e 's/^Type=notify$/Type=exec/' -e '/^NotifyAccess=/d' -e '/^WatchdogSec=/d' "$UNIT_DIR/dataset-connector.service.tmp"
  say "note: unix-dgram was not built (no C++ toolchain?): the unit runs as Type=exec, without readiness or watchdog."
  say "      Install make, g++ and python3, then run this script again for Type=notify and WatchdogSec=."
fi
chmod 0644 "$UNIT_DIR/dataset-connector.service.tmp"
mv "$UNIT_DIR/dataset-connector.service.tmp" "$UNIT_DIR/dataset-connector.service"

# Launcher on the PATH. Run by root, the command runs as the service user (setpriv: no PAM, the
# environment kept): a state database it creates belongs to the service, and a key is read as the
# service reads it, so `doctor` finds what the service would find.
mkdir -p "$BIN_DIR"
cat >"$LAUNCHER.tmp" <<EOF
#!/bin/sh
$LAUNCHER_MARK
export DATASET_CONNECTOR_CONFIG="\${DATASET_CONNECTOR_CONFIG:-$ETC/connector.yaml}"
umask 077
if [ "\$(id -u)" -eq 0 ]; then
  exec setpriv --reuid='$USER_NAME' --regid='$GROUP_NAME' --init-groups -- '$NODE' '$PREFIX/dist/cli/main.js' "\$@"
fi
exec '$NODE' '$PREFIX/dist/cli/main.js' "\$@"
EOF
chmod 0755 "$LAUNCHER.tmp"
mv "$LAUNCHER.tmp" "$LAUNCHER"
say "installed the command $LAUNCHER (run by root, it runs as $USER_NAME)"

if have_systemd; then
  "$SYSTEMCTL" daemon-reload
  if "$SYSTEMCTL" is-active --quiet dataset-connector.service; then
    "$SYSTEMCTL" restart dataset-connector.service && say "restarted the running service on the new version"
  fi
fi

say ""
say "Next steps:"
[ "$fresh_config" = yes ] && say "  1. Edit $ETC/connector.yaml (the lines marked EDIT: base_url, dataset_id, source, mapping, watch.path)."
[ "$fresh_config" = no ] && say "  1. Your $ETC/connector.yaml was kept; compare with $PREFIX/config/connector.example.yaml."
say "  2. Put each dataset key in a file of its own that only $USER_NAME can read:"
say "       sudo install -o $USER_NAME -g $GROUP_NAME -m 0600 /dev/null $ETC/keys/shop-1 && sudoedit $ETC/keys/shop-1"
say "     (the YAML names it: key: { file: $ETC/keys/shop-1 }; running this script again fixes owners and modes in keys/)."
say "     Add the export folders with ReadWritePaths=/srv/pos-export in: systemctl edit dataset-connector"
say "  3. Check:  sudo dataset-connector validate && sudo dataset-connector doctor"
say "  4. Start:  systemctl enable --now dataset-connector && journalctl -u dataset-connector -f"
