#!/usr/bin/env python3
"""A minimal PMI client used as the rank program of the launcher's tests.

Usage: pmi_rank.py MODE [ARGS]
  kvs            init, put own value, barrier, get everybody's, finalize
  pipeline       like kvs, but several commands per write and lines split
                 across writes
  abort R CODE   rank R sends `abort exitcode=CODE`; the others sleep
  names          publish/lookup/unpublish a name (rank 0 publishes)
  pmi2           the same exchange as kvs over the PMI-2 wire protocol
  shm            put a file /dev/shm/mpicore-<kvsname>-<rank>, then finalize
  info           print appnum, universe size and the process mapping
"""
import os
import socket
import sys
import time

rank = int(os.environ["PMI_RANK"])
size = int(os.environ["PMI_SIZE"])
sock = socket.socket(fileno=int(os.environ["PMI_FD"]))
buf = b""


def send(text):
    sock.sendall(text.encode())


def read_line():
    global buf
    while b"\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            raise SystemExit("rank %d: PMI connection closed" % rank)
        buf += chunk
    line, buf = buf.split(b"\n", 1)
    return line.decode()


def parse(line):
    fields = dict(w.split("=", 1) for w in line.split(" ") if "=" in w)
    return fields


def call(text):
    send(text + "\n")
    return parse(read_line())


def expect(fields, cmd, **want):
    assert fields.get("cmd") == cmd, (cmd, fields)
    for k, v in want.items():
        assert fields.get(k) == v, (k, v, fields)
    return fields


def init():
    expect(call("cmd=init pmi_version=1 pmi_subversion=1"), "response_to_init", rc="0", pmi_version="1")
    expect(call("cmd=get_maxes"), "maxes", kvsname_max="256", keylen_max="64", vallen_max="1024")
    return expect(call("cmd=get_my_kvsname"), "my_kvsname")["kvsname"]


def gather(kvs):
    expect(call("cmd=put kvsname=%s key=key-%d value=val-%d-%d" % (kvs, rank, rank, rank * rank)), "put_result", rc="0")
    expect(call("cmd=barrier_in"), "barrier_out")
    seen = []
    for r in range(size):
        got = expect(call("cmd=get kvsname=%s key=key-%d" % (kvs, r)), "get_result", rc="0")
        seen.append(got["value"])
    missing = call("cmd=get kvsname=%s key=no-such-key" % kvs)
    expect(missing, "get_result", rc="-1", msg="key_not_found")
    return seen


def finalize():
    expect(call("cmd=barrier_in"), "barrier_out")
    expect(call("cmd=finalize"), "finalize_ack")


def mode_kvs():
    kvs = init()
    seen = gather(kvs)
    print("rank %d saw %s" % (rank, ",".join(seen)), flush=True)
    finalize()


def mode_pipeline():
    # Four requests in one write, then the answers.
    send("cmd=init pmi_version=1 pmi_subversion=1\ncmd=get_maxes\ncmd=get_appnum\ncmd=get_my_kvsname\n")
    expect(parse(read_line()), "response_to_init", rc="0")
    expect(parse(read_line()), "maxes")
    expect(parse(read_line()), "appnum", appnum="0")
    kvs = expect(parse(read_line()), "my_kvsname")["kvsname"]
    # A put split in the middle of a word, sent with the barrier and the gets
    # that must only be answered after everybody put.
    first = "cmd=put kvsname=%s key=key-%d va" % (kvs, rank)
    send(first)
    time.sleep(0.05)
    rest = "lue=val-%d\ncmd=barrier_in\n" % rank
    rest += "".join("cmd=get kvsname=%s key=key-%d\n" % (kvs, r) for r in range(size))
    send(rest)
    expect(parse(read_line()), "put_result", rc="0")
    expect(parse(read_line()), "barrier_out")
    seen = [expect(parse(read_line()), "get_result", rc="0")["value"] for _ in range(size)]
    print("rank %d saw %s" % (rank, ",".join(seen)), flush=True)
    send("cmd=finalize\n")
    expect(parse(read_line()), "finalize_ack")


