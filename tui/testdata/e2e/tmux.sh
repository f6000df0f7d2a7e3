#!/usr/bin/env bash
# End-to-end check of `stratum tui` in a real terminal (tmux, 80x24):
#  1. prepare a flow waiting at a gate with the CLI (plan + step-done);
#  2. start the console, approve the gate by keyboard (a, rationale, enter, a);
#  3. check the store with `stratum query flow` and `stratum audit`;
#  4. decide a second gate from another process (`stratum gate reject`) and
#     measure how long the console takes to drop it from the screen.
# Needs: $STRATUM (the binary), tmux. Uses its own $STRATUM_HOME and tmux socket.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
export STRATUM_HOME="$work/home" USER=e2e-reviewer NO_COLOR=1 TERM=xterm-256color
sock="$work/tmux.sock"
tm() { tmux -S "$sock" "$@"; }
cleanup() { tm kill-server 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
cd "$work"
cp "$here/flow.stratum.yaml" .

field() { sed -n "s/^  \"$1\": \"\(.*\)\",\{0,1\}$/\1/p"; }
gate() { # prepare a flow waiting at its gate; prints the flow id
  local fid
  fid=$("$STRATUM" plan flow.stratum.yaml --input name=world | field flow_id)
  "$STRATUM" step-done "$fid" build --result '{"ok": false}' >/dev/null
  "$STRATUM" step-done "$fid" build --result '{"ok": true}' >/dev/null
  echo "$fid"
}
screen() { tm capture-pane -p -t e2e; }
wait_for() { # wait_for REGEX [timeout-seconds]
  local deadline=$(( $(date +%s) + ${2:-10} ))
  until screen | grep -Eq "$1"; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "timed out waiting for /$1/; screen:"; screen; exit 1
    fi
    sleep 0.02
  done
}

fid=$(gate)
tm new-session -d -s e2e -x 80 -y 24 "'$STRATUM' tui --watch '$work'; sleep 30"
wait_for '1 waiting gate'
tm send-keys -t e2e 3
wait_for 'Gate review of main'
tm send-keys -t e2e a
wait_for 'Rationale \(optional\)'
tm send-keys -t e2e -l 'lgtm from tmux'
tm send-keys -t e2e Enter
wait_for 'Press a to record APPROVE as e2e-reviewer'
tm send-keys -t e2e a
wait_for '0 waiting gates'
"$STRATUM" query flow "$fid" | grep -q '"status": "complete"' || { echo "flow not complete"; "$STRATUM" query flow "$fid"; exit 1; }
audit=$("$STRATUM" audit "$fid")
for want in '"channel": "tui"' '"reviewer": "e2e-reviewer"' '"rationale": "lgtm from tmux"' '"outcome": "approve"'; do
  grep -qF "$want" <<<"$audit" || { echo "audit lacks $want"; echo "$audit"; exit 1; }
done
echo "approved by keyboard: ok"

# A gate opened and decided by other processes appears, then disappears.
fid2=$(gate)
wait_for '1 waiting gate'
start=$(date +%s%N)
"$STRATUM" gate reject "$fid2" review --note "from another shell" >/dev/null
decided=$(date +%s%N)
wait_for '0 waiting gates'
end=$(date +%s%N)
echo "decision in another process -> redraw: $(( (end - decided) / 1000000 )) ms (including the CLI: $(( (end - start) / 1000000 )) ms; screen polled every 20 ms)"
tm send-keys -t e2e q
echo "ok"
