# attack: lone surrogates and NUL characters in the traceback, stdout and stderr (unstorable, unservable text)
# category: channel
# expect: RE
import sys


def double(x):
    sys.stdout.write("nul:\x00 surrogate-escape\n")
    sys.stdout.buffer.write(b"\xed\xa0\x80 raw surrogate bytes\n")
    sys.stderr.write("\x00\x00\x00\n")
    raise ValueError("\udc80 lone \ud800 surrogates and NUL \x00")
