# attack: connect to the outside world (DNS and a public address)
# category: network
# expect: RE
# expect-message: forbidden system call
import socket


def double(x):
    try:
        socket.getaddrinfo("example.com", 80)
    except OSError:
        pass
    socket.create_connection(("1.1.1.1", 80), timeout=3)
    return (2 * x).reshape(-1)
