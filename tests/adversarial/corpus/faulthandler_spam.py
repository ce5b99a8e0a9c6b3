# attack: faulthandler dumping every thread's traceback to stderr every millisecond
# category: output
# expect: OLE|TLE
import faulthandler
import sys
import time

faulthandler.dump_traceback_later(0.001, repeat=True, file=sys.stderr)


def double(x):
    time.sleep(3600)
