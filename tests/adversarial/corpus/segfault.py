# attack: segmentation fault through ctypes
# category: crash
# expect: RE
import ctypes


def double(x):
    ctypes.string_at(0)
