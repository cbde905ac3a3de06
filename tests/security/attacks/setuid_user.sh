# ATTACK: become root as `user` through the setuid binaries of the host's
# /usr (su, mount, newgrp, passwd, chfn).               (run as user only)
# run.sh feeds this script to `bash -s` inside the sandbox.
#
# Why it must fail: /usr is mounted nosuid and every process has
# no_new_privs, so these binaries run with the caller's uid 1000 and no
# capabilities; su asks for a password it never gets (stdin is /dev/null)
# and cannot switch uid anyway. The one sudo is the template's
# /opt/hutch/bin/sudo, which is not setuid: it asks hutch-init to run the
# command as the sandbox's root, on purpose (E2B's passwordless sudo; see
# docs/security.md), and that root stays confined (tests/e2e/compat.test.mjs).
#
# Expected: every setuid command fails or reports uid 1000; no uid 0 anywhere;
# sudo is hutch's shim and carries no setuid bit.
ok() { echo "ok - [user] $*"; }
not_ok() { echo "not ok - [user] $*"; }
[ "$(id -u)" = 1000 ] && ok "running as uid 1000" || not_ok "not running as user: $(id)"
out=$(timeout 10 /usr/bin/su -c 'id -u' root </dev/null 2>&1); rc=$?
[ $rc -ne 0 ] && ! grep -qx 0 <<<"$out" && ok "su root fails (rc $rc)" || not_ok "su root: rc $rc: $out"
out=$(timeout 10 /usr/bin/su - root -c 'id -u' </dev/null 2>&1); rc=$?
[ $rc -ne 0 ] && ! grep -qx 0 <<<"$out" && ok "su - root fails (rc $rc)" || not_ok "su - root: rc $rc: $out"
sudo=$(command -v sudo)
[ "$sudo" = /opt/hutch/bin/sudo ] && [ ! -u "$sudo" ] && [ ! -g "$sudo" ] && ok "the only sudo is hutch's shim, not setuid" \
	|| not_ok "unexpected sudo: $sudo $(ls -l "$sudo" 2>&1)"
mkdir -p /tmp/m
out=$(timeout 10 /usr/bin/mount -t tmpfs none /tmp/m 2>&1); rc=$?
[ $rc -ne 0 ] && ok "setuid mount as user fails (rc $rc)" || not_ok "setuid mount as user: $out"
out=$(timeout 10 /usr/bin/newgrp root 2>&1 <<<'id -g'); rc=$?
! grep -qx 0 <<<"$out" && ok "newgrp root gives no gid 0 (rc $rc)" || not_ok "newgrp root: $out"
out=$(timeout 10 /usr/bin/chfn -f pwned user </dev/null 2>&1); rc=$?
[ $rc -ne 0 ] && ok "setuid chfn as user fails (rc $rc)" || not_ok "chfn succeeded: $out"
grep -q pwned /etc/passwd && not_ok "/etc/passwd was changed by chfn" || ok "/etc/passwd unchanged"
s=$(grep -E '^(Uid|Gid|CapEff|CapPrm|NoNewPrivs):' /proc/self/status | tr -s '\t ' ' ' | tr '\n' ' ')
[[ "$s" == *"Uid: 1000 1000 1000 1000"*"CapPrm: 0000000000000000"*"CapEff: 0000000000000000"*"NoNewPrivs: 1"* ]] \
	&& ok "still uid 1000 without capabilities" || not_ok "posture changed: $s"
echo "# end"
