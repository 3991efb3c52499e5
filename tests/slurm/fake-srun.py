#!/usr/bin/env python3
"""A stand-in for `srun --mpi=pmi2 -n N prog args...` on one machine.

It starts N processes the way Slurm's pmi2 plugin does (an inherited,
connected socket in PMI_FD, PMI_RANK, PMI_SIZE, PMI_JOBID, SLURM_* variables,
SLURM_MPI_TYPE=pmi2) and serves the PMI-2 wire protocol only: after the
`cmd=init pmi_version=2` line every message is a 6-character length and
`cmd=..;key=value;` fields. Any PMI-1 command after init is a protocol error
that fails the job, so a client that does not speak PMI-2 cannot pass.

Exit status: the first nonzero exit status of a task, 1 on a protocol error,
or the exit code given to `abort`.
"""
import os, select, socket, subprocess, sys

def parse(body):
    fields, cur, i = {}, "", 0
    parts = []
    while i < len(body):
        c = body[i]
        if c == ";":
            if i + 1 < len(body) and body[i + 1] == ";":
                cur += ";"; i += 2; continue
            parts.append(cur); cur = ""
        else:
            cur += c
        i += 1
    if cur:
        parts.append(cur)
    for p in parts:
        k, _, v = p.partition("=")
        fields[k] = v
    return fields

def msg(cmd, **kv):
    body = "cmd=%s;" % cmd + "".join("%s=%s;" % (k, str(v).replace(";", ";;")) for k, v in kv.items())
    return ("%-6d" % len(body) + body).encode()

def main():
    args = sys.argv[1:]
    n = 1
    while args and args[0].startswith("-"):
        a = args.pop(0)
        if a in ("-n", "--ntasks"):
            n = int(args.pop(0))
        elif a.startswith("--mpi="):
            assert a == "--mpi=pmi2", a
    jobid = "fakeslurm.%d" % os.getpid()
    kvs, procs, conns, buf, state = {}, [], {}, {}, {}
    fenced, status = [], 0
    for r in range(n):
        parent, child = socket.socketpair()
        env = dict(os.environ, PMI_FD=str(child.fileno()), PMI_RANK=str(r), PMI_SIZE=str(n),
                   PMI_JOBID=jobid, SLURM_MPI_TYPE="pmi2", SLURM_PROCID=str(r), SLURM_NTASKS=str(n),
                   SLURM_LOCALID=str(r), SLURM_JOB_ID=str(os.getpid()), SLURM_STEP_ID="0")
        procs.append(subprocess.Popen(args, env=env, pass_fds=[child.fileno()]))
        child.close()
        conns[parent] = r
        buf[parent] = b""
        state[parent] = "init"
    def fail(why):
        sys.stderr.write("fake-srun: %s\n" % why)
        for p in procs:
            p.kill()
        sys.exit(1)
    while conns:
        ready, _, _ = select.select(list(conns), [], [], 1.0)
        for s in ready:
            data = s.recv(65536)
            if not data:
                del conns[s]
                continue
            buf[s] += data
            while True:
                b = buf[s]
                if state[s] == "init":
                    if b"\n" not in b:
                        break
                    line, _, buf[s] = b.partition(b"\n")
                    if line.strip() != b"cmd=init pmi_version=2 pmi_subversion=0":
                        fail("rank %d: expected the PMI-2 init line, got %r" % (conns[s], line))
                    s.sendall(b"cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n")
                    state[s] = "v2"
                    continue
                if len(b) < 6:
                    break
                try:
                    ln = int(b[:6].decode().strip())
                except ValueError:
                    fail("rank %d: not a PMI-2 message: %r" % (conns[s], b[:40]))
                if len(b) < 6 + ln:
                    break
                f = parse(b[6:6 + ln].decode())
                buf[s] = b[6 + ln:]
                r, cmd = conns[s], f.get("cmd")
                if cmd == "fullinit":
                    # Slurm answers rc=3 without pmijobid, pmirank or threaded.
                    if int(f.get("pmirank", -1)) != r or f.get("pmijobid") != jobid or "threaded" not in f:
                        fail("rank %d: bad fullinit %r" % (r, f))
                    s.sendall(msg("fullinit-response", **{"pmi-version": 2, "pmi-subversion": 0, "rank": r, "size": n, "appnum": 0, "spawner-jobid": "", "debugged": "FALSE", "pmiverbose": "FALSE", "rc": 0}))
                elif cmd == "job-getid":
                    s.sendall(msg("job-getid-response", jobid=jobid, rc=0))
                elif cmd == "kvs-put":
                    kvs[f["key"]] = f.get("value", "")
                    s.sendall(msg("kvs-put-response", rc=0))
                elif cmd == "kvs-get":
                    if f["key"] in kvs:
                        s.sendall(msg("kvs-get-response", found="TRUE", value=kvs[f["key"]], rc=0))
                    else:
                        s.sendall(msg("kvs-get-response", found="FALSE", rc=0))
                elif cmd == "info-getjobattr":
                    if f.get("key") == "PMI_process_mapping":
                        s.sendall(msg("info-getjobattr-response", found="TRUE", value="(vector,(0,1,%d))" % n, rc=0))
                    else:
                        s.sendall(msg("info-getjobattr-response", found="FALSE", rc=0))
                elif cmd == "kvs-fence":
                    fenced.append(s)
                    if len(fenced) == n:
                        for t in fenced:
                            t.sendall(msg("kvs-fence-response", rc=0))
                        fenced = []
                elif cmd == "finalize":
                    s.sendall(msg("finalize-response", rc=0))
                elif cmd == "abort" and f.get("isworld") != "TRUE":
                    fail("rank %d: abort without isworld=TRUE (Slurm ignores it): %r" % (r, f))
                elif cmd == "abort":
                    sys.stderr.write("fake-srun: rank %d aborted: %s\n" % (r, f.get("msg", "")))
                    for p in procs:
                        p.kill()
                    sys.exit(int(f.get("exitcode", 1)) or 1)
                else:
                    fail("rank %d: unknown PMI-2 command %r" % (r, cmd))
    for p in procs:
        rc = p.wait()
        if rc != 0 and status == 0:
            status = rc if rc > 0 else 128 - rc
    sys.exit(status)

main()
