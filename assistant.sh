#!/usr/bin/env bash
# desktop-assistant daemon control: start, stop, restart, status, install.
#
# The daemon runs with exactly the permission flags `main.ts flags` derives
# from the config (or, when dist/desktop-assistant exists, as that compiled
# binary with its flags baked in). Paths follow the XDG variables, as the
# daemon's own do.
#
# Environment knobs:
#   ASSISTANT_START_TIMEOUT  seconds `start` waits for the socket (default 90)
#   ASSISTANT_STOP_TIMEOUT   seconds `stop` waits after SIGTERM (default 20)
#   ASSISTANT_PING           `socat` or `deno`: how to ping (default socat when installed)
set -euo pipefail
umask 077

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
app=desktop-assistant
deno_version=2.9.6
binary=$here/dist/$app
main=$here/main.ts
# What `main.ts flags` itself needs: see the README on the launcher's grants.
launcher_env=HOME,PATH,TMPDIR,XDG_CONFIG_HOME,XDG_DATA_HOME,XDG_RUNTIME_DIR,XDG_STATE_HOME
# deno.json turns the lock off for the tests' sake: every run here names
# deno.lock, which pins the daemon's packages, and refuses what it does not pin.
locked=("--lock=$here/deno.lock" --frozen)
launcher_flags=("${locked[@]}" --quiet --no-prompt --allow-read "--allow-env=$launcher_env")

die() {
  printf '%s: %s\n' "$app" "$*" >&2
  exit 1
}

# An XDG base directory: its variable when absolute (the spec ignores relative
# values), else the default under HOME.
xdg() {
  local value=${!1:-}
  case $value in
    /*) printf '%s\n' "${value%/}" ;;
    *)
      [ -n "${HOME:-}" ] || die "HOME is not set: set it, or set $1"
      printf '%s/%s\n' "${HOME%/}" "$2"
      ;;
  esac
}

case ${XDG_RUNTIME_DIR:-} in
  /*) runtime_dir=${XDG_RUNTIME_DIR%/} ;;
  *) die "XDG_RUNTIME_DIR is not set to an absolute path: set it to your runtime directory (usually /run/user/$(id -u))" ;;
esac
socket=$runtime_dir/$app.sock
pid_file=$runtime_dir/$app.pid
lock_file=$runtime_dir/$app.lock
state_dir=$(xdg XDG_STATE_HOME .local/state)/$app
log_file=$state_dir/assistant.log
config_home=$(xdg XDG_CONFIG_HOME .config)
user_tools=$config_home/$app/tools

deno_bin=
# deno on PATH, else the one the npm registry ships (resolved to the real
# binary, so signals reach the daemon and not a wrapper).
find_deno() {
  [ -z "$deno_bin" ] || return 0
  if command -v deno >/dev/null 2>&1; then
    deno_bin=$(command -v deno)
  elif command -v npx >/dev/null 2>&1; then
    deno_bin=$(npx -y "deno@$deno_version" eval -q 'console.log(Deno.execPath())' 2>/dev/null | tail -n 1) || deno_bin=
  fi
  if [ -z "$deno_bin" ] || [ ! -x "$deno_bin" ]; then
    die "deno not found: put deno $deno_version or newer on PATH (npm install -g deno@$deno_version)"
  fi
}

# Fills `daemon` with the command that runs the daemon.
daemon_command() {
  if [ -x "$binary" ]; then
    daemon=("$binary" serve)
    return 0
  fi
  find_deno
  local derived
  derived=$("$deno_bin" run "${launcher_flags[@]}" "$main" flags) ||
    die "cannot derive the daemon's flags (the reason is above)"
  local flags=()
  mapfile -t flags <<<"$derived"
  daemon=("$deno_bin" run "${locked[@]}" --no-prompt "${flags[@]}" "$main" serve)
}

alive() {
  kill -0 "$1" 2>/dev/null || return 1
  # A zombie nobody reaped yet has ended all the same.
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# Whether process $1 is this daemon, by its command line in /proc: this
# binary, or deno running this main.ts, with `serve`. A pid file outlives a
# crash, and the system may since have given its number to anything else.
ours() {
  local args=() i
  mapfile -d '' args 2>/dev/null <"/proc/$1/cmdline" || return 1
  [ "${args[0]:-}" = "$binary" ] && [ "${args[1]:-}" = serve ] && return 0
  for ((i = 1; i + 1 < ${#args[@]}; i++)); do
    [ "${args[i]}" = "$main" ] && [ "${args[i + 1]}" = serve ] && return 0
  done
  return 1
}

# The pid in the pid file when that process lives and is this daemon.
live_pid() {
  local pid
  pid=$(cat "$pid_file" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] && alive "$pid" && ours "$pid" && printf '%s\n' "$pid"
}

ping_script='const conn = await Deno.connect({ transport: "unix", path: Deno.args[0] });
await conn.write(new TextEncoder().encode("{\"type\":\"ping\"}\n"));
const decoder = new TextDecoder();
const buffer = new Uint8Array(65536);
let text = "";
for (;;) {
  const n = await conn.read(buffer);
  if (n === null) break;
  text += decoder.decode(buffer.subarray(0, n), { stream: true });
  const lines = text.split("\n");
  const pong = lines.find((line) => line.startsWith("{\"type\":\"pong\""));
  if (pong) {
    const hello = lines.find((line) => line.startsWith("{\"type\":\"hello\""));
    const out = (hello ? hello + "\n" : "") + pong + "\n";
    await Deno.stdout.write(new TextEncoder().encode(out));
    break;
  }
}
conn.close();'

# Prints the daemon's hello and pong lines; fails when nothing answers on the socket.
greeting() {
  [ -S "$socket" ] || return 1
  local out="" how=${ASSISTANT_PING:-}
  if [ -z "$how" ]; then
    # socat's address syntax cannot carry every path.
    if command -v socat >/dev/null 2>&1 && [[ $socket =~ ^[A-Za-z0-9_./@+-]+$ ]]; then
      how=socat
    else
      how=deno
    fi
  fi
  if [ "$how" = socat ]; then
    out=$(printf '{"type":"ping"}\n' |
      timeout 10 socat -t 5 - "UNIX-CONNECT:$socket" 2>/dev/null) || true
  else
    find_deno
    # The client-only grants: the socket, nothing else.
    out=$(timeout 30 "$deno_bin" run --quiet --no-prompt --no-config \
      "--allow-net=unix:$socket" "--allow-read=$socket" "--allow-write=$socket" \
      - "$socket" <<<"$ping_script" 2>/dev/null) || true
  fi
  grep -q '^{"type":"pong"' <<<"$out" || return 1
  grep -E '^\{"type":"(hello|pong)"' <<<"$out"
}

# Prints the daemon's pong line; fails when nothing answers on the socket.
ping() {
  local out
  out=$(greeting) || return 1
  grep -m 1 '^{"type":"pong"' <<<"$out"
}

# The llama-server state from a hello line's `backend` (its fields are in a
# fixed order).
backend_state() {
  local string='"(([^"\\]|\\.)*)"'
  local fields
  fields=$(sed -E -n "s/.*\"backend\":\\{\"state\":\"([a-z_]+)\",\"url\":$string,\"model\":(null|$string),\"ctx_max\":(null|[0-9]+),\"message\":(null|$string)\\}.*/\\1\\n\\2\\n\\5\\n\\7\\n\\9/p" <<<"$1")
  if [ -z "$fields" ]; then
    echo "not reported (a daemon from before backend events)"
    return 0
  fi
  local state url model ctx message
  {
    IFS= read -r state
    IFS= read -r url
    IFS= read -r model
    IFS= read -r ctx
    IFS= read -r message
  } <<<"$fields"
  [ "$ctx" != null ] || ctx=
  message=${message//\\\"/\"}
  case $state in
    up) echo "up at $url, model ${model:-unknown}${ctx:+, context $ctx tokens}" ;;
    unknown) echo "unknown at $url (not probed yet)" ;;
    *) echo "$state at $url${message:+: $message}" ;;
  esac
}

