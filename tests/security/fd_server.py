# Host side of attacks/host_fd.py: listens on a unix socket (argv[1]) in a
# volume and hands every client four fds: a directory fd of argv[2] (the
# host directory holding the secret), an O_PATH fd of argv[2]/vol-secret,
# a directory fd of the host's /etc, and one of argv[2]/open, a directory
# anyone may write to (so that only Landlock stands in the way of a create),
# holding a readable host-file.
# Runs until killed.
import os
import socket
import sys

path, hostdir = sys.argv[1], sys.argv[2]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
os.chmod(path, 0o777)
srv.listen(4)
os.makedirs(f"{hostdir}/open", exist_ok=True)
os.chmod(f"{hostdir}/open", 0o1777)
with open(f"{hostdir}/open/host-file", "w") as f:
    f.write("HOST FILE\n")
fds = [os.open(hostdir, os.O_RDONLY | os.O_DIRECTORY), os.open(f"{hostdir}/vol-secret", os.O_PATH),
       os.open("/etc", os.O_RDONLY | os.O_DIRECTORY), os.open(f"{hostdir}/open", os.O_RDONLY | os.O_DIRECTORY)]
while True:
    c, _ = srv.accept()
    socket.send_fds(c, [b"fds"], fds)
    c.close()
