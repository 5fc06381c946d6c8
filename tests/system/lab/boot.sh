#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Boots systemd as PID 1 of "the lab": a private PID, mount, UTS and (when given a cgroup)
# cgroup namespace on the host's own root file system, made read-only. (systemd sets the host
# name from /etc/hostname at boot: the UTS namespace keeps that to the lab.) Run it as
#
#   setsid unshare --pid --fork --kill-child=SIGKILL --mount --uts --mount-proc boot.sh [UNIT_DIR]
#
# The mount namespace is a copy of the host's, on the same file systems: whatever systemd,
# a unit or a generator writes lands on the host unless it lands on a mount made here. So
# the root (and /proc/sys, /sys) are read-only binds, every directory that boot services
# write to is a private tmpfs, /dev is a private tmpfs with a handful of nodes, and every unit
# that acts on the kernel or the host's files is masked. The boot target is lab.target, which
# needs only D-Bus and the journal. Above all systemd-tmpfiles-setup.service must never run:
# with --remove --boot, tmpfiles.d/tmp.conf's "D /tmp" line empties /tmp.
#
# UNIT_DIR, if given, holds unit files (and NAME.d/ drop-in directories) copied into the
# lab's /run/systemd/system before systemd starts.
#
# Environment:
#   MCASTD_LAB_CGROUP  a cgroup v2 directory, made by the caller, to run the lab in. Inside a
#                      cgroup namespace rooted there, /sys/fs/cgroup becomes a cgroup2 mount of
#                      that directory alone, so the lab's systemd sees (and cleans up) only its
#                      own tree and several labs never share a unit's cgroup. Without it
#                      the lab's systemd builds its tree in the caller's own cgroups, in every
#                      hierarchy it finds mounted (on a hybrid host: the v1 controllers too),
#                      and leaves it behind: for a look by hand only.
#   MCASTD_LAB_ROOT    how the root is made: "ro" (default) is the host's / read-only;
#                      "overlay" is an overlayfs with the host's root file system as its lower
#                      layer and a tmpfs as its upper one, pivot_root(8)ed into, so that a test
#                      can install a package (dpkg -i writes /usr, /etc, /var/lib/dpkg) and
#                      every write dies with the lab. Only the root file system is in it; the
#                      lab's private mounts (below) and MCASTD_LAB_KEEP cover the rest.
#   MCASTD_LAB_KEEP    directories (colon-separated) under the host's /tmp, /run or /var/tmp
#                      that the lab must still see, read-only: a build tree in a clone under
#                      /tmp (CI's), whose units and binaries the lab's services run. Opened
#                      before the private tmpfs hides them, bound back over it after.
#   NOTIFY_SOCKET      passed on to systemd, which says READY=1 there when the boot is done
#                      (sd_notify(3); an abstract "@name" socket reaches the host, since the
#                      network namespace is shared).
#
# Read-only mounts use MS_BIND|MS_REMOUNT ("remount,bind,ro"; mount(2)): that changes the
# flags of this namespace's copy of the mount, whereas a plain "remount,ro" would change the
# file system's super block, which the host shares.
set -eu

say() { echo "mcastd-lab: $*"; }
die() { echo "mcastd-lab: $*" >&2; exit 1; }

[ "$$" = 1 ] || die "must run as PID 1 of a new PID namespace (unshare --pid --fork)"
unit_dir=${1:-}

# Stage 1: enter the cgroup the caller made, then a cgroup namespace rooted there. unshare
# without --fork exec()s in place, so this process stays PID 1.
if [ -n "${MCASTD_LAB_CGROUP:-}" ] && [ -z "${MCASTD_LAB_IN_CGROUP_NS:-}" ]; then
    echo 0 > "$MCASTD_LAB_CGROUP/cgroup.procs"
    export MCASTD_LAB_IN_CGROUP_NS=1
    exec unshare --cgroup "$0" "$@"
fi

# Nothing mounted from here on may propagate back to the host.
mount --make-rprivate /

