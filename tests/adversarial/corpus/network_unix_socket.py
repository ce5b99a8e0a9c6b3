# attack: PostgreSQL's unix socket and an abstract unix socket
# category: network
# expect: RE
# expect-message: forbidden system call
import socket


def double(x):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    for addr in ("/run/postgresql/.s.PGSQL.5432", "/var/run/postgresql/.s.PGSQL.5432",
                 "\0/tmp/.X11-unix/X0"):
        try:
            s.connect(addr)
        except OSError:
            pass
    return (2 * x).reshape(-1)
