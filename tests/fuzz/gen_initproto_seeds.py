#!/usr/bin/env python3
"""Writes the seed frames for fuzz_initproto into corpus/initproto/.
Run it again after changing the protocol; the outputs are committed."""
import os
import struct

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "initproto")


def field(tag, val):
    return struct.pack(">HI", tag, len(val)) + val


def frame(typ, fid, *fields, version=1):
    payload = b"".join(fields)
    return struct.pack(">BBHII", version, typ, 0, fid, len(payload)) + payload


u8 = lambda v: struct.pack(">B", v)
u16 = lambda v: struct.pack(">H", v)
u32 = lambda v: struct.pack(">I", v)

seeds = {
    "ping": frame(1, 1),
    "spawn": frame(2, 2, field(1, b"sh"), field(1, b"-c"), field(1, b"echo hi"),
                   field(2, b"A=b"), field(3, b"/tmp"), field(4, b"root"), field(8, b"tag"),
                   field(7, u8(1))),
    "spawn_pty": frame(2, 3, field(1, b"bash"), field(5, u16(24)), field(6, u16(80))),
    "attach_tag": frame(3, 4, field(8, b"job")),
    "stdin": frame(4, 5, field(9, u32(42)), field(10, b"data\x00\x01")),
    "signal": frame(6, 6, field(9, u32(42)), field(12, u32(15))),
    "resize": frame(7, 7, field(9, u32(42)), field(5, u16(40)), field(6, u16(120))),
    "list_dir": frame(21, 8, field(16, b"/home/user"), field(18, u32(2)), field(4, b"user")),
    "move": frame(23, 9, field(16, b"a"), field(17, b"../b")),
    "write_data": frame(27, 10, field(10, b"x" * 100)),
    "nested_entries": frame(72, 11, field(21, field(22, b"n") + field(19, struct.pack(">Q", 5))),
                            field(20, field(9, u32(1)) + field(1, b"ls"))),
    "bad_nul": frame(2, 12, field(1, b"l\x00s")),
    "bad_version": frame(1, 13, version=2),
}

for name, data in seeds.items():
    with open(os.path.join(HERE, name + ".bin"), "wb") as f:
        f.write(data)
