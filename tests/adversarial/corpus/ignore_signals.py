# attack: loop that ignores SIGTERM, SIGINT, SIGXCPU, SIGHUP and SIGALRM
# category: time
# expect: TLE
import signal

for s in (signal.SIGTERM, signal.SIGINT, signal.SIGXCPU, signal.SIGHUP, signal.SIGALRM,
          signal.SIGUSR1, signal.SIGPIPE):
    signal.signal(s, signal.SIG_IGN)


def double(x):
    while True:
        pass
