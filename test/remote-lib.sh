# shellcheck shell=bash
# test/remote-lib.sh: the server side of a two-host test, run on the other host through a
# command prefix (source it; bash). Only assignments and definitions run at source time.
#
# The prefix runs one shell command line on the server host and passes our stdin to it:
# "ssh user@host" (with any ssh options: -o BatchMode=yes, a ControlMaster), or "local",
# which runs it here through sh -c, the same path (the test bed, where two devices on one
# host stand in for two hosts). The server host needs a POSIX shell, timeout(1), nohup(1),
# mktemp(1) and ss(8). Everything started there is bounded: every command line by
# SRV_TIMEOUT seconds (60), every background process by its own LIMIT (timeout -k 5).
#
#   srv_init PREFIX       a fresh working directory there, $SRV_DIR (mode 700); set
#                         `trap srv_cleanup EXIT` after it
#   srv CMDLINE           run a shell command line there (our stdin is its stdin)
#   srv_put NAME          our stdin into $SRV_DIR/NAME (mode 600)
#   srv_bg NAME LIMIT CMD...  CMD there in the background, at most LIMIT seconds, its output
#                         in $SRV_DIR/NAME.log; one NAME at a time
#   srv_listening PORT SECS NAME  wait until something listens on TCP PORT there; gives up
#                         after SECS, or when NAME has ended
#   srv_wait NAME SECS    wait until NAME ends by itself (1 when SECS passed first)
#   srv_stop NAME         end NAME (TERM; KILL 6 s later) and keep its log
#   srv_cleanup           end everything started there and remove $SRV_DIR
#   pt_far NAME ARGS...   guest-lib.sh's pt (same variables: SRV_DEV SRV_IB_PORT SRV_GID
#                         CLI_DEV CLI_IB_PORT CLI_GID SRV_IP PT_DIR PT_TRIES PT_TIMEOUT, and
#                         its port range, pt_port) with its server there
SRV_TIMEOUT=${SRV_TIMEOUT:-60}
SRV_PREFIX=''
SRV_DIR=''

# _q ARGS...: the arguments as one command line for a POSIX shell.
_q() { local a s=''; for a in "$@"; do s+="$(printf '%q' "$a") "; done; printf '%s' "${s% }"; }

srv() {
  if [ "$SRV_PREFIX" = local ]; then
    timeout -k 5 "$SRV_TIMEOUT" sh -c "$1"
  else
    # shellcheck disable=SC2086 # the prefix is a command and its arguments
    timeout -k 5 "$SRV_TIMEOUT" $SRV_PREFIX "$1"
  fi
}

srv_init() {
  SRV_PREFIX=$1
  [ -n "$SRV_PREFIX" ] || { echo "remote-lib: no command prefix for the server host" >&2; return 1; }
  # shellcheck disable=SC2016 # expanded there
  SRV_DIR=$(srv 'umask 077 && mktemp -d "${TMPDIR:-/tmp}/rdmabench-srv.XXXXXX"' < /dev/null)
  if [ -z "$SRV_DIR" ]; then
    echo "remote-lib: '$SRV_PREFIX' could not make a working directory on the server host" >&2
    return 1
  fi
}

srv_put() { srv "umask 077 && cat > $(_q "$SRV_DIR/$1")"; }

srv_bg() {
  local name=$1 limit=$2; shift 2
  srv "cd $(_q "$SRV_DIR") && { nohup timeout -k 5 $limit $(_q "$@") > $name.log 2>&1 < /dev/null & echo \$! > $name.pid; }" < /dev/null
}

srv_listening() {
  local n=$(($2 * 10))
  srv "cd $(_q "$SRV_DIR") || exit 1; p=\$(cat $3.pid) || exit 1; i=0
    while [ \$i -lt $n ]; do
      ss -ltnH 'sport = :$1' 2>/dev/null | grep -q . && exit 0
      kill -0 \$p 2>/dev/null || exit 1
      sleep 0.1; i=\$((i + 1))
    done; exit 1" < /dev/null
}

srv_wait() {
  local n=$(($2 * 10))
  SRV_TIMEOUT=$((SRV_TIMEOUT + $2)) srv "cd $(_q "$SRV_DIR") || exit 1; p=\$(cat $1.pid) || exit 0; i=0
    while kill -0 \$p 2>/dev/null; do [ \$i -lt $n ] || exit 1; sleep 0.1; i=\$((i + 1)); done
    rm -f $1.pid" < /dev/null
}

# _srv_end PIDFILES: TERM each (timeout passes it on to its command), KILL what is left
# after 6 s (timeout's own -k 5 has then killed the command). Expanded there.
# shellcheck disable=SC2016
_srv_end='for f in $PIDFILES; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  i=0; while [ $i -lt 60 ]; do
    alive=0; for f in $PIDFILES; do [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break; sleep 0.1; i=$((i + 1))
  done
  for f in $PIDFILES; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; rm -f "$f"; done'

srv_stop() { srv "cd $(_q "$SRV_DIR") || exit 0; PIDFILES=$1.pid; $_srv_end" < /dev/null; }

srv_cleanup() {
  [ -n "$SRV_DIR" ] || return 0
  srv "cd $(_q "$SRV_DIR") 2>/dev/null || exit 0; PIDFILES=\$(ls *.pid 2>/dev/null); $_srv_end; cd / && rm -rf $(_q "$SRV_DIR")" < /dev/null
  SRV_DIR=''
}

# pt_far NAME ARGS...: one perftest run, e.g. pt_far ib_write_bw -s 65536 -n 2000, as
# guest-lib.sh's pt (its contract, retries and ports), with NAME's server on the server
# host through the prefix and its client here. Its server's output is fetched into
# $PT_DIR/pt-srv.log when the run fails.
pt_far() {
  local name=$1; shift
  local try rc=- clog=$PT_DIR/pt-cli.log slog=$PT_DIR/pt-srv.log
  for ((try = 1; try <= PT_TRIES; try++)); do
    pt_port
    : > "$slog"
    if ! srv_bg pt-srv $((PT_TIMEOUT + 10)) "$name" -d "$SRV_DEV" -i "${SRV_IB_PORT:-1}" -x "$SRV_GID" -p "$PT_PORT" "$@" ||
      ! srv_listening "$PT_PORT" 15 pt-srv; then
      srv_stop pt-srv
      rc=-
      echo "(the server did not listen on port $PT_PORT there: it ended, or 15 s passed)" > "$clog"
      srv "cat $(_q "$SRV_DIR/pt-srv.log")" < /dev/null > "$slog" 2>&1
      continue
    fi
    timeout "$PT_TIMEOUT" "$name" -d "$CLI_DEV" -i "${CLI_IB_PORT:-1}" -x "$CLI_GID" -p "$PT_PORT" "$@" "$SRV_IP" > "$clog" 2>&1
    rc=$?
    # The server ends with its client; one that does not within 15 s is ended.
    srv_wait pt-srv 15 || srv_stop pt-srv
    if [ "$rc" = 0 ] && ! grep -qE 'inf|Correlation' "$clog"; then return 0; fi
    srv "cat $(_q "$SRV_DIR/pt-srv.log")" < /dev/null > "$slog" 2>&1
  done
  {
    echo "perftest $name $* failed ($PT_TRIES tries; the last: client rc=$rc):"
    cat "$clog"
    [ -s "$slog" ] && { echo "server output:"; cat "$slog"; }
  } >&2
  return 1
}
