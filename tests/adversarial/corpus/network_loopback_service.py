# attack: loopback connection to the judge's own HTTP port and to a host listener
# category: network
# expect: RE
# expect-message: forbidden system call
import socket


def double(x):
    for port in (int("__TJ_SERVICE_PORT__"), int("__TJ_LISTENER_PORT__")):
        s = socket.create_connection(("127.0.0.1", port), timeout=3)
        s.sendall(b"GET /api/v1/problems HTTP/1.0\r\n\r\n")
        print(s.recv(65536))
    return (2 * x).reshape(-1)
