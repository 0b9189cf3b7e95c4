# image.sh — the recipe of the test hosts' root file system. Sourced by up.sh.
# shellcheck shell=bash disable=SC2034 # the variables are used by up.sh
#
# The image is cached under $CACHE/image-<key>, where the key is a hash of this
# file (without comment lines) and the Debian suite: change anything else here
# and the next up.sh builds a new image (1-4 min). Nothing of the simulated deployment lives in the image:
# sglang-sim, the launch scripts, the units and the host keys are mounted at boot
# by up.sh (see host/), so changing them never needs a rebuild.

IMAGE_SUITE=${RUNBOT_TESTHOST_SUITE:-bookworm}
# postgresql-15: the replica tests run a PostgreSQL primary and its streaming
# standby on test hosts of their own; on every other host it stays off.
IMAGE_PKGS=systemd,systemd-sysv,dbus,openssh-server,curl,iproute2,procps,sudo,postgresql-15

# customize_image ROOT turns a debootstrapped minbase tree into the host image.
customize_image() {
    local r=$1 u
    rm -f "$r/etc/hostname"                                 # nspawn --hostname sets it
    printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' > "$r/etc/hosts"
    echo LANG=C.UTF-8 > "$r/etc/default/locale"

    # Quiet, deterministic boots: no periodic jobs, no first-boot questions, no
    # getty on the console, and a machine-id that is mounted, not committed.
    for u in apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer \
             fstrim.timer e2scrub_reap.service systemd-firstboot.service \
             systemd-machine-id-commit.service console-getty.service; do
        ln -sf /dev/null "$r/etc/systemd/system/$u"
    done

    # Logins: root and the unprivileged "runbot" (reads the journal, sudo without
    # a password) both take the key up.sh mounts as authorized_keys.
    install -d -m 700 "$r/root/.ssh"
    chroot "$r" useradd -m -u 1000 -s /bin/bash -G systemd-journal,adm runbot
    install -d -m 700 -o 1000 -g 1000 "$r/home/runbot/.ssh"
    echo 'runbot ALL=(ALL) NOPASSWD: ALL' > "$r/etc/sudoers.d/runbot"
    chmod 440 "$r/etc/sudoers.d/runbot"

    # Every host gets its own host key (mounted by up.sh at /etc/ssh/testhost), so
    # the image carries none: pinning a host's key means something.
    rm -f "$r"/etc/ssh/ssh_host_*
    cat > "$r/etc/ssh/sshd_config.d/runbot-testhost.conf" <<'EOF'
# runbot test host: key logins only, the host key up.sh mounts, no DNS lookups,
# port forwarding for runbot's tunnels, room for bursts of connections.
HostKey /etc/ssh/testhost/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
AllowTcpForwarding yes
MaxStartups 200:30:400
MaxSessions 100
EOF
    # PostgreSQL starts only where a test starts it (systemctl start
    # postgresql@15-main): most hosts are targets or replicas, not databases.
    rm -f "$r/etc/systemd/system/multi-user.target.wants/postgresql.service"

    rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/lib/apt/lists/*
}