field() { # field NAME JSON-LINE: a number or string field of a flat event
  sed -E -n "s/.*\"$1\":\"?([^\",}]*).*/\1/p" <<<"$2"
}

log_tail() {
  if [ -s "$log_file" ]; then
    echo "log: $log_file, last lines:"
    tail -n "${1:-15}" "$log_file" | sed 's/^/  /'
  else
    echo "log: nothing at $log_file yet"
  fi
}

cmd_start() {
  mkdir -p "$runtime_dir"
  # One start (or stop) at a time, so two starts cannot race for the pid file.
  exec 9>"$lock_file"
  if command -v flock >/dev/null 2>&1; then
    flock -n 9 || die "another $app start or stop is in progress"
  fi
  local pong pid
  if pong=$(ping); then
    echo "$app is already running (pid $(field pid "$pong")) and answers on $socket; not started again" >&2
    return 1
  fi
  if pid=$(live_pid); then
    echo "$app is already starting (pid $pid) but does not answer on $socket yet; see $log_file" >&2
    return 1
  fi
  daemon_command
  mkdir -p "$state_dir"
  chmod 700 "$state_dir"
  # The daemon must not inherit the lock (fd 9), or no later start or stop could take it.
  nohup "${daemon[@]}" >>"$log_file" 2>&1 </dev/null 9>&- &
  pid=$!
  printf '%s\n' "$pid" >"$pid_file"
  local limit=${ASSISTANT_START_TIMEOUT:-90}
  local deadline=$((SECONDS + limit))
  while ((SECONDS < deadline)); do
    if pong=$(ping); then
      echo "$app started (pid $pid), answering on $socket; log: $log_file"
      return 0
    fi
    if ! alive "$pid"; then
      rm -f "$pid_file"
      echo "$app failed to start" >&2
      log_tail 20 >&2
      return 1
    fi
    sleep 0.2
  done
  kill -TERM "$pid" 2>/dev/null || true
  rm -f "$pid_file"
  echo "$app did not answer on $socket within $limit s; it was stopped" >&2
  log_tail 20 >&2
  return 1
}