# The kept directories, opened while their host paths still lead to them (an overlay root, or
# the private tmpfs mounts below, hides them).
keep_dirs=()
keep_fds=()
if [ -n "${MCASTD_LAB_KEEP:-}" ]; then
    IFS=: read -ra keep_dirs <<< "$MCASTD_LAB_KEEP"
    for i in "${!keep_dirs[@]}"; do
        [ -d "${keep_dirs[$i]}" ] || die "MCASTD_LAB_KEEP: ${keep_dirs[$i]} is not a directory"
        exec {fd}<"${keep_dirs[$i]}"
        keep_fds[$i]=$fd
    done
fi

root_type=overlay
case "${MCASTD_LAB_ROOT:-ro}" in
ro)
    # The root mount itself, in place. Not "mount --bind / /" first: that stacks a second,
    # writable mount of the host's root on top of the first, and the remount only reaches the
    # one underneath (a path walk starts at the root, it does not step into what is mounted
    # on it). Everything mounted later lands underneath too, but systemd builds each
    # service's mount namespace from an rbind of "/", and a walk into that copy does step
    # into the top mount: such a service would see the host's root, writable, without the
    # lab's /tmp and /run.
    mount -o remount,bind,ro /
    root_type=ro
    ;;
overlay)
    # Staged on a tmpfs mounted over /mnt: in this namespace only, and gone with it. The upper
    # layer must not be on the root file system (overlayfs(5): upper and lower may not overlap).
    stage=/mnt
    mount -t tmpfs -o mode=0700 tmpfs "$stage"
    mkdir "$stage/upper" "$stage/work" "$stage/root"
    mount -t overlay -o "lowerdir=/,upperdir=$stage/upper,workdir=$stage/work" overlay "$stage/root"
    mount -t proc -o nosuid,nodev,noexec proc "$stage/root/proc"
    mount --rbind /sys "$stage/root/sys"
    cd "$stage/root"
    mkdir .lab-old-root
    pivot_root . .lab-old-root
    cd /
    # The host's mounts stay reachable under /.lab-old-root until the kept directories are
    # bound back below (a bind needs its source attached), then go.
    ;;
*) die "MCASTD_LAB_ROOT=${MCASTD_LAB_ROOT}: not 'ro' or 'overlay'" ;;
esac
if [ "$root_type" = ro ]; then
    # A write test, so that a root that is somehow still writable stops the boot here.
    if touch /.mcastd-lab-rw-probe 2>/dev/null; then
        rm -f /.mcastd-lab-rw-probe
        die "the lab's / is writable; refusing to boot"
    fi
else
    # The root is writable by design: it must be the overlay, nothing else.
    fstype=$(awk '$5 == "/" { for (i = 7; i < NF; i++) if ($i == "-") { print $(i + 1); exit } }' /proc/self/mountinfo)
    [ "$fstype" = overlay ] || die "the lab's / is $fstype, not the overlay; refusing to boot"
fi
# No second mount on "/" (see above).
[ "$(awk '$5 == "/"' /proc/self/mountinfo | wc -l)" = 1 ] || die "more than one mount on /; refusing to boot"

# Kernel knobs are global, not namespaced: systemd raises fs.nr_open and fs.file-max at boot.
mount --bind /proc/sys /proc/sys
mount -o remount,bind,ro /proc/sys
if [ -e /proc/sysrq-trigger ]; then
    mount --bind /proc/sysrq-trigger /proc/sysrq-trigger
    mount -o remount,bind,ro /proc/sysrq-trigger
fi
mount -o remount,bind,ro /sys

if [ -n "${MCASTD_LAB_IN_CGROUP_NS:-}" ]; then
    # Over the host's hierarchy (hidden, not changed): only this namespace's subtree.
    mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 /sys/fs/cgroup
fi

for d in /tmp /run /var/tmp /var/log /var/lib/systemd /var/cache; do
    mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$d"
done
chmod 1777 /tmp /var/tmp
for i in "${!keep_dirs[@]}"; do
    d=${keep_dirs[$i]}
    if [ ! -d "$d" ]; then # hidden by a tmpfs above: bind it back, read-only
        mkdir -p "$d"
        # -c: no realpath() of the source, which would name the hidden directory by its path
        mount -c --bind "/proc/self/fd/${keep_fds[$i]}" "$d"
        mount -o remount,bind,ro "$d"
    fi
    eval "exec ${keep_fds[$i]}<&-"
