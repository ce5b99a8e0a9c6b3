# attack: execve /bin/sh to leave Python behind
# category: kernel
# expect: RE
# expect-message: forbidden system call
import os


def double(x):
    os.execv("/bin/sh", ["sh", "-c", "echo escaped > /tmp/tj-plant-exec"])