cmd_stop() {
  exec 9>"$lock_file" 2>/dev/null || true
  if command -v flock >/dev/null 2>&1; then
    flock -w 30 9 2>/dev/null || true
  fi
  local pong pid=""
  if pong=$(ping); then
    pid=$(field pid "$pong")
  elif ! pid=$(live_pid); then
    rm -f "$pid_file"
    echo "$app is not running"
    return 0
  fi
  if ! kill -TERM "$pid" 2>/dev/null; then
    echo "cannot signal $app (pid $pid): is it another user's?" >&2
    return 1
  fi
  local limit=${ASSISTANT_STOP_TIMEOUT:-20}
  local deadline=$((SECONDS + limit))
  while alive "$pid" && ((SECONDS < deadline)); do
    sleep 0.1
  done
  if alive "$pid"; then
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$pid_file"
    echo "$app (pid $pid) did not stop within $limit s of SIGTERM and was killed" >&2
    log_tail 10 >&2
    return 1
  fi
  rm -f "$pid_file"
  local last
  last=$(grep ' exit ' "$log_file" 2>/dev/null | tail -n 1) || true
  echo "$app stopped (pid $pid)${last:+; it logged: $last}"
}

cmd_status() {
  local pid pong up=1
  if pid=$(live_pid); then
    echo "process: running, pid $pid (from $pid_file)"
  elif [ -e "$pid_file" ]; then
    echo "process: not running (stale pid file $pid_file)"
  else
    echo "process: no pid file at $pid_file"
  fi
  local lines
  if lines=$(greeting); then
    up=0
    pong=$(grep -m 1 '^{"type":"pong"' <<<"$lines")
    echo "socket: $socket answers ping: pid $(field pid "$pong"), version $(field version "$pong"), up $(field uptime "$pong") s"
    echo "backend: $(backend_state "$(grep -m 1 '^{"type":"hello"' <<<"$lines")")"
  elif [ -S "$socket" ]; then
    echo "socket: $socket does not answer ping"
  else
    echo "socket: none at $socket"
  fi
  log_tail 10
  return "$up"
}

# Quotes one ExecStart word for systemd: C-style escapes, `%` and `$` doubled.
unit_word() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//%/%%}
  s=${s//\$/\$\$}
  printf '"%s"' "$s"
}

# Quotes one Environment= assignment: systemd expands `%` there, not `$`.
unit_env() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//%/%%}
  printf '"%s"' "$s"
}

cmd_install() {
  mkdir -p "$user_tools"
  local file name
  for file in "$here"/tools/*; do
    [ -f "$file" ] || continue
    name=${file##*/}
    if [ -e "$user_tools/$name" ] || [ -L "$user_tools/$name" ]; then
      echo "kept your $user_tools/$name"
    else
      cp -p "$file" "$user_tools/$name"
      echo "copied $name to $user_tools"
    fi
  done
  # Derived after the copy, so the copies' scripts are granted.
  daemon_command
  local unit_dir=$config_home/systemd/user
  local unit=$unit_dir/$app.service
  local exec="" word var
  for word in "${daemon[@]}"; do exec+="${exec:+ }$(unit_word "$word")"; done
  mkdir -p "$unit_dir"
  {
    echo "# Written by $here/assistant.sh install; run it again after changing the config or the tools."
    echo "[Unit]"
    echo "Description=desktop-assistant, the local text-assistant daemon"
    echo
    echo "[Service]"
    echo "Type=simple"
    for var in PATH XDG_CONFIG_HOME XDG_DATA_HOME XDG_STATE_HOME; do
      [ -n "${!var:-}" ] && echo "Environment=$(unit_env "$var=${!var}")"
    done
    echo "ExecStart=$exec"
    echo "Restart=on-failure"
    echo
    echo "[Install]"
    echo "WantedBy=default.target"
  } >"$unit.tmp"
  mv -f "$unit.tmp" "$unit"
  echo "wrote $unit"
  echo "enable it with: systemctl --user daemon-reload && systemctl --user enable --now $app"
}

usage() {
  echo "usage: $0 start|stop|restart|status|install" >&2
  exit 64
}

[ $# -eq 1 ] || usage
case $1 in
  start) cmd_start ;;
  stop) cmd_stop ;;
  restart)
    cmd_stop
    cmd_start
    ;;
  status) cmd_status ;;
  install) cmd_install ;;
  *) usage ;;
esac
