#!/usr/bin/env python3
"""Builds the 2026-06-18 incident's recording for sglang-pd-wedge from the
incident fixtures (runbooks/testdata/incident-2026-06-18, copied from the
shared fixtures), so that `runbot test` replays the incident itself.

What the fixtures hold is used as it is: the two engines' logs (cut at the
moment each log step would have read them), the two /metrics snapshots,
the serve scripts. What they do not hold is stated in the recording's note:
the probes' observations (taken from the incident summary: /health 200, a
chat completion with 0 bytes until the 35 s client timeout), the unit
properties (systemd said both units were active), and that one /metrics
snapshot stands for every sample (decode logged no batch for 27 minutes,
so its counters could not move).

Usage: scripts/incident-recording.py OUTDIR
"""
import datetime as dt
import os
import shlex
import sys

SRC = os.path.join(os.path.dirname(__file__), "..", "runbooks", "testdata", "incident-2026-06-18")
OUT = sys.argv[1]
T0 = dt.datetime(2026, 6, 18, 21, 4, 23, tzinfo=dt.timezone.utc)


def ts(sec):
    t = T0 + dt.timedelta(seconds=sec)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def read(name):
    with open(os.path.join(SRC, name)) as f:
        return f.read()


def log_until(name, sec):
    """The log's lines up to T0+sec: what a read at that moment returned."""
    cut = (T0 + dt.timedelta(seconds=sec)).strftime("%Y-%m-%dT%H:%M:%S")
    return "".join(l for l in read(name).splitlines(True) if l[:19] <= cut)


