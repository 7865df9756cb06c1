"""Rewrites fields of real trace files (include/rdzvscope/trace_format.h, little-endian) for
the CLI tests (tests/unit) and the cluster's clock check (tests/cluster): a run id, a host
name, a clock moved by N seconds, addresses of records.

Offsets of struct rdzv_file_header (4096 bytes) and struct rdzv_record (192 bytes, after the
header), checked against the static_asserts of trace_format.h: header size 4096, identity at
128 (192 bytes), host at 320.
"""
import glob
import os
import shutil
import struct

HEADER_SIZE = 4096
RECORD_SIZE = 192
OFF_PID = 28
OFF_START_REALTIME = 40
OFF_CLOCK_REALTIME = 48
OFF_NEXT_SLOT = 72
OFF_CAPACITY = 36
OFF_IDENT = 128
OFF_RANK = OFF_IDENT + 0
OFF_RUN_ID = OFF_IDENT + 32 + 64   # after 8 s32 and master_addr[64]
OFF_SLURM_JOB_ID = OFF_RUN_ID + 64
OFF_HOST = 320
MAGIC = b"RDZVTRC1"
# rdzv_record: kind u8 @0, ..., union @40; rdzv_ev_net: peer sockaddr @40, local @64;
# rdzv_sockaddr: family u16, port u16, scope u32, addr[16].
REC_PEER = 40
REC_LOCAL = 64
NET_KINDS = {8, 9, 10, 11, 12, 13, 14, 15, 16, 17}  # connect .. close (close has peer/local too)
AF_INET, AF_INET6 = 2, 10


def _put_str(buf, off, size, text):
    raw = text.encode()[: size - 1]
    buf[off:off + size] = raw + b"\0" * (size - len(raw))


def patch_header(path, run_id=None, slurm_job_id=None, host=None, shift_s=None, pid=None):
    with open(path, "r+b") as f:
        buf = bytearray(f.read(HEADER_SIZE))
        if run_id is not None:
            _put_str(buf, OFF_RUN_ID, 64, run_id)
        if slurm_job_id is not None:
            _put_str(buf, OFF_SLURM_JOB_ID, 32, slurm_job_id)
        if host is not None:
            _put_str(buf, OFF_HOST, 64, host)
        if pid is not None:
            struct.pack_into("<i", buf, OFF_PID, pid)
        if shift_s is not None:
            d = int(shift_s * 1e9)
            for off in (OFF_START_REALTIME, OFF_CLOCK_REALTIME):
                (v,) = struct.unpack_from("<Q", buf, off)
                struct.pack_into("<Q", buf, off, v + d)
        f.seek(0)
        f.write(buf)


def header_field(path, off, fmt):
    with open(path, "rb") as f:
        return struct.unpack_from(fmt, f.read(HEADER_SIZE), off)[0]


def rank_of(path):
    return header_field(path, OFF_RANK, "<i")


def ipv4_of(sa, off):
    fam = struct.unpack_from("<H", sa, off)[0]
    a = bytes(sa[off + 8: off + 24])
    if fam == AF_INET:
        return a[:4]
    if fam == AF_INET6 and a[:12] == b"\0" * 10 + b"\xff\xff":
        return a[12:16]
    return None


def set_ipv4(sa, off, ip):
    fam = struct.unpack_from("<H", sa, off)[0]
    if fam == AF_INET:
        sa[off + 8: off + 12] = ip
    else:
        sa[off + 20: off + 24] = ip


def rewrite_addresses(path, fn):
    """Calls fn(which, ip4_bytes, port, rec_kind) for the peer and local address of every
    network record ('peer' / 'local'); a returned 4-byte address replaces it."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        (cap,) = struct.unpack_from("<I", data, OFF_CAPACITY)
        n = min(cap, (len(data) - HEADER_SIZE) // RECORD_SIZE)
        for slot in range(n):
            base = HEADER_SIZE + slot * RECORD_SIZE
            kind = data[base]
            if kind not in NET_KINDS:
                continue
            for which, off in (("peer", REC_PEER), ("local", REC_LOCAL)):
                ip = ipv4_of(data, base + off)
                if ip is None:
                    continue
                port = struct.unpack_from("<H", data, base + off + 2)[0]
                new = fn(which, ip, port, kind)
                if new is not None:
                    set_ipv4(data, base + off, new)
        f.seek(0)
        f.write(data)


def copy_scenario(golden_dir, dest, traces=True, logs=True):
    """Copies a stored scenario's traces/ and logs/ into dest (created)."""
    os.makedirs(dest, exist_ok=True)
    if traces:
        shutil.copytree(os.path.join(golden_dir, "traces"), os.path.join(dest, "traces"))
    if logs and os.path.isdir(os.path.join(golden_dir, "logs")):
        shutil.copytree(os.path.join(golden_dir, "logs"), os.path.join(dest, "logs"))
    return sorted(glob.glob(os.path.join(dest, "traces", "*.rzt")))
