# attack: loopback connection to PostgreSQL's port
# category: network
# expect: RE
# expect-message: forbidden system call
import socket


def double(x):
    s = socket.create_connection(("127.0.0.1", int("__TJ_PG_PORT__")), timeout=3)
    print(s.recv(100))
    return (2 * x).reshape(-1)
