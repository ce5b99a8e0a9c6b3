# attack: raw devices and kernel interfaces: /dev/mem, /dev/kmsg, /proc/kcore, /proc/kallsyms, /dev/tty ioctl
# category: isolation
# expect: AC
import os


def double(x):
    out = {}
    for p in ("/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg", "/proc/kcore", "/proc/kallsyms",
              "/dev/tty", "/dev/console", "/dev/vda", "/dev/sda"):
        try:
            fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
            out[p] = len(os.read(fd, 64))
            os.close(fd)
        except OSError as e:
            out[p] = e.strerror
    out["/dev"] = os.listdir("/dev")
    print(out)
    return (2 * x).reshape(-1)