def y(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


UNITS = {
    "router": ("sglang-dsv4-router", 47650, "2026-06-18T19:40:12Z"),
    "prefill": ("sglang-dsv4-prefill", 47911, "2026-06-18T19:40:31Z"),
    "decode": ("sglang-dsv4-decode", 48213, "2026-06-18T19:40:33Z"),
}
SCRIPTS = {"prefill": "/root/serve_dsv4_prefill.sh", "decode": "/root/serve_dsv4_decode.sh"}
LOGS = {"prefill": "/var/log/sglang/prefill.log", "decode": "/var/log/sglang/decode.log"}
PORTS = {"router": 30001, "prefill": 30100, "decode": 30200}
SCRIPT_MTIME = 1781547600  # 2026-06-15, days before the units started


def unit_yaml(role):
    unit, pid, since = UNITS[role]
    return (f"  - unit: {unit}\n    active_state: active\n    sub_state: running\n    load_state: loaded\n"
            f"    result: success\n    main_pid: {pid}\n    active_enter: {since}\n")


class Run:
    def __init__(self, step, check, role, started, duration):
        self.step, self.check, self.role = step, check, role
        self.started, self.duration = started, duration
        self.clock, self.commands, self.units, self.probes, self.scrapes = [], [], [], [], []
        self.files = {}

    def command(self, line, stdout, at):
        n = len(self.commands) + 1
        self.files[f"cmd-{n}.stdout"] = stdout
        self.commands.append(f"  - line: {y(line)}\n    started: {ts(at)}\n    duration: 20ms\n    exit: 0\n    stdout: cmd-{n}.stdout\n")

    def scrape(self, url, body, at):
        n = len(self.scrapes) + 1
        self.files[f"scrape-{n}.prom"] = body
        self.scrapes.append(f"  - url: {url}\n    time: {ts(at)}\n    body: scrape-{n}.prom\n")

    def save(self):
        d = os.path.join(OUT, self.step, self.role)
        s = (f"step: {self.step}\ncheck: {self.check}\ntarget: {self.role}\nhost: gpu-node-01\nstatus: ok\n"
             f"started: {ts(self.started)}\nduration: {self.duration}\n")
        if self.clock:
            s += "clock:\n" + "".join(f"  - {ts(c)}\n" for c in self.clock)
        for key, items in (("commands", self.commands), ("units", self.units), ("probes", self.probes), ("scrapes", self.scrapes)):
            if items:
                s += key + ":\n" + "".join(items)
        write(os.path.join(d, "observed.yaml"), s)
        for name, text in self.files.items():
            write(os.path.join(d, name), text)


def probe(step, start, status, total, phase, error, rid):
    r = Run(step, "http_probe", "router", start - 0.001, f"{total}s")
    r.clock = [start]
    outcome = "ok" if phase == "none" else "timeout"
    r.probes.append(
        f"  - url: http://127.0.0.1:30001{'/health' if step == 'health' else '/v1/chat/completions'}\n"
        f"    request_id: {rid}\n    started: {ts(start)}\n    outcome: {outcome}\n    status: {status}\n    bytes: 0\n"
        f"    connected: true\n    connect_time: 1ms\n    first_byte: {'3ms' if status else '0s'}\n    first_data: 0s\n"
        f"    total: {total}s\n    timed_out: {'false' if phase == 'none' else 'true'}\n    phase: {phase}\n"
        + (f"    error: {y(error)}\n" if error else ""))
    r.save()


probe("health", 0.001, 200, 0.003, "none", "", "rb-incident00000000000000health")
probe("chat", 0.002, 0, 35.0, "first_byte", "no first byte within 35s", "rb-incident0000000000000000chat")
probe("chat_next", 2.002, 0, 5.0, "first_byte", "no first byte within 5s", "rb-incident00000000000chatnext")

decode_prom, prefill_prom = read("metrics-decode-wedged.prom"), read("metrics-prefill-wedged.prom")
r = Run("decode_output", "metrics_sample", "decode", 0.003, "6.03s")
for i in range(4):
    r.clock.append(0.004 + 2.01 * i)
    r.scrape("http://127.0.0.1:30200/metrics", decode_prom, 0.004 + 2.01 * i)
r.save()
for role, body in (("prefill", prefill_prom), ("decode", decode_prom)):
    r = Run("counters", "metrics_sample", role, 0.003, "8.04s")
    for i in range(5):
        r.clock.append(0.005 + 2.01 * i)
        r.scrape(f"http://127.0.0.1:{PORTS[role]}/metrics", body, 0.005 + 2.01 * i)
    r.save()

# The early log reads start when chat_next gave up (+5 s), the late ones
# when chat did (+35 s) and its echo had a second to arrive.
for step, role, at, reads in (("decode_early", "decode", 7.01, 1), ("prefill_early", "prefill", 7.01, 1),
                               ("last_batch", "decode", 35.01, 2), ("prefill_log", "prefill", 35.01, 2)):
    r = Run(step, "log_progress", role, at, "1.02s" if reads == 2 else "25ms")
    now = at + (1.0 if reads == 2 else 0.0)
    r.clock = [at, now]
    r.command(f"tail -c 8388608 {LOGS[role]}", log_until(f"{role}-wedged.log", now), now)
    r.units.append(unit_yaml(role))
    r.save()

for role in ("prefill", "decode"):
    script = read(f"serve_dsv4_{role}.sh")
    r = Run("backend", "grep_config", role, 0.002, "30ms")
    r.command(f"cat -- {SCRIPTS[role]}", script, 0.003)
    r.save()
    r = Run("overlap", "flag", role, 0.002, "60ms")
    r.command(f"stat -c %Y -- {SCRIPTS[role]} && cat -- {SCRIPTS[role]}", f"{SCRIPT_MTIME}\n{script}", 0.003)
    r.units.append(unit_yaml(role))
    # The running process's argv: the script's exec line, as the kernel
    # keeps it (one argument per line after tr).
    joined = script.replace("\\\n", " ")
    exec_line = next(l for l in joined.splitlines() if l.strip().startswith("exec "))
    argv = shlex.split(exec_line.strip())[1:]
    r.command(f"tr '\\0' '\\n' < /proc/{UNITS[role][1]}/cmdline", "\n".join(argv) + "\n", 0.04)
    r.save()

for role in ("router", "prefill", "decode"):
    r = Run("units", "unit_state", role, 0.002, "40ms")
    r.clock = [0.04]
    r.units.append(unit_yaml(role))
    r.save()

targets = ""
for role in ("router", "prefill", "decode"):
    targets += (f"  - role: {role}\n    deployment: dsv4\n    host: gpu-node-01\n    unit: {UNITS[role][0]}\n"
                f"    url: http://127.0.0.1:{PORTS[role]}\n    metrics_url: http://127.0.0.1:{PORTS[role]}/metrics\n")
    if role in SCRIPTS:
        targets += f"    launch_script: {SCRIPTS[role]}\n    log_file: {LOGS[role]}\n"
    targets += "    service_manager: remote.Systemctl\n"

write(os.path.join(OUT, "recording.yaml"), f"""format: 1
runbook: sglang-pd-wedge
note: >-
  The 2026-06-18 incident, built by scripts/incident-recording.py from the incident fixtures
  (runbooks/testdata/incident-2026-06-18): the engines' logs as each log step would have read
  them at 21:04:24-21:04:59 UTC, the /metrics snapshots of 21:05:00 and the serve scripts are the
  fixtures' own. Not in the fixtures, and taken from the incident summary: the probes (/health 200;
  chat completions with 0 bytes until the client timed out), the units' properties (systemd said both
  were active), and that the one /metrics snapshot stands for every sample (decode logged no batch
  for 27 minutes, so its counters could not move).
run_id: incident-2026-06-18
params:
  deployment: dsv4
  model: deepseek-v4
  probe_timeout: 35s
  sample_interval: 2s
  samples: "5"
  slow_first_token: 5s
  stall_after: 60s
started: {ts(0)}
finished: {ts(36.1)}
verdict_at: {ts(36.1)}
targets:
{targets}""")