done
if [ "$root_type" = overlay ]; then
    umount -l /.lab-old-root # the overlay keeps its layers alive
    rmdir /.lab-old-root
fi

# A private /dev: the host's devtmpfs is shared, and units create symlinks there
# (systemd-journald-dev-log.socket makes /dev/log).
mount -t tmpfs -o mode=0755,nosuid,size=4m tmpfs /dev
mknod -m 666 /dev/null c 1 3
mknod -m 666 /dev/zero c 1 5
mknod -m 666 /dev/full c 1 7
mknod -m 666 /dev/random c 1 8
mknod -m 666 /dev/urandom c 1 9
mknod -m 666 /dev/tty c 5 0
mkdir -m 0755 /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,nosuid,noexec devpts /dev/pts
ln -s pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm

# Masks go to system.control, the unit directory that outranks /etc/systemd/system and the
# generators' output (systemd.unit(5), "Unit File Load Path").
masks=(
    # sysinit.target and what it pulls in: kernel, devices, /etc, the clock, disks.
    systemd-tmpfiles-setup.service systemd-tmpfiles-setup-dev.service
    systemd-tmpfiles-clean.timer systemd-tmpfiles-clean.service
    systemd-sysctl.service systemd-modules-load.service kmod-static-nodes.service
    modprobe@.service
    systemd-udevd.service systemd-udev-trigger.service systemd-udev-settle.service
    systemd-udevd-control.socket systemd-udevd-kernel.socket
    systemd-hwdb-update.service systemd-random-seed.service systemd-binfmt.service
    proc-sys-fs-binfmt_misc.automount proc-sys-fs-binfmt_misc.mount
    systemd-firstboot.service systemd-sysusers.service systemd-machine-id-commit.service
    systemd-remount-fs.service systemd-pstore.service systemd-journal-flush.service
    systemd-update-utmp.service systemd-update-utmp-runlevel.service
    systemd-timesyncd.service systemd-time-wait-sync.service
    # systemd-repart.service pulls in modprobe@loop and modprobe@dm_mod even when its own
    # condition fails; with kmod installed they would load modules into the host's kernel.
    systemd-repart.service systemd-pcrphase.service systemd-pcrphase-sysinit.service
    systemd-sysext.service systemd-network-generator.service systemd-boot-system-token.service
    systemd-ask-password-console.path systemd-ask-password-wall.path
    ldconfig.service systemd-update-done.service systemd-journal-catalog-update.service
    sys-kernel-config.mount sys-kernel-debug.mount sys-kernel-tracing.mount
    sys-fs-fuse-connections.mount dev-hugepages.mount dev-mqueue.mount
    local-fs.target swap.target cryptsetup.target integritysetup.target veritysetup.target
    # Logins, consoles and the network.
    getty.target console-getty.service serial-getty@.service getty@.service
    systemd-logind.service systemd-networkd.service systemd-resolved.service
    cron.service ssh.service debug-shell.service
)
mkdir -p /run/systemd/system.control /run/systemd/system
for u in "${masks[@]}"; do
    ln -sf /dev/null "/run/systemd/system.control/$u"
done

cat > /run/systemd/system/lab.target <<'T'
[Unit]
Description=mcastd lab
Requires=dbus.socket systemd-journald.socket
After=dbus.socket systemd-journald.socket
AllowIsolate=yes
T

if [ -n "$unit_dir" ]; then
    [ -d "$unit_dir" ] || die "unit directory $unit_dir does not exist"
    cp -r "$unit_dir"/. /run/systemd/system/
fi

say "exec systemd"
# container= tells systemd that it is not the machine's init, so it leaves the kernel alone
# (modules, console; systemd-detect-virt(1) then says "container-other"). Its log goes to the
# lab's journal: `journalctl -b` in the lab.
exec env container=mcastd-lab /usr/lib/systemd/systemd --system --unit=lab.target --log-target=journal --show-status=no