def mode_abort(who, code):
    init()
    if rank == who:
        send("cmd=abort exitcode=%d\n" % code)
        time.sleep(30)
    else:
        print("rank %d sleeping pid %d" % (rank, os.getpid()), flush=True)
        time.sleep(30)


def mode_names():
    init()
    if rank == 0:
        expect(call("cmd=publish_name service=ocean port=tcp://h:42"), "publish_result", rc="0")
        expect(call("cmd=publish_name service=ocean port=tcp://h:43"), "publish_result", rc="-1")
    expect(call("cmd=barrier_in"), "barrier_out")
    got = expect(call("cmd=lookup_name service=ocean"), "lookup_result", rc="0")
    print("rank %d found %s" % (rank, got["port"]), flush=True)
    expect(call("cmd=barrier_in"), "barrier_out")
    if rank == 0:
        expect(call("cmd=unpublish_name service=ocean"), "unpublish_result", rc="0")
    expect(call("cmd=barrier_in"), "barrier_out")
    expect(call("cmd=lookup_name service=ocean"), "lookup_result", rc="-1")
    expect(call("cmd=finalize"), "finalize_ack")


def v2_call(body):
    global buf
    sock.sendall(("%-6d%s" % (len(body), body)).encode())
    while len(buf) < 6:
        buf += sock.recv(4096)
    n = int(buf[:6].decode().strip())
    while len(buf) < 6 + n:
        buf += sock.recv(4096)
    msg, buf = buf[6:6 + n].decode(), buf[6 + n:]
    return dict(f.split("=", 1) for f in msg.split(";") if "=" in f)


def mode_pmi2():
    expect(call("cmd=init pmi_version=2 pmi_subversion=0"), "response_to_init", rc="0", pmi_version="2")
    got = v2_call("cmd=fullinit;pmirank=%d;threaded=FALSE;" % rank)
    assert got["cmd"] == "fullinit-response" and got["rc"] == "0", got
    assert got["rank"] == str(rank) and got["size"] == str(size), got
    jobid = v2_call("cmd=job-getid;")["jobid"]
    assert v2_call("cmd=kvs-put;key=k%d;value=v%d;" % (rank, rank))["rc"] == "0"
    assert v2_call("cmd=kvs-fence;")["cmd"] == "kvs-fence-response"
    seen = []
    for r in range(size):
        got = v2_call("cmd=kvs-get;jobid=%s;srcid=-1;key=k%d;" % (jobid, r))
        assert got["found"] == "TRUE", got
        seen.append(got["value"])
    mapping = v2_call("cmd=info-getjobattr;key=PMI_process_mapping;")
    assert mapping["value"] == "(vector,(0,1,%d))" % size, mapping
    assert v2_call("cmd=finalize;")["rc"] == "0"
    print("rank %d pmi2 saw %s" % (rank, ",".join(seen)), flush=True)


def mode_shm():
    kvs = init()
    path = "/dev/shm/mpicore-%s-%d" % (kvs, rank)
    with open(path, "w") as f:
        f.write("segment")
    print("rank %d made %s" % (rank, path), flush=True)
    finalize()


def mode_info():
    init()
    app = expect(call("cmd=get_appnum"), "appnum")["appnum"]
    uni = expect(call("cmd=get_universe_size"), "universe_size")["size"]
    kvs = expect(call("cmd=get_my_kvsname"), "my_kvsname")["kvsname"]
    mapping = expect(call("cmd=get kvsname=%s key=PMI_process_mapping" % kvs), "get_result", rc="0")["value"]
    print("rank %d appnum %s universe %s mapping %s" % (rank, app, uni, mapping), flush=True)
    finalize()


def main():
    mode = sys.argv[1]
    if mode == "abort":
        mode_abort(int(sys.argv[2]), int(sys.argv[3]))
    else:
        globals()["mode_" + mode]()


main()
